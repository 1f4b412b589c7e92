package cryptopay_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// Every endpoint method, each against the bundled fake (cryptopaytest): in
// production the client comes from cryptopay.NewClient with your base URL
// and API key. The output shows stable fields only (statuses, amounts),
// never ids or times.

// examplePayout is a payout request as the examples below send it.
func examplePayout(orderID, amount string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{
		WalletAddress: "TJCRHFYNauTirVoF1f1QyLP2pTewMY5Lna", Amount: decimal.RequireFromString(amount),
		Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: orderID,
	}
}

func ExampleClient_CreatePayment() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()

	payment, err := client.CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
		Amount:            decimal.RequireFromString("49.99"),
		PlatformFeeByUser: true, // the customer pays the fee on top
		Currency:          "usdt",
		Network:           "tron",
		CustomerID:        "customer-42",
		CustomerIP:        "203.0.113.7",
		OrderID:           "order-1042", // unique per order
	})
	if err != nil {
		log.Fatal(err) // ErrOutcomeUnknown: a payment may exist; let the customer pay only one
	}
	fmt.Println(payment.Status, payment.Currency, payment.Network, payment.PayAddress != "")
	fmt.Println("the customer pays", payment.PayAmount) // the fee included: PlatformFeeByUser
	// Output:
	// waiting usdt tron true
	// the customer pays 50.4899
}

func ExampleClient_GetPayment() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-8",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = srv.Pay(payment.ID, payment.PayAmount) // the customer pays in full

	p, err := client.GetPayment(ctx, payment.ID)
	if err != nil {
		log.Fatal(err)
	}
	// PaidAmount and MerchantAmount are NullDecimal: Valid false means the
	// server did not send them, which is not zero.
	fmt.Println(p.Status, p.Status.IsSuccess(), p.PaidAmount.Valid, p.PaidAmount.Decimal)
	// Output: paid true true 10
}

func ExampleClient_CreatePayout() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()

	params := examplePayout("withdrawal-1", "12.5")
	payout, err := client.CreatePayout(context.Background(), params)
	switch {
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		// It may exist: reconcile by params.OrderID (ReconcilePayout), never resend blindly.
	case err != nil:
		log.Printf("refused, nothing was created: %v", err)
	default:
		fmt.Println(payout.Status, payout.Amount, payout.Currency)
	}
	// Output: created 12.5 usdt
}

func ExampleClient_GetPayout() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	payout, err := client.CreatePayout(ctx, examplePayout("withdrawal-2", "5"))
	if err != nil {
		log.Fatal(err)
	}
	_ = srv.SetPayoutStatus(payout.ID, cryptopay.PayoutProcessing) // the processor sends it
	_ = srv.SetPayoutStatus(payout.ID, cryptopay.PayoutPaid)

	p, err := client.GetPayout(ctx, payout.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, p.Status.IsTerminal(), p.Amount)
	// Output: paid true 5
}

func ExampleClient_ListPayouts() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	for _, o := range []string{"wd-1", "wd-2", "wd-3"} {
		if _, err := client.CreatePayout(ctx, examplePayout(o, "1")); err != nil {
			log.Fatal(err)
		}
	}

	page, err := client.ListPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	// Count is the total; a list item carries no payout id (the API's shape).
	fmt.Println(len(page.Payouts), "of", page.Count)
	// Output: 2 of 3
}

func ExampleClient_AllPayouts() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	for i := range 5 {
		if _, err := client.CreatePayout(ctx, examplePayout(fmt.Sprintf("wd-%d", i), "2")); err != nil {
			log.Fatal(err)
		}
	}

	total := decimal.Zero
	n := 0
	// Pages are read lazily, two items a request here; break stops reading.
	for item, err := range client.AllPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		total = total.Add(item.Amount)
		n++
	}
	fmt.Println(n, "payouts,", total, "usdt,", srv.Requests(cryptopaytest.RouteListPayouts), "list requests")
	// Output: 5 payouts, 10 usdt, 3 list requests
}

func ExampleClient_GetBalances() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.RequireFromString("1500.25")))
	defer srv.Close()

	balances, err := srv.Client().GetBalances(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range balances {
		if b.Currency == "usdt" && b.Network == "tron" {
			fmt.Println(b.Currency, b.Network, b.Amount)
		}
	}
	// Output: usdt tron 1500.25
}

func ExampleClient_ListCurrencies() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithCurrencies(
		cryptopaytest.Currency{Currency: "usdt", Network: "tron"},
		cryptopaytest.Currency{Currency: "btc", Network: "bitcoin"},
	))
	defer srv.Close()

	currencies, err := srv.Client().ListCurrencies(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range currencies {
		fmt.Println(c.Currency, c.Network)
	}
	// Output:
	// usdt tron
	// btc bitcoin
}

// WithTimeout bounds each attempt: on the Client for every call, or on one
// call only. 0 means no per-attempt bound on both levels; ctx still bounds
// the whole call.
func ExampleWithTimeout() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client(cryptopay.WithTimeout(10 * time.Second)) // every call
	srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Delay: time.Minute})

	var resp cryptopay.Response
	_, err := client.GetBalances(context.Background(),
		cryptopay.WithTimeout(50*time.Millisecond),         // this call only
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}), // and no retry
		cryptopay.WithResponseInto(&resp))
	fmt.Println(err != nil, resp.Attempts)

	_, err = client.GetBalances(context.Background(), cryptopay.WithTimeout(-time.Second))
	fmt.Println(errors.Is(err, cryptopay.ErrInvalidParams))
	// Output:
	// true 1
	// true
}

// A webhook receiver of your own hands an object it read through the API
// to the Client's waits (webhook.Handler does this itself): the wait, which
// polls only every hour here, ends at once.
func ExampleClient_Notify() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()
	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("20"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-9",
	})
	if err != nil {
		log.Fatal(err)
	}
	started := make(chan struct{})
	firstRead := sync.OnceFunc(func() { close(started) })
	done := make(chan *cryptopay.Payment)
	go func() {
		p, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{
			ID: payment.ID, PollInterval: time.Hour,
			OnStatusChange: func(*cryptopay.Payment) { firstRead() },
		})
		if err != nil {
			log.Fatal(err)
		}
		done <- p
	}()
	<-started
	_ = srv.Pay(payment.ID, payment.PayAmount)

	// In your receiver: re-read the event's object through the API, never
	// trust the body, then hand it over.
	p, err := client.GetPayment(ctx, payment.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("waits handed the payment:", client.Notify(ctx, p))
	fmt.Println("the wait ended with", (<-done).Status)
	// Output:
	// waits handed the payment: 1
	// the wait ended with paid
}
