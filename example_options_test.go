package cryptopay_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// Per-call options change one call, never the Client.
func ExampleWithHeader() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()

	ctx := context.Background()
	balances, err := client.GetBalances(ctx,
		cryptopay.WithHeader("X-Trace-Id", "checkout-42"), // for the API's own logs
		cryptopay.WithTimeout(5*time.Second),              // each attempt of this call
	)
	fmt.Println(len(balances) > 0, err)

	// The headers the SDK relies on cannot be changed per call.
	_, err = client.GetBalances(ctx, cryptopay.WithHeader("Idempotency-Key", "k1"))
	fmt.Println(errors.Is(err, cryptopay.ErrInvalidParams))
	// Output:
	// true <nil>
	// true
}

// The request id and headers of a call, on success as on error.
func ExampleWithResponseInto() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()

	var resp cryptopay.Response
	_, err := srv.Client().ListCurrencies(context.Background(), cryptopay.WithResponseInto(&resp))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Attempts, strings.HasPrefix(resp.RequestID, "req_"))
	// Output: 200 1 true
}

// Reads can be retried harder (or not at all) for one call; a create
// request is still never resent once it may have reached the server.
func ExampleWithRetryPolicy() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 503})

	var resp cryptopay.Response
	_, err := srv.Client().GetBalances(context.Background(),
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}), // no retries for this call
		cryptopay.WithResponseInto(&resp))
	fmt.Println(errors.Is(err, cryptopay.ErrServer), resp.Attempts)
	// Output: true 1
}

// An Observer sees every call and attempt by route template, for metrics
// and tracing (otelcryptopay builds OpenTelemetry on it). It never sees the
// key, an id or a query.
func ExampleWithObserver() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	var retries atomic.Int64
	obs := cryptopay.Observer{
		OnAttemptEnd: func(_ context.Context, call cryptopay.CallInfo, r cryptopay.AttemptResult) {
			if r.Retry {
				retries.Add(1)
			}
		},
		OnCallEnd: func(_ context.Context, call cryptopay.CallInfo, r cryptopay.CallResult) {
			fmt.Println(call.Route, r.StatusCode, r.Attempts, r.OutcomeUnknown)
		},
	}
	client := srv.Client(cryptopay.WithObserver(obs))
	srv.InjectFault(cryptopaytest.RouteGetPayout, cryptopaytest.Fault{Status: 502})

	ctx := context.Background()
	p, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: decimal.RequireFromString("12.5"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "wd-1001",
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.GetPayout(ctx, p.ID); err != nil {
		log.Fatal(err)
	}
	fmt.Println("retries:", retries.Load())
	// Output:
	// POST /v1/payout 200 1 false
	// GET /v1/payout/{id}/status 200 2 false
	// retries: 1
}
