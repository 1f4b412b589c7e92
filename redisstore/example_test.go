package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/redisstore"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// These Examples run against the bundled fake API and the Redis at
// $REDIS_ADDR (the package's tests start one and point it there).

// Every replica builds its own store on the shared Redis and hands it to
// its webhook.Handler: an event delivered to two replicas reaches the
// callback once.
func ExampleNewDedupeStore() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer rdb.Close()

	store, err := redisstore.NewDedupeStore(rdb,
		redisstore.WithLease(2*time.Minute), // above the slowest callback
		redisstore.WithKeyPrefix("shop:cryptopay:"),
	)
	if err != nil {
		log.Fatal(err)
	}
	fake := cryptopaytest.NewServer() // in production: cryptopay.NewClient(baseURL, apiKey)
	defer fake.Close()
	client := fake.Client()
	secret := []byte("example-secret-do-not-use-32byte") // from CRYPTOPAY_WEBHOOK_SECRET
	var calls atomic.Int32
	hook, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: client,
		Dedupe: store,
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			// Idempotent: "mark order paid", never "add to balance".
			calls.Add(1)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/cryptopay", hook)

	// Replica B: its own store on the same Redis and prefix.
	storeB, err := redisstore.NewDedupeStore(rdb, redisstore.WithLease(2*time.Minute), redisstore.WithKeyPrefix("shop:cryptopay:"))
	if err != nil {
		log.Fatal(err)
	}
	hookB, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: client, Dedupe: storeB,
		OnPayment: func(context.Context, *cryptopay.Payment) error { calls.Add(1); return nil }})
	if err != nil {
		log.Fatal(err)
	}

	// The customer pays; the same event reaches both replicas.
	ctx := context.Background()
	p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = fake.Pay(p.ID, p.PayAmount)
	url, body, err := cryptopaytest.NewWebhookPayload("https://shop.example/hooks/cryptopay", secret, p, cryptopay.PaymentPaid)
	if err != nil {
		log.Fatal(err)
	}
	for _, replica := range []http.Handler{mux, hookB} {
		rec := httptest.NewRecorder()
		replica.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, url, bytes.NewReader(body)))
		fmt.Println("answer:", rec.Code)
	}
	fmt.Println("callbacks:", calls.Load())
	// Output:
	// answer: 200
	// answer: 200
	// callbacks: 1
}

// A bus carries "this payment changed" hints between replicas: the
// webhook.Handler of the replica that receives a webhook publishes one, and
// every Client on the bus wakes its waits for that payment, which re-read
// it through the API (a hint is never a status). Here the webhook lands on
// replica B, and the wait on replica A, which polls only every hour, ends
// at once.
func ExampleNewWakeupBus() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer rdb.Close()
	fake := cryptopaytest.NewServer() // in production: cryptopay.NewClient(baseURL, apiKey, ...)
	defer fake.Close()

	replica := func() *cryptopay.Client {
		bus, err := redisstore.NewWakeupBus(rdb, redisstore.WithChannel("shop:cryptopay:wakeup"))
		if err != nil {
			log.Fatal(err)
		}
		client := fake.Client(cryptopay.WithWakeupBus(bus))
		return client
	}
	clientA, clientB := replica(), replica()
	defer clientA.Close() // ends the subscription
	defer clientB.Close()

	secret := []byte("example-secret-do-not-use-32byte")
	hookB, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: clientB})
	if err != nil {
		log.Fatal(err)
	}
	shopB := httptest.NewServer(hookB) // where the fake posts the payment's webhooks
	defer shopB.Close()
	hookURL, err := webhook.URL(shopB.URL, secret, "order-2")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	payment, err := clientA.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-2", WebhookURL: hookURL,
	})
	if err != nil {
		log.Fatal(err)
	}

	subscribed := make(chan struct{})
	firstRead := sync.OnceFunc(func() { close(subscribed) }) // it follows the bus subscription
	done := make(chan *cryptopay.Payment)
	go func() {
		p, err := clientA.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{
			ID: payment.ID, PollInterval: time.Hour,
			OnStatusChange: func(*cryptopay.Payment) { firstRead() },
		})
		if err != nil {
			log.Fatal(err)
		}
		done <- p
	}()
	<-subscribed
	_ = fake.Pay(payment.ID, payment.PayAmount) // the webhook goes to replica B
	fmt.Println("the wait on replica A ends:", (<-done).Status)
	// Output: the wait on replica A ends: paid
}
