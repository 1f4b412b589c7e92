package cryptopaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

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
}

type webhookQueue struct{ items []webhookEvent }

// webhooks sends events one object at a time, in order, one goroutine per
// object with something queued (none when idle).
type webhooks struct {
	s         *Server
	client    *http.Client
	ctx       context.Context
	cancel    context.CancelFunc
	mu        sync.Mutex
	closed    bool
	queues    map[string]*webhookQueue
	pending   int // events queued or being delivered
	records   []WebhookDelivery
	changed   chan struct{} // closed and replaced on every change
	wg        sync.WaitGroup
	userAgent string
}

func newWebhooks(s *Server) *webhooks {
	hc := s.cfg.webhookClient
	if hc == nil {
		hc = &http.Client{
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 16,
				IdleConnTimeout:     30 * time.Second,
			},
			Timeout:       5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &webhooks{
		s:         s,
		client:    hc,
		ctx:       ctx,
		cancel:    cancel,
		queues:    make(map[string]*webhookQueue),
		changed:   make(chan struct{}),
		userAgent: "cryptopaytest-webhook/1",
	}
}

// enqueue queues the event for v (marshalled now, so the body is the state
// at the change). Called with Server.mu held, which keeps per-object order.
func (w *webhooks) enqueue(kind, id, status, target string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		return
	}
	key := kind + "/" + id
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.pending++
	q, running := w.queues[key]
	if !running {
		q = &webhookQueue{}
		w.queues[key] = q
	}
	q.items = append(q.items, webhookEvent{kind: kind, id: id, status: status, url: target, body: body})
	w.notifyLocked()
	if !running {
		w.wg.Add(1)
		go w.run(key, q)
	}
}

func (w *webhooks) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// run delivers q's events in order until it is empty.
func (w *webhooks) run(key string, q *webhookQueue) {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if w.closed || len(q.items) == 0 {
			w.pending -= len(q.items)
			delete(w.queues, key)
			w.notifyLocked()
			w.mu.Unlock()
			return
		}
		ev := q.items[0]
		q.items = q.items[1:]
		w.mu.Unlock()

		w.deliver(ev)

		w.mu.Lock()
		w.pending--
		w.notifyLocked()
		w.mu.Unlock()
	}
}

// deliver attempts ev until it is delivered, the attempts run out, the
// target is refused, or the server closes.
func (w *webhooks) deliver(ev webhookEvent) {
	wait := w.s.cfg.webhookFirstWait
	for attempt := 1; ; attempt++ {
		d, retry := w.attempt(ev, attempt)
		w.record(d)
		if !retry || attempt >= w.s.cfg.webhookAttempts {
			return
		}
		if !w.s.sleep(w.ctx, wait) {
			return
		}
		wait = min(wait*2, time.Minute)
	}
}

// attempt makes one delivery attempt; retry says whether another may help.
func (w *webhooks) attempt(ev webhookEvent, n int) (d WebhookDelivery, retry bool) {
	d = WebhookDelivery{Kind: ev.kind, ObjectID: ev.id, Status: ev.status, URL: ev.url, Body: ev.body, Attempt: n}
	defer func() { d.Time = w.s.Now() }()
	u, err := url.Parse(ev.url)
	if err != nil {
		d.Err = "not sent: bad URL"
		return d, false
	}
	if !w.s.cfg.webhookAnyHost && !isLoopbackHost(u.Hostname()) {
		d.Err = "not sent: host " + strconv.Quote(u.Hostname()) + " is not loopback (see WithWebhookAnyHost)"
		return d, false
	}
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, ev.url, bytes.NewReader(ev.body))
	if err != nil {
		d.Err = "not sent: " + err.Error()
		return d, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	resp, err := w.client.Do(req)
	if err != nil {
		d.Err = err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			d.Err = ue.Err.Error()
		}
		return d, w.ctx.Err() == nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	d.StatusCode = resp.StatusCode
	ok := d.Delivered()
	w.s.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "cryptopaytest webhook",
		slog.String("kind", ev.kind), slog.String("id", ev.id), slog.String("status", ev.status),
		slog.Int("attempt", n), slog.Int("httpStatus", resp.StatusCode))
	return d, !ok
}

func (w *webhooks) record(d WebhookDelivery) {
	w.mu.Lock()
	w.records = append(w.records, d)
	w.notifyLocked()
	w.mu.Unlock()
}

func (w *webhooks) snapshot() []WebhookDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebhookDelivery(nil), w.records...)
}

func (w *webhooks) close() {
	w.mu.Lock()
	w.closed = true
	w.notifyLocked()
	w.mu.Unlock()
	w.cancel()
}

func (w *webhooks) wait() {
	w.wg.Wait()
	w.client.CloseIdleConnections()
}

// Webhooks returns every delivery attempt recorded so far, oldest first.
func (s *Server) Webhooks() []WebhookDelivery { return s.wh.snapshot() }

// errClosed is returned by the waiting helpers once the server is closed.
var errClosed = errors.New("cryptopaytest: server closed")

// WaitWebhooks waits until at least n delivery attempts have been recorded
// and returns all of them. It returns what it has with ctx's error when ctx
// ends first, or with an error when the server is closed.
func (s *Server) WaitWebhooks(ctx context.Context, n int) ([]WebhookDelivery, error) {
	w := s.wh
	for {
		w.mu.Lock()
		if len(w.records) >= n {
			out := append([]WebhookDelivery(nil), w.records...)
			w.mu.Unlock()
			return out, nil
		}
		ch, closed := w.changed, w.closed
		out := append([]WebhookDelivery(nil), w.records...)
		w.mu.Unlock()
		if closed {
			return out, errClosed
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-ch:
		}
	}
}

// WaitWebhooksIdle waits until no webhook is queued or being delivered
// (retries included), so that Webhooks holds every attempt made for the
// changes so far.
func (s *Server) WaitWebhooksIdle(ctx context.Context) error {
	w := s.wh
	for {
		w.mu.Lock()
		pending, ch, closed := w.pending, w.changed, w.closed
		w.mu.Unlock()
		if pending == 0 {
			return nil
		}
		if closed {
			return errClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
