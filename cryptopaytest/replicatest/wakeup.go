package replicatest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// WakeupRig checks and measures wake-ups across replicas on a
// cryptopay.WakeupBus: replica A waits for a payment (WaitForPayment,
// polling once a minute), the payment is paid, its webhook reaches replica
// B's handler, and the hint B's Client publishes on its bus must end A's
// wait. A round that takes 10 s fails: polling alone could not end the wait
// that soon. Use a rig from one goroutine.
type WakeupRig struct {
	srv    *cryptopaytest.Server
	a      *cryptopay.Client
	hook   *httptest.Server
	landed atomic.Int64 // unix ns of the first webhook of the round
	rounds int
}

// NewWakeupRig starts a cryptopaytest fake and replicas A and B, each a
// Client on the bus newBus returns for it (replica 0 is A, 1 is B): a new
// instance each, on its own connection to the same backing server. The
// Clients and the fake are closed when tb ends.
func NewWakeupRig(tb testing.TB, newBus func(tb testing.TB, replica int) cryptopay.WakeupBus) *WakeupRig {
	tb.Helper()
	if newBus == nil {
		tb.Fatal("replicatest: NewWakeupRig's newBus is nil")
	}
	r := &WakeupRig{srv: cryptopaytest.NewServer()}
	tb.Cleanup(r.srv.Close)
	r.a = r.srv.Client(cryptopay.WithWakeupBus(newBus(tb, 0)))
	b := r.srv.Client(cryptopay.WithWakeupBus(newBus(tb, 1)))
	tb.Cleanup(func() { _ = r.a.Close(); _ = b.Close() })
	hook, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: b})
	if err != nil {
		tb.Fatal(err)
	}
	r.hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.landed.CompareAndSwap(0, time.Now().UnixNano())
		hook.ServeHTTP(w, req)
	}))
	tb.Cleanup(r.hook.Close)
	return r
}

// Once runs one round and returns the time from the webhook reaching B's
// handler to A's wait returning the paid payment. It returns an error if
// the wait did not end within 10 s (it did not end by a wake-up), ended
// before the payment was paid, or returned another status.
func (r *WakeupRig) Once() (time.Duration, error) {
	r.landed.Store(0)
	r.rounds++
	return wakeOnce(r.a, r.srv, r.hook.URL, &r.landed, r.rounds)
}

// WakeupLatencies runs n rounds of a new WakeupRig (NewWakeupRig) and
// fails tb at the first round Once reports an error for: every wait must
// end by a wake-up. It returns the n latencies, for Percentile.
func WakeupLatencies(tb testing.TB, newBus func(tb testing.TB, replica int) cryptopay.WakeupBus, n int) []time.Duration {
	tb.Helper()
	rig := NewWakeupRig(tb, newBus)
	out := make([]time.Duration, 0, n)
	for i := range n {
		d, err := rig.Once()
		if err != nil {
			tb.Fatalf("wake-up %d: %v", i, err)
		}
		out = append(out, d)
	}
	return out
}

func wakeOnce(a *cryptopay.Client, srv *cryptopaytest.Server, hookBase string, landed *atomic.Int64, i int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	orderID := fmt.Sprintf("wake-%d-%d", time.Now().UnixNano(), i)
	hookURL, err := webhook.URL(hookBase+"/hooks/cryptopay", secret, orderID)
	if err != nil {
		return 0, err
	}
	p, err := a.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: decimal.NewFromInt(5), Currency: "usdt", Network: "tron",
		CustomerID: "cust", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: hookURL,
	})
	if err != nil {
		return 0, err
	}
	firstRead := make(chan struct{}, 1)
	type result struct {
		p   *cryptopay.Payment
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		got, err := a.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: p.ID, PollInterval: time.Minute, MaxPollInterval: time.Minute, OnStatusChange: func(*cryptopay.Payment) {
			select {
			case firstRead <- struct{}{}:
			default:
			}
		}})
		done <- result{got, err, time.Now()}
	}()
	select {
	case <-firstRead:
	case r := <-done:
		return 0, fmt.Errorf("the wait ended before the payment was paid: %v", r.err)
	}
	if err := srv.Pay(p.ID, p.PayAmount); err != nil {
		return 0, err
	}
	r := <-done
	switch {
	case r.err != nil:
		return 0, fmt.Errorf("the wait on replica A did not end by a wake-up: %w", r.err)
	case r.p.Status != cryptopay.PaymentPaid:
		return 0, fmt.Errorf("the wait returned %s", r.p.Status)
	case landed.Load() == 0:
		return 0, fmt.Errorf("the webhook never reached replica B")
	}
	return r.at.Sub(time.Unix(0, landed.Load())), nil
}

// Percentile returns the p-th percentile (0 < p <= 100) of ds by nearest
// rank: the least value with at least p% of ds at or below it; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[min(max(i, 0), len(s)-1)]
}
