package cryptopaytest

import "time"

// WebhookDelivery records one attempt to deliver a webhook.
type WebhookDelivery struct {
	// Kind is "payment" or "payout".
	Kind string
	// ObjectID is the paymentId or payoutId the event is about.
	ObjectID string
	// Status is the object's status in the body.
	Status string
	// URL is where it was sent (the object's webhookUrl).
	URL string
	// Body is the JSON sent: the object in the status-response shape.
	Body []byte
	// Attempt numbers the attempts of one event, from 1.
	Attempt int
	// StatusCode is the receiver's HTTP status; 0 when there was no answer.
	StatusCode int
	// Err says why the attempt failed without an answer ("" otherwise).
	Err string
	// RetryAfter is the receiver's Retry-After on a failed answer (0 when
	// absent), capped at a minute. The next attempt waits at least this
	// long, so a receiver that sheds load with 503 and Retry-After is not
	// hammered.
	RetryAfter time.Duration
	// Time is the server clock (Now) when the attempt ended.
	Time time.Time
}

// Delivered reports whether the receiver answered 2xx.
func (d WebhookDelivery) Delivered() bool {
	return d.Err == "" && d.StatusCode >= 200 && d.StatusCode <= 299
}

type webhookEvent struct {
	kind, id, status, url string
	body                  []byte
	attempts              int           // attempts made so far
	wait                  time.Duration // before the next retry
}

// webhookQueue holds one object's events, oldest first. At any moment a
// queue is in exactly one place: on the ready list, with a worker, or
// waiting for its retry timer; so an object's events go out in order, one
// at a time.
type webhookQueue struct {
	key   string
	items []webhookEvent
	timer *time.Timer // set while waiting to retry items[0]
}

// deliveryLog keeps the newest size delivery attempts in a ring, and counts
// every attempt ever recorded.
type deliveryLog struct {
	buf   []WebhookDelivery
	next  int // where the next record goes once buf is full (the oldest)
	size  int
	total int
}

func (l *deliveryLog) add(d WebhookDelivery) {
	l.total++
	if len(l.buf) < l.size {
		l.buf = append(l.buf, d)
		return
	}
	l.buf[l.next] = d
	l.next = (l.next + 1) % l.size
}

// list copies the records, oldest first.
func (l *deliveryLog) list() []WebhookDelivery {
	out := make([]WebhookDelivery, 0, len(l.buf))
	out = append(out, l.buf[l.next:]...)
	return append(out, l.buf[:l.next]...)
}

// fifo is a queue on a slice that reuses its space.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) push(v T) {
	if f.head > 0 && f.head >= len(f.items)/2 {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	f.items = append(f.items, v)
}

func (f *fifo[T]) pop() (T, bool) {
	var zero T
	if f.head == len(f.items) {
		return zero, false
	}
	v := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	return v, true
}
