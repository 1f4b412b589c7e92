package cryptopaytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// A merchant's test: create a payment through the SDK, let the fake play
// the customer's transfer, and read the result.
func ExampleNewServer() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client() // *cryptopay.Client for srv.URL and srv.APIKey
	ctx := context.Background()

	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount:            decimal.RequireFromString("25"),
		PlatformFeeByUser: true, // the customer pays the 1% fee
		Currency:          "usdt",
		Network:           "tron",
		CustomerID:        "cust-42",
		CustomerIP:        "203.0.113.9",
		OrderID:           "order-1001",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, p.PayAmount)

	// The customer pays the full amount.
	if err := srv.Pay(p.ID, p.PayAmount); err != nil {
		log.Fatal(err)
	}
	p, err = client.GetPayment(ctx, p.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, p.PaidAmount.Decimal, p.MerchantAmount.Decimal)
	// Output:
	// waiting 25.25
	// paid 25.25 25
}

// Pay accumulates: a short payment is paid_partial until the rest arrives.
func ExampleServer_Pay() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("0.5"), Currency: "btc", Network: "bitcoin",
		CustomerID: "cust-1", CustomerIP: "198.51.100.1", OrderID: "order-2",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, amount := range []string{"0.2", "0.3", "0.01"} {
		if err := srv.Pay(p.ID, decimal.RequireFromString(amount)); err != nil {
			log.Fatal(err)
		}
		p, _ = client.GetPayment(ctx, p.ID)
		fmt.Println(p.Status, p.PaidAmount.Decimal)
	}
	// Output:
	// paid_partial 0.2
	// paid 0.5
	// paid_over 0.51
}

// The ambiguous payout: the server creates the payout, then the connection
// drops before the answer. The SDK does not resend; the caller reconciles by
// orderId.
func ExampleServer_InjectFault() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})

	_, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", Amount: decimal.RequireFromString("100"),
		Currency: "usdt", Network: "tron", CustomerID: "cust-7", CustomerIP: "192.0.2.7", OrderID: "withdrawal-7",
	})
	fmt.Println("outcome unknown:", errors.Is(err, cryptopay.ErrOutcomeUnknown))
	fmt.Println("requests sent:", srv.Requests(cryptopaytest.RouteCreatePayout))
	fmt.Println("payouts on the server:", srv.PayoutsWithOrderID("withdrawal-7"))

	res, err := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: "withdrawal-7"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found:", res.Verdict == cryptopay.PayoutExists, res.Payout.Status)
	// Output:
	// outcome unknown: true
	// requests sent: 1
	// payouts on the server: 1
	// found: true created
}

// A payout's lifecycle and its effect on the balance.
func ExampleServer_SetPayoutStatus() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.RequireFromString("500")))
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	p, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", Amount: decimal.RequireFromString("100"),
		NetworkFeeByUser: false, // the merchant pays the 0.5% network fee
		Currency:         "usdt", Network: "tron", CustomerID: "cust-7", CustomerIP: "192.0.2.7", OrderID: "withdrawal-8",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, "balance", srv.Balance("usdt", "tron"))

	for _, st := range []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutPaid} {
		if err := srv.SetPayoutStatus(p.ID, st); err != nil {
			log.Fatal(err)
		}
	}
	p, _ = client.GetPayout(ctx, p.ID)
	fmt.Println(p.Status, p.PaidAmount.Decimal, p.MerchantAmount.Decimal)

	err = srv.SetPayoutStatus(p.ID, cryptopay.PayoutFailed)
	fmt.Println(errors.Is(err, cryptopaytest.ErrTransition))
	// Output:
	// created balance 399.5
	// paid 100 100.5
	// true
}

// Expiry follows the server's clock, which Advance moves; a late transfer
// still lands.
func ExampleServer_Advance() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithPaymentTTL(15 * time.Minute))
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("1"), Currency: "eth", Network: "eth",
		CustomerID: "cust-3", CustomerIP: "192.0.2.3", OrderID: "order-3",
	})
	if err != nil {
		log.Fatal(err)
	}
	srv.Advance(15 * time.Minute)
	p, _ = client.GetPayment(ctx, p.ID)
	fmt.Println(p.Status)

	_ = srv.Pay(p.ID, decimal.RequireFromString("1"))
	p, _ = client.GetPayment(ctx, p.ID)
	fmt.Println(p.Status)
	// Output:
	// expired
	// paid
}

// Every change is POSTed to the object's webhookUrl and recorded.
func ExampleServer_WaitWebhooks() {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "erc20",
		CustomerID: "cust-5", CustomerIP: "192.0.2.5", OrderID: "order-5", WebhookURL: hook.URL + "/hooks/cryptopay",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = srv.SetPaymentStatus(p.ID, cryptopay.PaymentConfirming)
	_ = srv.Pay(p.ID, p.PayAmount)

	deliveries, err := srv.WaitWebhooks(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range deliveries {
		fmt.Println(d.Kind, d.Status, d.StatusCode, d.Delivered())
	}
	// Output:
	// payment confirming 204 true
	// payment paid 204 true
}

// The control API drives the server over HTTP, as cmd/cryptopay-fakeserver
// serves it.
func ExampleServer_ControlHandler() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithControlAPI())
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("2"), Currency: "usdc", Network: "eth",
		CustomerID: "cust-6", CustomerIP: "192.0.2.6", OrderID: "order-6",
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/_control/payments/"+p.ID+"/pay", "application/json", strings.NewReader(`{"amount":"1"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	p, _ = client.GetPayment(ctx, p.ID)
	fmt.Println(resp.StatusCode, p.Status, p.PaidAmount.Decimal)
	// Output:
	// 200 paid_partial 1
}

// SetPaymentStatus plays the processor: a payment held for a compliance
// check, which the merchant's code must show to a person.
func ExampleServer_SetPaymentStatus() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.9", OrderID: "order-1003",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.SetPaymentStatus(p.ID, cryptopay.PaymentLocked); err != nil {
		log.Fatal(err)
	}
	p, err = client.GetPayment(ctx, p.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, p.Status.IsTerminal(), p.Status.NeedsAction())
	// Output: locked false true
}

// SetBalance gives the merchant's account a balance; a payout larger than
// it is refused, and nothing is created.
func ExampleServer_SetBalance() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.SetBalance("usdt", "tron", decimal.RequireFromString("100"))
	client := srv.Client()

	_, err := client.CreatePayout(context.Background(), cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("250"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.9", OrderID: "wd-1",
	})
	var apiErr *cryptopay.APIError
	fmt.Println(errors.As(err, &apiErr), errors.Is(err, cryptopay.ErrOutcomeUnknown), srv.PayoutCount())
	fmt.Println(srv.Balance("usdt", "tron"))
	// Output:
	// true false 0
	// 100
}
