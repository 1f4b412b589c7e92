package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// The setup of docs/payout-queue.md: a queue on the merchant's database,
// with a final callback, an observer and guardrails; Run works it on every
// replica (ExampleQueue_Enqueue), woken by the webhook handler. Here a dry
// run shows what the guardrails would do with three payouts, without
// sending anything. The API is the bundled fake; the database is
// $DATABASE_URL.
func ExampleNewQueue() {
	ctx := context.Background()
	guardrails := pgstore.Guardrails{
		MaxAmount:        map[string]decimal.Decimal{"usdt": decimal.NewFromInt(5_000)},  // one payout
		Velocity:         map[string]decimal.Decimal{"usdt": decimal.NewFromInt(50_000)}, // per window
		VelocityWindow:   24 * time.Hour,
		AllowedAddresses: nil, // or the only addresses ever paid
		CheckAddress:     func(ctx context.Context, p cryptopay.CreatePayoutParams) error { return screen(ctx, p.WalletAddress) },
		ApprovalAbove:    map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1_000)},
	}
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer() // in production: cryptopay.NewClient(baseURL, apiKey)
	defer fake.Close()
	client := fake.Client()

	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{
		Pool:        pool,
		Client:      client,
		CreateTable: true,       // or run q.DDL() in a migration
		OnFinal:     onFinal,    // step 4
		Observer:    observe,    // step 5
		Guardrails:  guardrails, // step 6
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := webhookHandler(q, client, []byte("example-secret-do-not-use-32byte"))
	if err != nil {
		log.Fatal(err)
	}
	_ = h // served at the webhookUrl of each payout

	var batch []cryptopay.CreatePayoutParams
	for _, amount := range []string{"6000", "2500", "40"} {
		batch = append(batch, cryptopay.CreatePayoutParams{
			WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString(amount), Currency: "usdt", Network: "tron",
			CustomerID: "user-1", CustomerIP: "203.0.113.7", OrderID: "wd-" + amount,
		})
	}
	stops, err := q.CheckGuardrails(ctx, batch)
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range stops {
		fmt.Println(st.OrderID, st.Err.Rule)
	}
	fmt.Println("sent:", fake.PayoutCount())
	// Output:
	// wd-6000 max_amount
	// wd-2500 approval
	// sent: 0
}

// The README's payout queue, end to end: the withdrawal and its payout
// intent commit in one transaction; a worker sends the payout once and
// follows it to its final status (woken by the payout's webhook), and
// settle records that status in the same transaction as the queue. The API
// is the bundled fake, which plays the processor too; the database is
// $DATABASE_URL (the package's tests point it at their own PostgreSQL).
func ExampleQueue_Enqueue() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer() // in production: cryptopay.NewClient(baseURL, apiKey)
	defer fake.Close()
	client := fake.Client()

	final := make(chan pgstore.IntentState, 1)
	settle := func(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
		// ... mark the withdrawal paid, or credit the balance back, in tx ...
		select {
		case final <- in.State:
		default:
		}
		return nil
	}

	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{
		Pool: pool, Client: client, CreateTable: true,
		OnFinal: settle, // runs in the transaction that records the final status
	})
	if err != nil {
		log.Fatal(err)
	}
	// The payout's webhooks wake the intent's follow-up at once.
	secret := []byte("example-secret-do-not-use-32byte")
	hooks, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: client, OnPayout: q.PayoutChanged})
	if err != nil {
		log.Fatal(err)
	}
	shop := httptest.NewServer(hooks)
	defer shop.Close()
	orderID := "wd-" + rand.Text() // unique per withdrawal, for ever
	hookURL, err := webhook.URL(shop.URL, secret, orderID)
	if err != nil {
		log.Fatal(err)
	}
	params := cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "user-1", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: hookURL,
	}

	if err := startWorkers(ctx, q); err != nil {
		log.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... debit the user's balance in tx ...
		_, err := q.Enqueue(ctx, tx, params) // keyed by params.OrderID
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// The processor pays the payout once the worker has sent it.
	for len(fake.PayoutIDsWithOrderID(orderID)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	for _, id := range fake.PayoutIDsWithOrderID(orderID) {
		_ = fake.SetPayoutStatus(id, cryptopay.PayoutProcessing)
		_ = fake.SetPayoutStatus(id, cryptopay.PayoutPaid)
	}
	fmt.Println("final state:", <-final)
	fmt.Println("payouts for the orderId at the API:", fake.PayoutsWithOrderID(orderID))
	// Output:
	// final state: paid
	// payouts for the orderId at the API: 1
}

// startWorkers is step 3 of docs/payout-queue.md: before the shop takes
// withdrawals, the tables are checked; the workers never stop in silence.
func startWorkers(ctx context.Context, q *pgstore.Queue) error {
	if err := q.CheckSchema(ctx); err != nil {
		return err // the tables are missing or out of date: take no withdrawals
	}
	go func() { // on every replica: they share the table
		if err := q.Run(ctx); ctx.Err() == nil {
			log.Fatal("the payout workers stopped: ", err) // a bad config or the tables gone
		}
	}()
	return nil
}

// webhookHandler is step 5 of docs/payout-queue.md.
func webhookHandler(q *pgstore.Queue, client *cryptopay.Client, secret []byte) (*webhook.Handler, error) {
	return webhook.NewHandler(webhook.Config{
		Secret: secret, Client: client,
		OnPayout:  q.PayoutChanged,
		OnRefused: q.WebhookRefused, // a wrong secret shows in q.Health, the console and the CLI
	})
}

// recordWithdrawal is step 2 of docs/payout-queue.md: the withdrawal and
// its payout intent in one transaction.
func recordWithdrawal(ctx context.Context, pool *pgxpool.Pool, q *pgstore.Queue, userID, withdrawalID, address, ip, webhookURL string, amount decimal.Decimal) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Debit only what the account holds: no row updated means too little.
		tag, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance - $2 WHERE user_id = $1 AND balance >= $2`, userID, amount)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errors.New("insufficient balance") // nothing is queued: the transaction rolls back
		}
		_, err = q.Enqueue(ctx, tx, cryptopay.CreatePayoutParams{
			OrderID:       "wd-" + withdrawalID, // unique per withdrawal, for ever
			WalletAddress: address, Amount: amount, Currency: "usdt", Network: "tron",
			CustomerID: userID, CustomerIP: ip,
			WebhookURL: webhookURL, // optional: see step 5
		})
		return err
	})
	return err
}

// onFinal is step 4 of docs/payout-queue.md.
func onFinal(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
	switch in.State {
	case pgstore.StatePaid:
		// in.PayoutID is empty when only the payout list found the payout
		// (the list carries no id) and no webhook taught it (step 5).
		_, err := tx.Exec(ctx, `UPDATE withdrawals SET status = 'paid', payout_id = NULLIF($2, '') WHERE id = $1`,
			in.Params.OrderID, in.PayoutID)
		return err
	default: // failed, refused, rejected, blocked: no money left
		_, err := tx.Exec(ctx, `UPDATE withdrawals SET status = $2 WHERE id = $1`, in.Params.OrderID, string(in.State))
		return err
	}
}

// observe would count transitions (see the package documentation).
func observe(pgstore.Transition) {}

// screen stands for the merchant's address screening.
func screen(context.Context, string) error { return nil }

// parkedIntents is step 8 of docs/payout-queue.md: what an operator reads,
// and the retry after checking with the processor.
func parkedIntents(ctx context.Context, q *pgstore.Queue, orderID string) error {
	parked, err := q.List(ctx, pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateParked}})
	if err != nil {
		return err
	}
	for _, in := range parked {
		log.Printf("%s parked since %v: %q", in.Params.OrderID, in.AttemptedAt, in.LastError)
	}
	return q.Retry(ctx, orderID, "carol", "no payout in dashboard, ticket 123")
}

var _, _ = recordWithdrawal, parkedIntents

// Four eyes: a payout above the approval threshold is sent only once two
// different people have approved it. The person who enqueued it does not
// count, nor does one person approving twice; each approval is in the
// history with its actor.
func ExampleQueue_Approve() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{
		Pool: pool, Table: "example_four_eyes", CreateTable: true, // Approvals: 2 by default
		Guardrails: pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1_000)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	orderID := "wd-" + rand.Text()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := q.EnqueueBy(ctx, tx, "carol", []cryptopay.CreatePayoutParams{{
			WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("2500"), Currency: "usdt", Network: "tron",
			CustomerID: "user-1", CustomerIP: "203.0.113.7", OrderID: orderID,
		}})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, who := range []string{"carol", "alice", "alice", "bob"} {
		err := q.Approve(ctx, orderID, who, "checked KYC")
		in, _ := q.Get(ctx, orderID)
		fmt.Printf("%s: counted %v, %s, approved by %v\n", who, !errors.Is(err, pgstore.ErrApprovalNotCounted), in.State, in.ApprovedBy)
	}
	// Output:
	// carol: counted false, needs_approval, approved by []
	// alice: counted true, needs_approval, approved by [alice]
	// alice: counted false, needs_approval, approved by [alice]
	// bob: counted true, queued, approved by [alice bob]
}
