package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// docs/payment-tracker.md, end to end: the order and its payment are
// tracked in one transaction; the payment's webhook wakes the tracker,
// which reads the payment through the API and credits the order once, in
// the transaction that records the change. The API is the bundled fake,
// which plays the customer too; the database is $DATABASE_URL.
func ExampleTracker_Track() {
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

	credited := make(chan string, 4)
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{
		Pool:        pool,
		Client:      client,
		Table:       "example_payments_" + strings.ToLower(rand.Text()[:8]),
		CreateTable: true, // or run tr.DDL() in a migration
		OnChange: func(ctx context.Context, tx pgx.Tx, c *pgstore.PaymentChange) error {
			// ... credit the order in tx ...
			credited <- fmt.Sprintf("order %s: %q -> %s, late %v", c.OrderID[:5], c.From, c.To, c.Late)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	secret := []byte("example-secret-do-not-use-32byte")
	hooks, err := paymentWebhooks(tr, client, secret)
	if err != nil {
		log.Fatal(err)
	}
	shop := httptest.NewServer(hooks)
	defer shop.Close()

	go tr.Run(ctx) // on every replica: they share the table
	orderID := "shop-" + rand.Text()
	hookURL, err := webhook.URL(shop.URL, secret, orderID)
	if err != nil {
		log.Fatal(err)
	}
	p, err := recordOrder(ctx, pool, tr, client, orderID, decimal.RequireFromString("25"), hookURL)
	if err != nil {
		log.Fatal(err)
	}
	_ = fake.Pay(p.ID, p.PayAmount) // the customer pays
	fmt.Println(<-credited)
	// Output:
	// order shop-: "waiting" -> paid, late false
}

// recordOrder is step 2 of docs/payment-tracker.md: create the payment,
// then record the order and track its payment in one transaction; a lost
// create answer is tracked by orderId alone.
func recordOrder(ctx context.Context, pool *pgxpool.Pool, tr *pgstore.Tracker, client *cryptopay.Client,
	orderID string, amount decimal.Decimal, hookURL string) (*cryptopay.Payment, error) {
	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: amount, Currency: "usdt", Network: "tron",
		CustomerID: "user-1", CustomerIP: "203.0.113.7",
		OrderID:    orderID, // unique per order, for ever
		WebhookURL: hookURL, // webhook.URL(base, secret, orderID)
	})
	lost := errors.Is(err, cryptopay.ErrOutcomeUnknown)
	if err != nil && !lost {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... insert the order in tx ...
		if lost {
			_, err := tr.TrackOrder(ctx, tx, orderID) // its first webhook gives the id
			return err
		}
		_, err := tr.Track(ctx, tx, p)
		return err
	})
	return p, err
}

// paymentWebhooks is step 3 of docs/payment-tracker.md.
func paymentWebhooks(tr *pgstore.Tracker, client *cryptopay.Client, secret []byte) (*webhook.Handler, error) {
	return webhook.NewHandler(webhook.Config{
		Secret: secret, Client: client,
		OnPayment: tr.PaymentChanged,
	})
}

// creditOrder is step 4 of docs/payment-tracker.md: the merchant's ledger
// moves by Delta on every change of the paid amount, once, in the
// tracker's transaction; the goods ship on the status.
func creditOrder(ctx context.Context, tx pgx.Tx, c *pgstore.PaymentChange) error {
	// Book the money: every change of the paid amount comes here once,
	// whatever the status (waiting, confirming and locked included).
	if d := c.Delta(); !d.IsZero() {
		_, err := tx.Exec(ctx, `INSERT INTO ledger (order_id, seq, amount, late) VALUES ($1, $2, $3, $4)`,
			c.OrderID, c.Seq, d, c.Late)
		if err != nil {
			return err
		}
	}
	// Ship on the status, never on the amount.
	switch {
	case c.To.IsSuccess():
		_, err := tx.Exec(ctx, `UPDATE orders SET state = 'paid', late = $2 WHERE id = $1`, c.OrderID, c.Late)
		return err
	case c.To.NeedsAction() || c.To == cryptopay.PaymentExpired:
		_, err := tx.Exec(ctx, `UPDATE orders SET state = $2 WHERE id = $1`, c.OrderID, string(c.To))
		return err
	case c.To.IsFinal(): // failed, rejected
		_, err := tx.Exec(ctx, `UPDATE orders SET state = 'cancelled' WHERE id = $1`, c.OrderID)
		return err
	}
	return nil // waiting, confirming: the money is booked, the order waits
}

// newTracker is step 1 of docs/payment-tracker.md.
func newTracker(ctx context.Context, pool *pgxpool.Pool, client *cryptopay.Client) (*pgstore.Tracker, error) {
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{
		Pool:        pool,
		Client:      client,
		CreateTable: true,          // or run tr.DDL() in a migration
		OnChange:    creditOrder,   // step 4
		Observer:    observeChange, // step 6
	})
	return tr, err
}

// observeChange is step 6 of docs/payment-tracker.md: each committed
// change, once, for metrics and alerts.
func observeChange(c pgstore.PaymentChange) {
	if c.To.NeedsAction() || c.Late {
		log.Printf("payment for order %s: %s -> %s (late %v): a person should look", c.OrderID, c.From, c.To, c.Late)
	}
}

var _ = newTracker

// An operator clears an anomaly (here: a webhook for a second payment of
// the order) with a note; the move names its actor, in the moves, never
// in the history: nothing is credited. The database is $DATABASE_URL.
func ExampleTracker_Moves() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: fake.Client(),
		Table: "example_moves_" + strings.ToLower(rand.Text()[:8]), CreateTable: true})
	if err != nil {
		log.Fatal(err)
	}
	orderID := "shop-" + rand.Text()
	if _, err := recordOrder(ctx, pool, tr, fake.Client(), orderID, decimal.RequireFromString("25"), ""); err != nil {
		log.Fatal(err)
	}
	// A webhook names another payment of this order: flagged, not followed.
	other := "00000000-0000-4000-8000-000000000001"
	if err := tr.PaymentChanged(ctx, &cryptopay.Payment{ID: other, OrderID: orderID}); err != nil {
		log.Fatal(err)
	}
	if _, err := tr.ClearAnomaly(ctx, orderID, "alice", "second payment refunded"); err != nil {
		log.Fatal(err)
	}
	moves, err := tr.Moves(ctx, orderID)
	if err != nil {
		log.Fatal(err)
	}
	history, err := tr.History(ctx, orderID)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range moves {
		fmt.Println(m.ActorID, m.Action, m.Note)
	}
	fmt.Println("recorded changes:", len(history))
	// Output:
	// alice clear_anomaly second payment refunded
	// recorded changes: 0
}
