package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
)

// docs/refunds.md: an overpayment refunded through the customer's claim,
// an underpayment refunded to an address on file, both held for two
// approvals, and both payments resolved. The API is the bundled fake; the
// database is $DATABASE_URL. pgstore/examples/refunds goes on to pay them.
func ExampleRefunds_Create() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	client := fake.Client()
	suffix := strings.ToLower(rand.Text()[:8])
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: "example_refund_intents_" + suffix, CreateTable: true})
	if err != nil {
		log.Fatal(err)
	}
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: client, Table: "example_refund_payments_" + suffix,
		CreateTable: true, OpenEvery: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	overpaid, underpaid := "over-"+suffix, "under-"+suffix
	if err := payAndTrack(ctx, pool, fake, tr, map[string]string{overpaid: "10.5", underpaid: "4"}); err != nil {
		log.Fatal(err)
	}

	refunds, err := pgstore.NewRefunds(ctx, pgstore.RefundsConfig{
		Queue:       q,
		Tracker:     tr,
		CreateTable: true, // or run refunds.DDL() in a migration
		// NetworkFeeByUser: true, // the customer bears the network fee
	})
	if err != nil {
		log.Fatal(err)
	}

	// The overpayment: its excess, claimed by the customer.
	f, created, err := refunds.Create(ctx, pgstore.RefundParams{
		OrderID:    overpaid,             // the tracked payment: paid_over
		Key:        "ticket-88",          // idempotency key: a retry returns the same refund
		Rule:       pgstore.RefundExcess, // its excess
		CustomerID: "cust-7",
		Actor:      "alice",
		Note:       "customer wrote in",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("overpaid: refund of", f.Amount, f.Currency+",", f.State, "new:", created)

	claimKey := []byte("example-claim-key-do-not-use-32b")
	mux := http.NewServeMux()
	h, err := claim.New(claim.Config{
		Refunds: refunds,
		Key:     claimKey, // at least 32 bytes of a secret from your configuration
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/refund", h)

	link, err := claim.Link("https://shop.example/refund", claimKey, f.ID, f.ClaimUntil)
	if err != nil {
		log.Fatal(err)
	}
	shop := httptest.NewServer(mux)
	defer shop.Close()
	status, err := customerClaims(shop.URL, link, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("customer's page:", status)

	// The underpayment: all it paid, to the address on file.
	g, _, err := refunds.Create(ctx, pgstore.RefundParams{
		OrderID:       underpaid,             // paid_partial
		Key:           "ticket-89",           // idempotency key
		Rule:          pgstore.RefundAllPaid, // everything it paid
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G",
		CustomerID:    "cust-8",
		CustomerIP:    "203.0.113.7",
		Actor:         "alice",
		Note:          "order cancelled",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("underpaid: refund of", g.Amount, g.Currency+", payout", g.PayoutState)

	for _, id := range []string{f.ID, g.ID} {
		for _, who := range []string{"bob", "carol"} { // four eyes: alice asked, so hers does not count
			if err := q.Approve(ctx, id, who, "checked"); err != nil {
				log.Fatal(err)
			}
		}
		in, err := q.Get(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("after two approvals:", in.State, in.Params.Amount, in.Params.Currency, "on", in.Params.Network)
	}

	err = refunds.Resolve(ctx, overpaid, pgstore.ResolutionRefunded, f.ID, "alice", "excess returned")
	if err != nil {
		log.Fatal(err)
	}
	err = refunds.Resolve(ctx, underpaid, pgstore.ResolutionRefunded, g.ID, "alice", "order cancelled, all returned")
	if err != nil {
		log.Fatal(err)
	}
	left, err := refunds.Unresolved(ctx, "", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unresolved:", len(left))
	// Output:
	// overpaid: refund of 0.5 usdt, awaiting_claim new: true
	// customer's page: Awaiting approval
	// underpaid: refund of 4 usdt, payout needs_approval
	// after two approvals: queued 0.5 usdt on tron
	// after two approvals: queued 4 usdt on tron
	// unresolved: 0
}

// payAndTrack creates a payment of 10 usdt per orderId, tracks it, pays
// the amount given, and reads each until the tracker records a terminal
// status.
func payAndTrack(ctx context.Context, pool *pgxpool.Pool, fake *cryptopaytest.Server, tr *pgstore.Tracker, paid map[string]string) error {
	client := fake.Client()
	for orderID, amount := range paid {
		p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(10), Currency: "usdt",
			Network: "tron", CustomerID: "cust", CustomerIP: "203.0.113.7", OrderID: orderID})
		if err != nil {
			return err
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tr.Track(ctx, tx, p); return err }); err != nil {
			return err
		}
		if err := fake.Pay(p.ID, decimal.RequireFromString(amount)); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go tr.Run(rctx)
	for orderID := range paid {
		for {
			tp, err := tr.Get(ctx, orderID)
			if err != nil {
				return err
			}
			if tp.Status.IsTerminal() {
				break
			}
			select {
			case <-rctx.Done():
				return rctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// customerClaims plays the customer: the claim link, opened on the shop
// at base, its form posted with wallet; it returns the status word of the
// page the browser is sent on to.
func customerClaims(base, link, wallet string) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	target := base + u.Path + "?" + u.RawQuery
	resp, err := http.PostForm(target, url.Values{"address": {wallet}}) // follows the 303
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`id="status">([^<]*)<`).FindSubmatch(page)
	if m == nil {
		return "", fmt.Errorf("no status on the page (%s)", resp.Status)
	}
	return string(m[1]), nil
}
