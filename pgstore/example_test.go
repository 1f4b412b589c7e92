package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// These Examples run against the bundled fake API and the database at
// $DATABASE_URL (the package's tests point it at their own PostgreSQL).

// exampleSecret is the webhook secret of the Examples; a real one comes
// from `openssl rand -base64 32`, kept out of the code.
var exampleSecret = []byte("example-secret-do-not-use-32byte")

// newPayment creates a payment at the fake for a fresh orderId.
func newPayment(ctx context.Context, fake *cryptopaytest.Server) *cryptopay.Payment {
	p, err := fake.Client().CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25"), PlatformFeeByUser: true, Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-" + rand.Text(),
	})
	if err != nil {
		log.Fatal(err)
	}
	return p
}

// webhookEvent is a webhook as the API would post it.
type webhookEvent struct {
	url  string
	body []byte
}

// paidEvent has the customer pay p in full and returns the webhook the API
// would send for it.
func paidEvent(fake *cryptopaytest.Server, p *cryptopay.Payment) webhookEvent {
	if err := fake.Pay(p.ID, p.PayAmount); err != nil {
		log.Fatal(err)
	}
	url, body, err := cryptopaytest.NewWebhookPayload("https://shop.example/hooks/cryptopay", exampleSecret, p, cryptopay.PaymentPaid)
	if err != nil {
		log.Fatal(err)
	}
	return webhookEvent{url, body}
}

// deliver posts ev to h and returns the answer's status code.
func deliver(h http.Handler, ev webhookEvent) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ev.url, bytes.NewReader(ev.body)))
	return rec.Code
}

// Each replica of a webhook endpoint opens its own pool and store on the
// same table: a delivery that lands on two replicas reaches the callback
// once.
func ExampleNewDedupeStore() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.NewDedupeStore(pool, pgstore.WithCreateTable())
	if err != nil {
		log.Fatal(err)
	}
	fake := cryptopaytest.NewServer()
	defer fake.Close()

	var calls atomic.Int32
	replica := func(store webhook.DedupeStore) http.Handler {
		h, err := webhook.NewHandler(webhook.Config{
			Secret: exampleSecret,
			Client: fake.Client(), // re-read every event through the API
			Dedupe: store,
			OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
				calls.Add(1) // idempotent work only: "mark order paid"
				return nil
			},
		})
		if err != nil {
			log.Fatal(err)
		}
		return h
	}
	other, err := pgstore.NewDedupeStore(pool) // replica B's own store on the same table
	if err != nil {
		log.Fatal(err)
	}
	a, b := replica(store), replica(other)

	event := paidEvent(fake, newPayment(ctx, fake))
	fmt.Println("replica A answers", deliver(a, event))
	fmt.Println("replica B answers", deliver(b, event))
	fmt.Println("callbacks:", calls.Load())
	// Output:
	// replica A answers 200
	// replica B answers 200
	// callbacks: 1
}

// Transactional delivery: the order update and the event's done mark
// commit together, so a crash at any point neither loses the event nor
// applies it twice.
func ExampleOnPayment() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.NewDedupeStore(pool, pgstore.WithCreateTable())
	if err != nil {
		log.Fatal(err)
	}
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	client := fake.Client()
	secret := exampleSecret
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS accounts (order_id text PRIMARY KEY, balance numeric NOT NULL)"); err != nil {
		log.Fatal(err)
	}

	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: client, // money moves on this event: re-read it through the API
		Dedupe: store,  // the same store
		OnPayment: pgstore.OnPayment(store, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
			if p.Status != cryptopay.PaymentPaid {
				return nil
			}
			// Credit what reached the merchant's balance: MerchantAmount
			// (paid minus the fee). PayAmount includes the fee when the
			// customer bears it, so crediting it would credit the fee too.
			if !p.MerchantAmount.Valid {
				return errors.New("paid payment without merchantAmount; redeliver")
			}
			// Not idempotent on its own, and it need not be.
			_, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $1 WHERE order_id = $2",
				p.MerchantAmount.Decimal.String(), p.OrderID)
			return err
		}),
	})
	if err != nil {
		log.Fatal(err)
	}

	payment := newPayment(ctx, fake)
	if _, err := pool.Exec(ctx, "INSERT INTO accounts VALUES ($1, 0)", payment.OrderID); err != nil {
		log.Fatal(err)
	}
	event := paidEvent(fake, payment)
	fmt.Println(deliver(h, event), deliver(h, event)) // delivered twice, credited once
	var balance decimal.Decimal
	if err := pool.QueryRow(ctx, "SELECT balance::text FROM accounts WHERE order_id = $1", payment.OrderID).Scan(&balance); err != nil {
		log.Fatal(err)
	}
	fmt.Println("credited:", balance)
	// Output:
	// 200 200
	// credited: 25
}

// A bus per replica on the same channel: a webhook received by one replica
// wakes the waits of all of them. Here the wait on replica A polls only
// every hour, and ends as soon as replica B's handler has the event.
func ExampleNewWakeupBus() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	fake := cryptopaytest.NewServer()
	defer fake.Close()

	replica := func() *cryptopay.Client {
		bus, err := pgstore.NewWakeupBus(pool)
		if err != nil {
			log.Fatal(err)
		}
		return fake.Client(cryptopay.WithWakeupBus(bus))
	}
	a, b := replica(), replica()
	defer a.Close() // ends the subscription
	defer b.Close()
	// The webhook handler built with B publishes a hint for each event.
	hooks, err := webhook.NewHandler(webhook.Config{Secret: exampleSecret, Client: b})
	if err != nil {
		log.Fatal(err)
	}

	payment := newPayment(ctx, fake)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	subscribed := make(chan struct{})
	firstRead := sync.OnceFunc(func() { close(subscribed) }) // it follows the bus subscription
	done := make(chan *cryptopay.Payment)
	go func() {
		p, err := a.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{
			ID: payment.ID, PollInterval: time.Hour,
			OnStatusChange: func(*cryptopay.Payment) { firstRead() },
		})
		if err != nil {
			log.Fatal(err)
		}
		done <- p
	}()
	<-subscribed
	event := paidEvent(fake, payment)
	fmt.Println("replica B answers", deliver(hooks, event))
	fmt.Println("the wait on replica A ends:", (<-done).Status)
	// Output:
	// replica B answers 200
	// the wait on replica A ends: paid
}
