package redisstore_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/redisstore"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Every replica builds its own store on the shared Redis and hands it to
// its webhook.Handler: an event delivered to two replicas reaches the
// callback once.
func ExampleNewDedupeStore() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()

	store, err := redisstore.NewDedupeStore(rdb,
		redisstore.WithLease(2*time.Minute), // above the slowest callback
		redisstore.WithKeyPrefix("shop:cryptopay:"),
	)
	if err != nil {
		log.Fatal(err)
	}
	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	hook, err := webhook.NewHandler(webhook.Config{
		Secret: []byte(os.Getenv("CRYPTOPAY_WEBHOOK_SECRET")),
		Client: client,
		Dedupe: store,
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			// Idempotent: "mark order paid", never "add to balance".
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/hooks/cryptopay", hook)
}

// A bus carries "this payment changed" hints between replicas: the
// webhook.Handler of the replica that receives a webhook publishes one, and
// every Client on the bus wakes its waits for that payment, which re-read
// it through the API (a hint is never a status).
func ExampleNewWakeupBus() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()

	bus, err := redisstore.NewWakeupBus(rdb, redisstore.WithChannel("shop:cryptopay:wakeup"))
	if err != nil {
		log.Fatal(err)
	}
	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"),
		cryptopay.WithWakeupBus(bus))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close() // ends the subscription

	// Polls every 30 s at most, but ends within milliseconds of the webhook
	// landing on any replica.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	p, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "6f1c2b9e-4a2d-4c8e-9a57-2f1d3e4b5c6d"})
	if err != nil {
		log.Fatal(err)
	}
	log.Println(p.Status)
}
