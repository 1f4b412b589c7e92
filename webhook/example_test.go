package webhook_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

func ExampleURL() {
	// In production: 32 bytes from crypto/rand, kept in a secret store and
	// read from the environment. Fixed here so the output is stable.
	secret := []byte("example-secret-do-not-use-32byte")

	hookURL, err := webhook.URL("https://shop.example.com/webhooks/cryptopay", secret, "order-1042")
	if err != nil {
		log.Fatal(err) // a short secret, an empty or non-UTF-8 orderID, or a bad base URL
	}
	fmt.Println(hookURL) // pass it as CreatePaymentParams.WebhookURL or CreatePayoutParams.WebhookURL

	// Output:
	// https://shop.example.com/webhooks/cryptopay?token=ZfO2k01hbhNSkSaXYyNVhwvUge283BscFEU3zezR06w
}

// A merchant's webhook endpoint, end to end on the bundled fake server: the
// payment is created with a signed webhook URL, the customer pays, the fake
// posts the event, and the callback gets the payment as the API reports it.
func ExampleNewHandler() {
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	client := fake.Client()
	secret := []byte("example-secret-do-not-use-32byte")

	paid := make(chan *cryptopay.Payment, 1)
	handler, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: client, // re-read every event through the API: never trust the body
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			// Called once per (payment, status). Must be idempotent; return an
			// error to have the event redelivered.
			if p.Status.IsSuccess() { // paid or paid_over; not expired, failed or paid_partial
				paid <- p
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/cryptopay", handler)
	shop := httptest.NewServer(mux) // your server; loopback here
	defer shop.Close()

	orderID := "order-1042"
	hookURL, err := webhook.URL(shop.URL+"/webhooks/cryptopay", secret, orderID)
	if err != nil {
		log.Fatal(err)
	}
	payment, err := client.CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: hookURL,
	})
	if err != nil {
		log.Fatal(err)
	}

	_ = fake.Pay(payment.ID, payment.PayAmount) // the customer pays
	p := <-paid
	fmt.Println(p.OrderID, p.Status, p.PaidAmount.Decimal)
	// Output:
	// order-1042 paid 25
}

// kv is the part of a Redis client a shared DedupeStore needs (go-redis
// has these as SetNX, Get, Set and Del). memKV below stands in for Redis.
type kv interface {
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	Get(ctx context.Context, key string) (string, error)
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	Del(ctx context.Context, key string) error
}

// redisDedupe is a DedupeStore that replicas share.
type redisDedupe struct{ kv kv }

func (s redisDedupe) Claim(ctx context.Context, key string) (webhook.DedupeClaim, error) {
	// A lease, not a lock: a replica that dies mid-callback frees it.
	ok, err := s.kv.SetNX(ctx, "cryptopay:webhook:"+key, "busy", time.Minute)
	if err != nil || ok {
		return webhook.DedupeClaimed, err
	}
	v, err := s.kv.Get(ctx, "cryptopay:webhook:"+key)
	if err != nil {
		return 0, err
	}
	if v == "done" {
		return webhook.DedupeSeen, nil
	}
	return webhook.DedupeInProgress, nil
}

func (s redisDedupe) Complete(ctx context.Context, key string) error {
	// Keep it at least as long as the sender retries (days).
	return s.kv.Set(ctx, "cryptopay:webhook:"+key, "done", 72*time.Hour)
}

func (s redisDedupe) Release(ctx context.Context, key string) error {
	return s.kv.Del(ctx, "cryptopay:webhook:"+key)
}

// Several replicas of a webhook endpoint share one DedupeStore, here a
// Redis-like key-value store (the SDK bundles no Redis client).
func ExampleDedupeStore() {
	shared := redisDedupe{kv: newMemKV()} // redisDedupe{kv: yourRedisClient}

	handler, err := webhook.NewHandler(webhook.Config{
		Secret:    []byte("example-secret-do-not-use-32byte"),
		OnPayment: func(context.Context, *cryptopay.Payment) error { return nil },
		Dedupe:    shared,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = handler

	ctx := context.Background()
	c1, _ := shared.Claim(ctx, "payment/1/paid")
	c2, _ := shared.Claim(ctx, "payment/1/paid") // another replica, same event
	_ = shared.Complete(ctx, "payment/1/paid")
	c3, _ := shared.Claim(ctx, "payment/1/paid") // a redelivery later
	fmt.Println(c1 == webhook.DedupeClaimed, c2 == webhook.DedupeInProgress, c3 == webhook.DedupeSeen)
	// Output:
	// true true true
}

// memKV is an in-memory stand-in for Redis (expiry ignored).
type memKV struct {
	mu sync.Mutex
	m  map[string]string
}

func newMemKV() *memKV { return &memKV{m: map[string]string{}} }

func (k *memKV) SetNX(_ context.Context, key, value string, _ time.Duration) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.m[key]; ok {
		return false, nil
	}
	k.m[key] = value
	return true, nil
}

func (k *memKV) Get(_ context.Context, key string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key], nil
}

func (k *memKV) Set(_ context.Context, key, value string, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = value
	return nil
}

func (k *memKV) Del(_ context.Context, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
	return nil
}

// A MemoryDedupeStore is configured by its fields; the zero value takes the
// defaults. It dedupes within one process: replicas share a redisstore or
// pgstore store instead.
func ExampleMemoryDedupeStore() {
	store := &webhook.MemoryDedupeStore{MaxEntries: 10_000, TTL: 24 * time.Hour}
	ctx := context.Background()
	key := "payment/4f0c6d1e-8a43-4a53-9f0b-1d2e3c4b5a69/paid"

	first, _ := store.Claim(ctx, key)
	_ = store.Complete(ctx, key) // the callback succeeded
	again, _ := store.Claim(ctx, key)
	fmt.Println(first == webhook.DedupeClaimed, again == webhook.DedupeSeen, store.Len())
	// Output: true true 1
}
