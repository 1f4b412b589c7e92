package pgstore_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"

	"github.com/cryptopay/cryptopay-go/webhook"
)

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
	h, err := webhook.NewHandler(webhook.Config{
		Secret: []byte(os.Getenv("WEBHOOK_SECRET")),
		Dedupe: store,
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			log.Printf("payment %s is %s", p.ID, p.Status) // idempotent work only
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/hooks/cryptopay", h)
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
	client, err := cryptopay.NewClient(os.Getenv("CRYPTOPAY_URL"), os.Getenv("CRYPTOPAY_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := webhook.NewHandler(webhook.Config{
		Secret: []byte(os.Getenv("WEBHOOK_SECRET")),
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
	http.Handle("/hooks/cryptopay", h)
}

// A bus per replica on the same channel: a webhook received by one replica
// wakes the waits of all of them.
func ExampleNewWakeupBus() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	bus, err := pgstore.NewWakeupBus(pool)
	if err != nil {
		log.Fatal(err)
	}
	client, err := cryptopay.NewClient(os.Getenv("CRYPTOPAY_URL"), os.Getenv("CRYPTOPAY_API_KEY"), cryptopay.WithWakeupBus(bus))
	if err != nil {
		log.Fatal(err)
	}
	// The webhook handler built with this client publishes a hint for each
	// event; WaitForPayment on any replica's client wakes up on it.
	_ = client
}
