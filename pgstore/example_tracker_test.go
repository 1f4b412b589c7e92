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

	if err := startTracker(ctx, tr); err != nil {
		log.Fatal(err)
	}
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

// startTracker is step 1 of docs/payment-tracker.md: before the shop takes
// orders, the tables are checked; the workers never stop in silence.
func startTracker(ctx context.Context, tr *pgstore.Tracker) error {
	if err := tr.CheckSchema(ctx); err != nil {
		return err // the tables are missing or out of date: take no orders
	}
	go func() { // on every replica: they share the table
		if err := tr.Run(ctx); ctx.Err() == nil {
			log.Fatal("the tracker stopped: ", err) // a bad config or the tables gone: take no orders
		}
	}()
	return nil
}

// recordOrder is step 2 of docs/payment-tracker.md: record the order and
// track it by its orderId before the payment is created, then create the
// payment and give it to the tracker. No payment exists at the API that the
// tracker does not follow: if tracking fails, nothing is created.
func recordOrder(ctx context.Context, pool *pgxpool.Pool, tr *pgstore.Tracker, client *cryptopay.Client,
	orderID string, amount decimal.Decimal, hookURL string) (*cryptopay.Payment, error) {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... insert the order in tx ...
		_, err := tr.TrackOrder(ctx, tx, orderID) // fails (no tables, no database): nothing is created
		return err
	})
	if err != nil {
		return nil, err
	}
	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: amount, Currency: "usdt", Network: "tron",
		CustomerID: "user-1", CustomerIP: "203.0.113.7",
		OrderID:    orderID, // unique per order, for ever
		WebhookURL: hookURL, // webhook.URL(base, secret, orderID)
	})
	switch {
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		return nil, err // tracked by orderId: the payment's first webhook gives its id
	case err != nil: // refused: nothing was created
		untrack := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			// ... cancel the order in tx ...
			_, err := tr.Untrack(ctx, tx, orderID)
			return err
		})
		return nil, errors.Join(err, untrack)
	}
	// The payment's amount and expiry start its schedule. If this fails, it
	// is still tracked by its orderId (its first webhook gives the id).
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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
		OnRefused: tr.WebhookRefused, // a wrong secret shows in tr.Health, the console and the CLI
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
