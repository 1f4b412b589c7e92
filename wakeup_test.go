package cryptopay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// count reports how many waits are registered for the object.
func (r *waitRegistry) count(kind objKind, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m[objectKey(kind, id)])
}

func TestWakeupIsPerKindAndID(t *testing.T) {
	t.Parallel()
	c, _ := setup(t)
	w := c.waiters.add(kindPayout, waitPayoutID)
	defer c.waiters.remove(kindPayout, waitPayoutID, w)
	obj := func() any { return &Payout{ID: waitPayoutID, Status: PayoutPaid} }
	assert.Zero(t, c.waiters.notify(kindPayment, waitPayoutID, obj), "a payment event does not wake a payout wait")
	assert.Zero(t, c.waiters.notify(kindPayout, "PO_8F2C61", obj), "payout ids are case-sensitive")
	assert.Equal(t, 1, c.waiters.notify(kindPayout, waitPayoutID, obj))
	assert.Equal(t, 1, c.waiters.notify(kindPayout, waitPayoutID, obj), "never blocks on a full mailbox")
	obj1, hinted := w.take()
	assert.Equal(t, PayoutPaid, obj1.(*Payout).Status)
	assert.False(t, hinted)
	obj1, _ = w.take()
	assert.Nil(t, obj1)
	var nilReg *waitRegistry
	assert.Zero(t, nilReg.notify(kindPayout, waitPayoutID, obj))
}

func TestWakeupHint(t *testing.T) {
	t.Parallel()
	var r waitRegistry
	w := r.add(kindPayment, waitPaymentID)
	assert.Equal(t, 1, r.count(kindPayment, waitPaymentID))
	assert.Equal(t, 1, r.hint(kindPayment, "7B0D9A52-3C1E-4F8A-A6B4-2D9E0C5F1A73"), "payment ids match case-insensitively")
	assert.Equal(t, 1, r.hint(kindPayment, waitPaymentID), "never blocks on a full mailbox")
	assert.Zero(t, r.hint(kindPayout, waitPaymentID))
	assert.Len(t, w.ch, 1, "one signal for both hints")
	obj, hinted := w.take()
	assert.Nil(t, obj, "a hint carries no object")
	assert.True(t, hinted)
	_, hinted = w.take()
	assert.False(t, hinted)

	w2 := r.add(kindPayment, waitPaymentID)
	r.remove(kindPayment, waitPaymentID, w)
	assert.Equal(t, 1, r.count(kindPayment, waitPaymentID))
	r.remove(kindPayment, waitPaymentID, w2)
	assert.Zero(t, r.count(kindPayment, waitPaymentID))
	assert.Empty(t, r.m, "no key left behind")
}

// memBus is an in-memory WakeupBus. With lossy set it drops every message.
type memBus struct {
	mu            sync.Mutex
	subs          map[int]func(Wakeup)
	next          int
	lossy         bool
	failSubscribe error
	subscribes    atomic.Int32
	published     []Wakeup
}

func (b *memBus) Publish(_ context.Context, w Wakeup) error {
	b.mu.Lock()
	b.published = append(b.published, w)
	var fns []func(Wakeup)
	if !b.lossy {
		for _, fn := range b.subs {
			fns = append(fns, fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(w)
	}
	return nil
}

func (b *memBus) Subscribe(fn func(Wakeup)) (func(), error) {
	b.subscribes.Add(1)
	if b.failSubscribe != nil {
		return nil, b.failSubscribe
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[int]func(Wakeup){}
	}
	id := b.next
	b.next++
	b.subs[id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			delete(b.subs, id)
		})
	}, nil
}

func (b *memBus) subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// replicas is two Clients (a and b) on one bus and one API, whose payment
// reads "waiting" until paid is set. reads counts the status reads.
type replicas struct {
	a, b  *Client
	bus   *memBus
	paid  atomic.Bool
	reads atomic.Int32
}

func newReplicas(t *testing.T, bus *memBus) *replicas {
	t.Helper()
	r := &replicas{bus: bus}
	a, mux := setup(t, WithWakeupBus(bus))
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, req *http.Request) {
		r.reads.Add(1)
		st := "waiting"
		if r.paid.Load() {
			st = "paid"
		}
		_, _ = io.WriteString(w, waitPaymentJSON(req.PathValue("id"), st, whOrder, time.Now()))
	})
	b, err := NewClient(a.base, testKey, WithRetryPolicy(fastRetry), WithWakeupBus(bus))
	require.NoError(t, err)
	r.a, r.b = a, b
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return r
}

// waitOn starts WaitForPayment on c (polling every hour, so only a wake-up
// can end it within the test) and returns its result channel.
func (r *replicas) waitOn(c *Client) <-chan *Payment {
	done := make(chan *Payment, 1)
	go func() {
		p, _ := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour})
		done <- p
	}()
	return done
}

// webhookTo does on c what a webhook receiver does for an event: re-read
// the payment through the API and hand it to Client.Notify.
func (r *replicas) webhookTo(t *testing.T, c *Client) {
	t.Helper()
	p, err := c.GetPayment(context.Background(), waitPaymentID)
	require.NoError(t, err)
	c.Notify(context.Background(), p)
}

func TestWakeupBusWakesAnotherReplica(t *testing.T) {
	t.Parallel()
	r := newReplicas(t, &memBus{})
	done := r.waitOn(r.a)
	waitUntil(t, func() bool { return r.reads.Load() == 1 })
	assert.Equal(t, int32(1), r.bus.subscribes.Load(), "a subscribed for its first wait")
	assert.Zero(t, r.b.waiters.bus.stop, "b has no wait: not subscribed")

	r.paid.Store(true)
	r.webhookTo(t, r.b) // lands on replica b
	p := <-done
	assert.Equal(t, PaymentPaid, p.Status)
	assert.Equal(t, int32(3), r.reads.Load(), "a's first read, b's re-read, a's re-read on the hint")
	require.Len(t, r.bus.published, 1)
	assert.Equal(t, Wakeup{Kind: "payment", ID: waitPaymentID, Source: r.b.waiters.bus.source}, r.bus.published[0])
}

func TestWakeupBusHintIsNotAStatus(t *testing.T) {
	t.Parallel()
	r := newReplicas(t, &memBus{})
	var changes atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Payment, 1)
	go func() {
		p, _ := r.a.WaitForPayment(ctx, WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour, OnStatusChange: func(*Payment) { changes.Add(1) }})
		done <- p
	}()
	waitUntil(t, func() bool { return r.reads.Load() == 1 })
	// A hint that claims nothing: the wait reads, sees waiting, waits on.
	require.NoError(t, r.bus.Publish(context.Background(), Wakeup{Kind: "payment", ID: waitPaymentID, Source: "elsewhere"}))
	waitUntil(t, func() bool { return r.reads.Load() == 2 })
	// Hints for another object, another kind, or an unknown kind: nothing.
	for _, w := range []Wakeup{{Kind: "payment", ID: paymentID}, {Kind: "payout", ID: waitPaymentID}, {Kind: "refund", ID: waitPaymentID}} {
		require.NoError(t, r.bus.Publish(context.Background(), w))
	}
	cancel()
	p := <-done
	assert.Equal(t, PaymentWaiting, p.Status)
	assert.Equal(t, int32(2), r.reads.Load())
	assert.Equal(t, int32(1), changes.Load())
}

func TestWakeupBusSkipsItsOwnEcho(t *testing.T) {
	t.Parallel()
	r := newReplicas(t, &memBus{})
	done := r.waitOn(r.a)
	waitUntil(t, func() bool { return r.reads.Load() == 1 })
	r.paid.Store(true)
	r.webhookTo(t, r.a) // the handler shares a's Client
	assert.Equal(t, PaymentPaid, (<-done).Status)
	assert.Equal(t, int32(2), r.reads.Load(), "woken with the handler's object; the echo from the bus is ignored")
	require.Len(t, r.bus.published, 1)
}

func TestWakeupBusLostMessageCostsLatencyOnly(t *testing.T) {
	t.Parallel()
	r := newReplicas(t, &memBus{lossy: true})
	done := make(chan *Payment, 1)
	go func() {
		p, err := r.a.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: 20 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond})
		assert.NoError(t, err)
		done <- p
	}()
	waitUntil(t, func() bool { return r.reads.Load() >= 1 })
	r.paid.Store(true)
	r.webhookTo(t, r.b)
	assert.Equal(t, PaymentPaid, (<-done).Status, "found by polling")
	assert.Len(t, r.bus.published, 1)
}

func TestWakeupBusSubscription(t *testing.T) {
	t.Parallel()
	t.Run("once, until Close", func(t *testing.T) {
		t.Parallel()
		r := newReplicas(t, &memBus{})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				_, _ = r.a.WaitForPayment(ctx, WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour})
			})
		}
		waitUntil(t, func() bool { return r.reads.Load() == 5 })
		cancel()
		wg.Wait()
		assert.Equal(t, int32(1), r.bus.subscribes.Load())
		assert.Equal(t, 1, r.bus.subscribers(), "still subscribed after the waits ended")
		require.NoError(t, r.a.Close())
		assert.Zero(t, r.bus.subscribers())
		require.NoError(t, r.a.Close(), "twice is fine")
		_, err := r.a.WaitForPayment(ctxDone(), WaitForPaymentParams{ID: waitPaymentID})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, int32(1), r.bus.subscribes.Load(), "no new subscription after Close")
	})
	t.Run("a failed Subscribe leaves waits polling", func(t *testing.T) {
		t.Parallel()
		r := newReplicas(t, &memBus{failSubscribe: errors.New("bus down")})
		r.paid.Store(true)
		for range 3 {
			p, err := r.a.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID})
			require.NoError(t, err)
			assert.Equal(t, PaymentPaid, p.Status)
		}
		assert.Equal(t, int32(1), r.bus.subscribes.Load(), "not retried within busRetryAfter")
	})
	t.Run("no bus, no subscription; nil refused", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		c.subscribeBus(context.Background())
		assert.Nil(t, c.waiters.bus.stop)
		require.NoError(t, c.Close())
		_, err := NewClient(testBase, testKey, WithWakeupBus(nil))
		require.ErrorIs(t, err, ErrInvalidParams)
	})
}

func ctxDone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
