// Command replicas runs three replicas of a merchant's webhook endpoint on
// one Redis, in one process, against the cryptopaytest fake API:
//
//	go run ./examples/replicas -redis 127.0.0.1:6379 -events 20
//
// (from the redisstore directory; REDIS_ADDR also sets the address). It
// shows two things:
//
//   - Shared dedupe: each payment's "paid" event reaches the fake's
//     round-robin load balancer once and, on top of that, every replica
//     directly; the callback still runs once per payment across the three.
//   - Cross-replica wake-up: a WaitForPayment on replica A, polling only
//     once a minute, ends a few milliseconds after the webhook lands on
//     replica B, because B publishes a hint on the Redis bus.
//
// In production each replica is its own process with the same code: one
// redis.Client, one redisstore.DedupeStore, one redisstore.WakeupBus, a
// cryptopay.Client built WithWakeupBus, and a webhook.Handler.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
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

func main() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	flag.StringVar(&addr, "redis", addr, "Redis address (host:port); REDIS_ADDR sets the default")
	events := flag.Int("events", 20, "payments to create and pay")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, addr, *events, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
}

// secret signs the webhook URLs; every replica must share it. A real
// service reads 32 random bytes from its secret store.
var secret = []byte("example-only-secret-0123456789abcdef")

// replica is one instance of the merchant's service.
type replica struct {
	name      string
	client    *cryptopay.Client
	url       string
	delivered atomic.Int64
	landed    sync.Map // payment id -> time the webhook reached the handler
}

func run(ctx context.Context, addr string, events int, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fake, err := cryptopaytest.StartServer()
	if err != nil {
		return err
	}
	defer fake.Close()

	// The prefix keeps this demo's keys apart from anything else in Redis.
	prefix := fmt.Sprintf("cryptopay-example:%d:", time.Now().UnixNano())
	var replicas []*replica
	for _, name := range []string{"A", "B", "C"} {
		r, shutdown, err := startReplica(ctx, name, addr, prefix, fake)
		if err != nil {
			return err
		}
		defer shutdown()
		replicas = append(replicas, r)
	}
	lb, err := serve(roundRobin(replicas))
	if err != nil {
		return err
	}
	defer lb.Close()
	lbURL := "http://" + lb.Addr().String()

	if err := showDedupe(ctx, fake, replicas, lbURL, events, out); err != nil {
		return err
	}
	return showWakeup(ctx, fake, replicas, out)
}

// startReplica builds one replica: its own Redis client, store, bus,
// API client and webhook handler, serving on a loopback port.
func startReplica(ctx context.Context, name, addr, prefix string, fake *cryptopaytest.Server) (*replica, func(), error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("cannot reach Redis at %s (start one, or pass -redis): %w", addr, err)
	}
	store, err := redisstore.NewDedupeStore(rdb, redisstore.WithKeyPrefix(prefix+"dedupe:"))
	if err != nil {
		return nil, nil, err
	}
	bus, err := redisstore.NewWakeupBus(rdb, redisstore.WithChannel(prefix+"wakeup"))
	if err != nil {
		return nil, nil, err
	}
	r := &replica{name: name, client: fake.Client(cryptopay.WithWakeupBus(bus))}
	hook, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: r.client,
		Dedupe: store,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			r.delivered.Add(1) // the merchant's "mark order paid" goes here
			return nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	ln, err := serve(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if id := paymentID(req); id != "" {
			r.landed.LoadOrStore(id, time.Now())
		}
		hook.ServeHTTP(w, req)
	}))
	if err != nil {
		return nil, nil, err
	}
	r.url = "http://" + ln.Addr().String()
	return r, func() { _ = r.client.Close(); _ = ln.Close(); _ = rdb.Close() }, nil
}

// paymentID peeks at the body's paymentId, for timing only.
func paymentID(req *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(body), `"paymentId":"`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// serve runs h on a loopback port until the listener is closed.
func serve(h http.Handler) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln, nil
}

// roundRobin is the load balancer in front of the replicas.
func roundRobin(replicas []*replica) http.Handler {
	var next atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := replicas[next.Add(1)%uint64(len(replicas))]
		code, body, err := post(req.Context(), r.url+req.URL.RequestURI(), req.Body)
		if err != nil {
			http.Error(w, "replica unreachable", http.StatusBadGateway)
			return
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	})
}

func post(ctx context.Context, target string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, out, err
}

func createPayment(ctx context.Context, client *cryptopay.Client, webhookBase, orderID string) (*cryptopay.Payment, error) {
	hookURL, err := webhook.URL(webhookBase+"/hooks/cryptopay", secret, orderID)
	if err != nil {
		return nil, err
	}
	return client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.NewFromInt(25), Currency: "usdt", Network: "tron",
		CustomerID: "customer-1", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: hookURL,
	})
}

// statusBody reads the payment as the API writes it: the body its
// webhook carries.
func statusBody(ctx context.Context, fake *cryptopaytest.Server, id string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fake.URL+"/v1/payment/"+id+"/status", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", fake.APIKey)
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// showDedupe pays events payments; each "paid" event goes through the load
// balancer and, as a burst of retries would, straight to every replica too.
func showDedupe(ctx context.Context, fake *cryptopaytest.Server, replicas []*replica, lbURL string, events int, out io.Writer) error {
	fmt.Fprintf(out, "Shared dedupe: %d payments; each paid event is sent through the load balancer and to all %d replicas at once.\n", events, len(replicas))
	for i := range events {
		orderID := fmt.Sprintf("order-%d-%d", time.Now().UnixNano(), i)
		p, err := createPayment(ctx, replicas[0].client, lbURL, orderID)
		if err != nil {
			return err
		}
		if err := fake.Pay(p.ID, p.PayAmount); err != nil {
			return err
		}
		body, err := statusBody(ctx, fake, p.ID)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		for _, r := range replicas {
			hookURL, err := webhook.URL(r.url+"/hooks/cryptopay", secret, orderID)
			if err != nil {
				return err
			}
			// 200 (delivered or duplicate) or 503 (another replica holds
			// the claim right now): either way the callback runs once.
			wg.Go(func() { _, _, _ = post(ctx, hookURL, bytes.NewReader(body)) })
		}
		wg.Wait()
	}
	if err := fake.WaitWebhooksIdle(ctx); err != nil {
		return err
	}
	var total int64
	for _, r := range replicas {
		n := r.delivered.Load()
		total += n
		fmt.Fprintf(out, "  replica %s ran the callback %d times\n", r.name, n)
	}
	fmt.Fprintf(out, "  callbacks in all: %d for %d payments\n", total, events)
	if total != int64(events) {
		return fmt.Errorf("dedupe failed: %d callbacks for %d payments", total, events)
	}
	return nil
}

// showWakeup waits on replica A (polling once a minute) for a payment
// whose webhook goes to replica B.
func showWakeup(ctx context.Context, fake *cryptopaytest.Server, replicas []*replica, out io.Writer) error {
	a, b := replicas[0], replicas[1]
	orderID := fmt.Sprintf("order-wakeup-%d", time.Now().UnixNano())
	p, err := createPayment(ctx, a.client, b.url, orderID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Cross-replica wake-up: replica %s waits for payment %s, polling once a minute; its webhook goes to replica %s.\n", a.name, p.ID, b.name)

	firstRead := make(chan struct{})
	var once sync.Once
	type result struct {
		p   *cryptopay.Payment
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		got, err := a.client.WaitForPayment(waitCtx, cryptopay.WaitForPaymentParams{ID: p.ID, PollInterval: time.Minute, MaxPollInterval: time.Minute, OnStatusChange: func(*cryptopay.Payment) { once.Do(func() { close(firstRead) }) }})
		done <- result{got, err, time.Now()}
	}()
	select {
	case <-firstRead:
	case r := <-done:
		return fmt.Errorf("the wait ended before the payment was paid: %v", r.err)
	}
	// The wait has read "waiting" and sleeps for a minute. Pay now.
	if err := fake.Pay(p.ID, p.PayAmount); err != nil {
		return err
	}
	r := <-done
	if r.err != nil {
		return fmt.Errorf("the wait on replica %s did not end (is the bus connected?): %w", a.name, r.err)
	}
	landedAt, ok := b.landed.Load(p.ID)
	if !ok {
		return fmt.Errorf("the webhook never reached replica %s", b.name)
	}
	fmt.Fprintf(out, "  replica %s saw %s %v after the webhook landed on replica %s\n",
		a.name, r.p.Status, r.at.Sub(landedAt.(time.Time)).Round(100*time.Microsecond), b.name)
	return nil
}

var httpClient = &http.Client{Timeout: 10 * time.Second}
