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

// The way out of an unknown outcome: look the payout up by orderId before
// sending again, and follow one that exists to its final status. Here the
// fake server creates the payout and drops the connection before
// answering; the list item carries no payout id, so the wait follows the
// orderId.
func ExampleClient_ReconcilePayout() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	client := srv.Client()
	ctx := context.Background()
	params := cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "withdrawal-42",
	}

	attempted := time.Now() // before sending: the search reaches back to it
	payout, err := client.CreatePayout(ctx, params)
	switch {
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		res, rerr := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: params.OrderID, AttemptedAt: attempted})
		switch {
		case rerr != nil:
			log.Printf("still unknown, look again later; do NOT resend: %v", rerr)
		case res.Verdict == cryptopay.PayoutExists:
			fmt.Printf("the payout exists (status %s): do not send it again\n", res.Payout.Status)
			for _, id := range srv.PayoutIDsWithOrderID(params.OrderID) {
				_ = srv.SetPayoutStatus(id, cryptopay.PayoutProcessing) // the processor pays it
				_ = srv.SetPayoutStatus(id, cryptopay.PayoutPaid)
			}
			final, err := client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: params.OrderID, PollInterval: time.Millisecond})
			if err != nil {
				log.Fatalf("no final status yet, wait again later: %v", err)
			}
			fmt.Printf("final status: %s\n", final.Status)
		case res.Verdict == cryptopay.PayoutNotCreated:
			fmt.Println("not created: sending again with the same orderId is safe")
		default: // PayoutStillUnknown
			log.Printf("still unknown (%s); do NOT resend", res.Reason)
		}
	case err != nil:
		log.Printf("refused: %v", err) // a definite answer: nothing was paid
	default:
		fmt.Printf("payout %s is %s\n", payout.ID, payout.Status)
	}
	// Output:
	// the payout exists (status created): do not send it again
	// final status: paid
}
