package cryptopay_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func ExampleNewClient() {
	apiKey := "sk_live_example" // in a program: os.Getenv("CRYPTOPAY_API_KEY"), never in the code
	client, err := cryptopay.NewClient("https://api.example.com", apiKey,
		cryptopay.WithTimeout(20*time.Second),
		cryptopay.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		cryptopay.WithHeader("User-Agent", "myshop/1.0"),
	)
	if err != nil {
		log.Fatal(err) // an empty key, a bad URL, or http:// to a remote host
	}
	fmt.Println(client) // the key is never printed

	_, err = cryptopay.NewClient("http://api.example.com", "sk_live_example") // plain http to a remote host
	fmt.Println(errors.Is(err, cryptopay.ErrInvalidParams))
	// Output:
	// cryptopay.Client{base: https://api.example.com, apiKey: [REDACTED]}
	// true
}

func ExampleAPIError() {
	err := error(&cryptopay.APIError{StatusCode: 404, Code: "not_found", Message: "payment not found"})

	var apiErr *cryptopay.APIError // note the & below: errors.As needs a pointer to it
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	fmt.Println(errors.Is(err, cryptopay.ErrNotFound))
	// Output:
	// 404 not_found
	// true
}

func ExampleCreatePaymentParams_MarshalJSON() {
	body, _ := cryptopay.CreatePaymentParams{
		Amount:     decimal.RequireFromString("0.1"),
		Currency:   "usdt",
		Network:    "tron",
		CustomerID: "cus_1",
		CustomerIP: "203.0.113.7",
		OrderID:    "order-1",
	}.MarshalJSON()
	fmt.Println(string(body))
	// Output:
	// {"amount":0.1,"platformFeeByUser":false,"currency":"usdt","network":"tron","customerId":"cus_1","customerIp":"203.0.113.7","orderId":"order-1"}
}

// One debug line per attempt (a warning per unknown outcome), without the
// key, a body or a query. Here the time, duration and request id are left
// out of the lines so that the output is stable.
func ExampleWithLogger() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 503}) // one retry

	stable := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "duration" || a.Key == "requestId" {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: stable}))
	client := srv.Client(cryptopay.WithLogger(logger))
	if _, err := client.GetBalances(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// level=DEBUG msg="cryptopay request" method=GET path=/v1/balance attempt=1 status=503 retry=true reason="status 503 Service Unavailable"
	// level=DEBUG msg="cryptopay request" method=GET path=/v1/balance attempt=2 status=200 retry=false
}
