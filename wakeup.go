package cryptopay

import (
	"context"
	"sync"

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

// waitRegistry lets a webhook handler hand the object it re-read
// (Client.Notify) to the waits for that object on the same Client. Its zero value is ready.
type waitRegistry struct {
	mu sync.Mutex
	m  map[string][]*waiter

	readsOnce sync.Once
	reads     chan struct{} // a slot per wait read in flight (wait.go)

	bus busState // the Client's WakeupBus subscription (bus.go)
}

// waiter is one wait's mailbox: the latest object a handler re-read, or a
// hint to read it again, and a signal.
type waiter struct {
	ch     chan struct{} // capacity 1
	mu     sync.Mutex
	latest any
	hinted bool
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
