package cryptopay

import (
	"context"
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// objKind tells payments and payouts apart in wake-ups, bus hints and
// dedupe keys.
type objKind uint8

const (
	kindPayment objKind = iota + 1
	kindPayout
	kindPayoutOrder // a payout followed by its orderId (WaitForPayout)
)

func (k objKind) String() string {
	switch k {
	case kindPayout:
		return "payout"
	case kindPayoutOrder:
		return "payout orderId"
	}
	return "payment"
}

// objectID normalises an id for keys: payment ids are UUIDs, which compare
// case-insensitively; payout ids are opaque.
func objectID(kind objKind, id string) string {
	if kind == kindPayment {
		return ids.PaymentKey(id)
	}
	return id
}

// objectKey names one object: "payment/<uuid>" or "payout/<id>".
func objectKey(kind objKind, id string) string {
	return kind.String() + "/" + objectID(kind, id)
}

// take returns the object handed over since the last take (nil if none)
// and whether a hint asked for a read meanwhile.
func (w *waiter) take() (obj any, hinted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	obj, hinted = w.latest, w.hinted
	w.latest, w.hinted = nil, false
	return obj, hinted
}

// add registers a wait for the object; remove it with remove.
func (r *waitRegistry) add(kind objKind, id string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	key := objectKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string][]*waiter)
	}
	r.m[key] = append(r.m[key], w)
	return w
}

func (r *waitRegistry) remove(kind objKind, id string, w *waiter) {
	key := objectKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.m[key]
	for i, x := range set {
		if x == w {
			set[i] = set[len(set)-1]
			set[len(set)-1] = nil
			set = set[:len(set)-1]
			break
		}
	}
	if len(set) == 0 {
		delete(r.m, key)
	} else {
		r.m[key] = set
	}
}

// notify hands a copy of obj (a *Payment or *Payout read through the API)
// to every wait for it. It never blocks; it reports how many waits it woke.
func (r *waitRegistry) notify(kind objKind, id string, obj func() any) int {
	if r == nil {
		return 0
	}
	key := objectKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.m[key]
	for _, w := range set {
		w.mu.Lock()
		w.latest = obj()
		w.mu.Unlock()
		signal(w.ch)
	}
	return len(set)
}

// hint asks every wait for the object to read it again now (a WakeupBus
// message: a hint, never a status). It never blocks; it reports how many
// waits it woke.
func (r *waitRegistry) hint(kind objKind, id string) int {
	key := objectKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.m[key]
	for _, w := range set {
		w.mu.Lock()
		w.hinted = true
		w.mu.Unlock()
		signal(w.ch)
	}
	return len(set)
}

// signal sends on a mailbox of capacity 1 without blocking: a pending
// signal already covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Notify hands obj, a *Payment or *Payout just read through the API, to
// this Client's WaitForPayment and WaitForPayout calls for it (by id, and
// for a payout also those following its orderId), which end at once if it
// is what they wait for, and publishes a wake-up hint for it on the
// Client's WakeupBus (WithWakeupBus), if any, so that other replicas' waits
// read it again. Each wait gets its own copy. It reports how many of this
// Client's waits it handed obj to; any other type of obj is ignored.
//
// A webhook receiver calls it after re-reading an event's object (the
// webhook package's Handler does). Never pass an object decoded from a
// webhook body: the body is not proof of a status, and a wait would end on
// it.
func (c *Client) Notify(ctx context.Context, obj any) int {
	switch p := obj.(type) {
	case *Payment:
		if p == nil || p.ID == "" {
			return 0
		}
		n := c.waiters.notify(kindPayment, p.ID, func() any { cp := *p; return &cp })
		c.publishWakeup(ctx, kindPayment, p.ID)
		return n
	case *Payout:
		if p == nil || p.ID == "" {
			return 0
		}
		n := c.waiters.notify(kindPayout, p.ID, func() any { cp := *p; return &cp })
		if p.OrderID != "" {
			n += c.waiters.notify(kindPayoutOrder, p.OrderID, func() any { cp := *p; return &cp })
		}
		c.publishWakeup(ctx, kindPayout, p.ID)
		return n
	}
	return 0
}

// busRetryAfter is how long a Client waits after a failed Subscribe before
// a new wait tries again (meanwhile waits poll, as without a bus).
const busRetryAfter = 5 * time.Second

// busPublishTimeout bounds one Publish by a webhook.Handler.
const busPublishTimeout = 2 * time.Second

// source returns the Client's random bus identity.
func (b *busState) sourceLocked() string {
	if b.source == "" {
		b.source = rand.Text()
	}
	return b.source
}

// subscribeBus subscribes the Client to its bus if it is not yet. The wait
// that starts the subscription waits for it (or for ctx); waits that find
// one in progress go on at once and poll meanwhile.
func (c *Client) subscribeBus(ctx context.Context) {
	bus := c.cfg.bus
	if bus == nil {
		return
	}
	b := &c.waiters.bus
	b.mu.Lock()
	if b.stop != nil || b.pending != nil || b.closed || time.Now().Before(b.retryAt) {
		b.mu.Unlock()
		return
	}
	source := b.sourceLocked()
	done := make(chan struct{})
	b.pending = done
	b.mu.Unlock()
	go func() {
		defer close(done)
		stop, err := bus.Subscribe(func(w Wakeup) { c.onWakeup(source, w) })
		b.mu.Lock()
		defer b.mu.Unlock()
		b.pending = nil
		switch {
		case err != nil:
			b.retryAt = time.Now().Add(busRetryAfter)
			c.logger.LogAttrs(context.Background(), slog.LevelWarn, "cryptopay: subscribing to the wake-up bus failed; waits poll meanwhile",
				slog.String("error", c.scrubString(err.Error())))
		case b.closed:
			stop() // Close came first
		default:
			b.stop = stop
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// onWakeup handles a hint from the bus: unless it is this Client's own
// (source), the waits for that object read it again now.
func (c *Client) onWakeup(source string, w Wakeup) {
	if w.Source == source {
		return // our handler has woken our waits already, with the object
	}
	var kind objKind
	switch w.Kind {
	case kindPayment.String():
		kind = kindPayment
	case kindPayout.String():
		kind = kindPayout
	default:
		return
	}
	c.waiters.hint(kind, w.ID)
}

// publishWakeup tells the other Clients on the bus that an object changed.
// A failure is logged and otherwise ignored: their waits keep polling.
func (c *Client) publishWakeup(ctx context.Context, kind objKind, id string) {
	bus := c.cfg.bus
	if bus == nil {
		return
	}
	b := &c.waiters.bus
	b.mu.Lock()
	source := b.sourceLocked()
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, busPublishTimeout)
	defer cancel()
	if err := bus.Publish(ctx, Wakeup{Kind: kind.String(), ID: id, Source: source}); err != nil {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "cryptopay: publishing a wake-up failed; other replicas' waits will poll",
			slog.String("kind", kind.String()), slog.String("error", c.scrubString(err.Error())))
	}
}

// Close ends the Client's subscription to its WakeupBus (see WithWakeupBus)
// and closes its idle connections. It returns nil (the error is there so a
// Client is an io.Closer). Call it when the Client is no longer needed.
//
// The Client still works after Close: calls open new connections, and
// waits poll but are no longer woken by hints from the bus (webhooks
// received by a webhook.Handler built with this Client still wake them). It
// does not end calls or waits in flight; their contexts do. If a
// subscription is being made, Close waits for Subscribe to return.
func (c *Client) Close() error {
	b := &c.waiters.bus
	b.mu.Lock()
	b.closed = true
	stop, pending := b.stop, b.pending
	b.stop = nil
	b.mu.Unlock()
	if pending != nil {
		<-pending // it sees closed and stops what it made
	}
	if stop != nil {
		stop()
	}
	c.CloseIdleConnections()
	return nil
}
