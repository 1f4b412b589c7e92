package pgstore_test

import (
	"context"
	"crypto/rand"
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
		WalletAddress: "TXyz", Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "user-1", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: hookURL,
	}

	go q.Run(ctx) // on every replica: they share the table
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
