package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

func TestWebhookDeliversEachStatusOnce(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	h := newTestHandler(t, nil, rc, nil)
	send := func(id, status string) int {
		return serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(id, status, whOrder, time.Now()))).Code
	}
	assert.Equal(t, 200, send(waitPaymentID, "confirming"))
	assert.Equal(t, 200, send(waitPaymentID, "confirming"), "a duplicate is acknowledged")
	assert.Equal(t, 200, send(strings.ToUpper(waitPaymentID), "confirming"), "the same UUID in upper case is a duplicate")
	assert.Equal(t, 200, send(waitPaymentID, "expired"))
	assert.Equal(t, 200, send(waitPaymentID, "paid"), "terminal is not final: expired then paid is delivered")
	assert.Equal(t, 200, send(waitPaymentID, "paid"))
	assert.Equal(t, 200, send(paymentID, "paid"), "another payment")
	require.Len(t, rc.payments, 4)
	var got []string
	for _, p := range rc.payments {
		got = append(got, string(p.Status))
	}
	assert.Equal(t, []string{"confirming", "expired", "paid", "paid"}, got)

	// A payout with the same id string and status is another event.
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), waitPayoutJSON(waitPayoutID, "paid", whOrder))).Code)
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), waitPayoutJSON(waitPayoutID, "paid", whOrder))).Code)
	_, po := rc.counts()
	assert.Equal(t, 1, po)
}

func TestWebhookCallbackFailureIsRedelivered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(rc *recorder)
		log   string
	}{
		{"error", func(rc *recorder) { rc.fail.Store(2) }, "database down"},
		{"panic", func(rc *recorder) { rc.panics.Store(2) }, "callback exploded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := &recorder{}
			tt.setup(rc)
			var logs syncBuffer
			h := newTestHandler(t, nil, rc, &logs)
			body := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())
			assert.Equal(t, 500, serve(h, whRequest(t, whURL(t, whOrder), body)).Code)
			assert.Equal(t, 500, serve(h, whRequest(t, whURL(t, whOrder), body)).Code)
			assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), body)).Code, "delivered once it succeeds")
			assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), body)).Code)
			p, _ := rc.counts()
			assert.Equal(t, 1, p)
			l := logs.String()
			assert.Contains(t, l, tt.log)
			assert.NotContains(t, l, "203.0.113.7")
			assert.NotContains(t, l, "payAddress")
		})
	}
}

func TestWebhookConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	h, err := NewHandler(Config{Secret: whSecret, OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return nil
	}})
	require.NoError(t, err)
	body := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())

	first := make(chan int, 1)
	go func() { first <- serve(h, whRequest(t, whURL(t, whOrder), body)).Code }()
	<-entered // the first delivery is inside the callback

	const n = 16
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { codes <- serve(h, whRequest(t, whURL(t, whOrder), body)).Code })
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		assert.Equal(t, http.StatusServiceUnavailable, code, "in progress elsewhere: retry later")
	}
	close(release)
	assert.Equal(t, 200, <-first)
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), body)).Code, "the retry finds it delivered")
	assert.Equal(t, int32(1), calls.Load())
}

func TestWebhookNilCallbackAcknowledges(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	h, err := NewHandler(Config{Secret: whSecret, OnPayout: rc.onPayout})
	require.NoError(t, err)
	w := serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())))
	assert.Equal(t, 200, w.Code, "a payment event without OnPayment is acknowledged and dropped")
}

// failingStore is a DedupeStore whose calls fail on demand.
type failingStore struct {
	*MemoryDedupeStore
	claimErr, completeErr error
	claim                 DedupeClaim
}

func (f *failingStore) Claim(ctx context.Context, key string) (DedupeClaim, error) {
	if f.claimErr != nil || f.claim != 0 {
		return f.claim, f.claimErr
	}
	return f.MemoryDedupeStore.Claim(ctx, key)
}

func (f *failingStore) Complete(ctx context.Context, key string) error {
	if f.completeErr != nil {
		return f.completeErr
	}
	return f.MemoryDedupeStore.Complete(ctx, key)
}

func TestWebhookDedupeStoreFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		store *failingStore
		code  int
		calls int
	}{
		{"claim fails", &failingStore{claimErr: errors.New("redis down")}, 503, 0},
		{"unknown claim", &failingStore{claim: 42}, 503, 0},
		{"complete fails", &failingStore{completeErr: errors.New("redis down")}, 200, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.store.MemoryDedupeStore = NewMemoryDedupeStore(10, time.Hour)
			rc := &recorder{}
			h, err := NewHandler(Config{Secret: whSecret, OnPayment: rc.onPayment, Dedupe: tt.store})
			require.NoError(t, err)
			w := serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())))
			assert.Equal(t, tt.code, w.Code)
			if tt.code == 503 {
				assert.NotEmpty(t, w.Header().Get("Retry-After"))
			}
			p, _ := rc.counts()
			assert.Equal(t, tt.calls, p)
		})
	}
}
