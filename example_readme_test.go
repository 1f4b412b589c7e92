package cryptopay_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// The README's snippets, each run here as it is printed there (docs_test.go
// checks that every README snippet appears in a Go file).

// readmeWorld is what the README's fragments take from their
// surroundings: a fake API, a context, a payment created on it.
func readmeWorld() (srv *cryptopaytest.Server, ctx context.Context, payment *cryptopay.Payment) {
	srv = cryptopaytest.NewServer()
	ctx = context.Background()
	payment, err := srv.Client().CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "tron",
		CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: "order-1042",
	})
	if err != nil {
		log.Fatal(err)
	}
	return srv, ctx, payment
}

// Options on the Client and on one call (README, "A first program").
func Example_readmeOptions() {
	srv, ctx, payment := readmeWorld()
	defer srv.Close()
	baseURL, apiKey := srv.URL, srv.APIKey

	client, err := cryptopay.NewClient(baseURL, apiKey,
		cryptopay.WithTimeout(10*time.Second),            // every call
		cryptopay.WithHeader("User-Agent", "myshop/1.0")) // goes in front of the SDK's token
	p, err := client.GetPayment(ctx, payment.ID, cryptopay.WithTimeout(3*time.Second)) // this call only
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status)
	// Output: waiting
}

// A wait that also stops when a person must act (README, "Waits").
func Example_readmeWait() {
	srv, ctx, payment := readmeWorld()
	defer srv.Close()
	client := srv.Client()
	_ = srv.Pay(payment.ID, payment.PayAmount)

	p, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{
		ID:     payment.ID,
		StopOn: []cryptopay.PaymentStatus{cryptopay.PaymentLocked}, // also stop when a person must act
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Status)
	// Output: paid
}

// A payout's unknown outcome reconciled, never resent (README, "Never
// twice"); ExampleClient_ReconcilePayout runs the same flow to its end.
// Compiled, not run: following a created payout takes the wait's default
// poll interval.
func Example_readmeNeverTwice() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	client, ctx := srv.Client(), context.Background()
	params := cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "withdrawal-42",
	}

	attempted := time.Now() // before sending: the search reaches back to it
	payout, err := client.CreatePayout(ctx, params)
	switch {
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		res, rerr := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{
			OrderID: params.OrderID, AttemptedAt: attempted}) // zero AttemptedAt: "not known", the whole list
		switch {
		case rerr != nil || res.Verdict == cryptopay.PayoutStillUnknown:
			log.Printf("still unknown: look again later; do NOT resend")
		case res.Verdict == cryptopay.PayoutNotCreated:
			fmt.Println("not created: sending again with the same orderId is safe")
		case res.Verdict == cryptopay.PayoutExists:
			// Created: never send it again. The list item has no payout id,
			// so follow the payout by its orderId to its final status.
			final, err := client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: params.OrderID})
			if err != nil {
				log.Printf("no final status yet, wait again later: %v", err)
				break
			}
			fmt.Println("final status:", final.Status) // paid, failed or cancelled
		}
	case err != nil:
		log.Printf("refused: %v", err) // a definite answer: nothing was paid
	default:
		fmt.Printf("payout %s is %s\n", payout.ID, payout.Status)
	}
}
