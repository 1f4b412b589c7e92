package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// docs/books.md: a payout made outside the queue (here, straight through
// the API) is drift, named with its amount; booked with Adjust, it ties. The API is the bundled fake;
// the database is $DATABASE_URL.
func ExampleBooks_Check() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(100)))
	defer fake.Close()
	client := fake.Client() // in production: cryptopay.NewClient(baseURL, apiKey)
	suffix := strings.ToLower(rand.Text()[:8])
	queue, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Client: client, Table: "example_books_intents_" + suffix, CreateTable: true})
	if err != nil {
		log.Fatal(err)
	}
	tracker, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: client, Table: "example_books_payments_" + suffix, CreateTable: true})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.CreatePayout(ctx, cryptopay.CreatePayoutParams{WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G",
		Amount: decimal.RequireFromString("3.3"), Currency: "usdt", Network: "tron", CustomerID: "c1", CustomerIP: "203.0.113.7",
		OrderID: "outside-1"})
	if err != nil {
		log.Fatal(err)
	}

	balances := "example_books_balances_" + suffix // the check's own tables: this name, and with _adjustments appended

	b, err := pgstore.NewBooks(pgstore.BooksConfig{Client: client, Queue: queue, Tracker: tracker,
		BalanceTable: balances, CreateTable: true}) // CreateTable: the check's own tables, for Adjust
	if err != nil {
		log.Fatal(err)
	}
	sum, err := b.Check(ctx, func(it pgstore.BooksItem) error {
		fmt.Println(it.Class, it.OrderID, it.Delta) // every orderId the check looked at
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("drift:", sum.Drift, "clean:", sum.Clean())

	// Found in the dashboard: made by hand, booked as a loss. Booked, the
	// drift ties: the next check lists it apart, adjusted.
	_, err = b.Adjust(ctx, pgstore.BooksAdjustment{Section: "payouts", OrderID: "outside-1",
		Amount: decimal.RequireFromString("3.3"), Actor: "alice", Note: "made by hand in the dashboard: booked as a loss"})
	if err != nil {
		log.Fatal(err)
	}
	sum, err = b.Check(ctx, func(it pgstore.BooksItem) error {
		fmt.Println(it.Class, it.OrderID, it.Delta, it.Adjusted.Decimal)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("drift:", sum.Drift, "clean:", sum.Clean())
	// Output:
	// provider_only outside-1 3.3
	// drift: 1 clean: false
	// adjusted outside-1 0 3.3
	// drift: 0 clean: true
}
