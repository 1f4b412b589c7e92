package cryptopaytest

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// okTransport answers every webhook 200 without a network.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
}

const hookedPaymentBody = `{"amount":1,"platformFeeByUser":false,"currency":"usdt","network":"tron",
	"customerId":"c","customerIp":"127.0.0.1","orderId":"o","webhookUrl":"http://127.0.0.1:9/hook"}`

// scaleFake is a fake with a network-free webhook client, for measuring
// memory at scale.
type scaleFake struct {
	s      *Server
	ids    []string // payments that send webhooks
	hooked int      // how many such payments (0: 1,000)
}

func newScaleFake(t testing.TB, opts ...ServerOption) *scaleFake {
	opts = append([]ServerOption{WithWebhookClient(&http.Client{Transport: okTransport{}})}, opts...)
	return &scaleFake{s: newStateT(t, opts...)}
}

// addPayments creates n payments without webhooks through the route.
func (f *scaleFake) addPayments(t testing.TB, n int) {
	rec := httptest.NewRecorder()
	for range n {
		rec.Body.Reset()
		f.s.createPayment(rec, []byte(internalPaymentBody))
	}
	require.Equal(t, 201, rec.Code)
}

// deliver makes n webhook deliveries, spread over the hooked payments
// (created on first use), by moving them between confirming and locked,
// and waits until all are made.
func (f *scaleFake) deliver(t testing.TB, n int) {
	for len(f.ids) < cmp.Or(f.hooked, 1000) {
		f.ids = append(f.ids, mustCreatePayment(t, f.s, hookedPaymentBody))
	}
	for i := range n {
		id := f.ids[i%len(f.ids)]
		st := cryptopay.PaymentConfirming
		if cur, _ := f.s.PaymentStatus(id); cur == st {
			st = cryptopay.PaymentLocked
		}
		require.NoError(t, f.s.SetPaymentStatus(id, st))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, f.s.WaitWebhooksIdle(ctx))
}

// TestMemoryBoundedAtScale counts heap bytes: a payment costs a fixed
// amount, and deliveries past the log's size cost nothing that stays (the
// log is a ring, queues drain, workers end). Under -race it checks the
// counts only (see raceDetector), which a smaller run proves as well:
// 500 payments, and 1,500 deliveries to 250 payments through a log of 250.
func TestMemoryBoundedAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20,000 payments and makes 30,000 deliveries")
	}
	payments, logSize, round, hooked := 20000, 1000, 10000, 1000
	if raceDetector {
		payments, logSize, round, hooked = 500, 250, 500, 250
	}
	f := newScaleFake(t, WithWebhookLog(logSize))
	f.hooked = hooked
	goroutines := runtime.NumGoroutine()
	h0 := heapInUse()
	f.addPayments(t, payments)
	h1 := heapInUse()
	perPayment := float64(h1-h0) / float64(payments)
	f.deliver(t, round) // fills the ring
	h2 := heapInUse()
	f.deliver(t, 2*round)
	h3 := heapInUse()
	perDelivery := float64(h3-h2) / float64(2*round)
	t.Logf("%.0f B per payment; %.1f B per delivery once the log is full (log of %d: %.0f KB)",
		perPayment, perDelivery, logSize, float64(h2-h1)/1024)

	if !raceDetector {
		assert.Less(t, perPayment, 1200.0, "heap bytes per payment")
		assert.Less(t, perDelivery, 16.0, "heap bytes that stay per delivery once the log is full")
	}
	assert.Equal(t, 3*round, f.s.WebhooksRecorded())
	assert.Len(t, f.s.Webhooks(), logSize)
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "delivery workers end when the queue is empty")
}

// BenchmarkFakeAtScale builds a fake with 1,000,000 payments and makes
// 100,000 webhook deliveries, and reports the live heap. Run it once:
//
//	go test ./cryptopaytest -run '^$' -bench FakeAtScale -benchtime 1x -benchmem
func BenchmarkFakeAtScale(b *testing.B) {
	const payments, deliveries = 1000000, 100000
	for range b.N {
		b.StopTimer()
		f := newScaleFake(b)
		h0 := heapInUse()
		b.StartTimer()
		f.addPayments(b, payments)
		h1 := heapInUse()
		f.deliver(b, deliveries)
		h2 := heapInUse()
		f.deliver(b, deliveries)
		h3 := heapInUse()
		b.ReportMetric(float64(h1-h0)/payments, "B/payment")
		b.ReportMetric(float64(h2-h0)/(1<<20), "MiB-after-100k-deliveries")
		b.ReportMetric(float64(h3-h2)/deliveries, "B/delivery-after")
		b.ReportMetric(float64(f.s.WebhooksRecorded()), "deliveries")
	}
}
