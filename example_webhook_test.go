package cryptopay_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

func ExampleClient_WaitForPayment() {
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	client := fake.Client()
	ctx := context.Background()

	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-7",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = fake.Pay(payment.ID, decimal.RequireFromString("4")) // the customer pays too little

	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute) // always bound a wait
	defer cancel()
	p, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{
		ID:             payment.ID,
		PollInterval:   time.Millisecond,                                   // the default is 2 s, growing to 30 s
		StopOn:         []cryptopay.PaymentStatus{cryptopay.PaymentLocked}, // also stop when a person must look
		OnStatusChange: func(p *cryptopay.Payment) { fmt.Println("status:", p.Status) },
	})
	switch {
	case err != nil:
		log.Printf("no final status yet: %v", err) // p, if not nil, is the last status read
	case p.Status.IsSuccess() && !p.Status.NeedsAction():
		fmt.Println("ship the order")
	case p.Status.NeedsAction():
		fmt.Println("a person should look:", p.Status, p.PaidAmount.Decimal, "of", p.PayAmount)
	default:
		fmt.Println("not paid:", p.Status)
	}
	// Output:
	// status: paid_partial
	// a person should look: paid_partial 4 of 10
}

func ExampleClient_WaitForPayout() {
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	client := fake.Client()
	ctx := context.Background()

	payout, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("5"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "withdrawal-9",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = fake.SetPayoutStatus(payout.ID, cryptopay.PayoutReview)

	p, err := client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{
		ID:           payout.ID,
		PollInterval: time.Millisecond,
		StopOn:       []cryptopay.PayoutStatus{cryptopay.PayoutReview}, // review waits for a person: learn about it
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status, p.Status.IsTerminal(), p.Status.NeedsAction())
	// Output:
	// review false true
}

// Two replicas share a WakeupBus: the webhook lands on replica B, and the
// wait on replica A, which polls only every hour, ends at once.
func ExampleWithWakeupBus() {
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	bus := cryptopaytest.NewMemoryBus() // across processes: redisstore.NewWakeupBus or pgstore.NewWakeupBus
	replicaA := fake.Client(cryptopay.WithWakeupBus(bus))
	replicaB := fake.Client(cryptopay.WithWakeupBus(bus))
	defer replicaA.Close() // ends the bus subscription
	defer replicaB.Close()

	secret := []byte("example-secret-do-not-use-32byte")
	handlerB, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: replicaB})
	if err != nil {
		log.Fatal(err)
	}
	shopB := httptest.NewServer(handlerB)
	defer shopB.Close()
	hookURL, err := webhook.URL(shopB.URL, secret, "order-7")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	payment, err := replicaA.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-7", WebhookURL: hookURL,
	})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan *cryptopay.Payment)
	go func() {
		p, err := replicaA.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: payment.ID, PollInterval: time.Hour})
		if err != nil {
			log.Fatal(err)
		}
		done <- p
	}()
	_ = fake.Pay(payment.ID, payment.PayAmount)
	fmt.Println((<-done).Status)
	// Output: paid
}

func ExampleClient_Close() {
	bus := cryptopaytest.NewMemoryBus() // redisstore.NewWakeupBus or pgstore.NewWakeupBus across processes
	client, err := cryptopay.NewClient("https://api.example.com", "sk_live_example", cryptopay.WithWakeupBus(bus))
	if err != nil {
		log.Fatal(err)
	}
	// Close ends the wake-up bus subscription (if any) and closes idle
	// connections; the Client stays usable, so close it when done with it.
	fmt.Println(client.Close())
	// Output: <nil>
}
