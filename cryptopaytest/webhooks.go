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
	"time"
)

func newWebhooks(s *Server) *webhooks {
	hc := s.cfg.webhookClient
	if hc == nil {
		hc = &http.Client{
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				MaxIdleConnsPerHost: s.cfg.webhookConcurrency,
				MaxConnsPerHost:     s.cfg.webhookConcurrency,
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
		limit:     s.cfg.webhookConcurrency,
		queues:    make(map[string]*webhookQueue),
		log:       deliveryLog{size: s.cfg.webhookLogSize},
		changed:   make(chan struct{}),
		userAgent: "cryptopaytest-webhook/1",
		afterFunc: time.AfterFunc,
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
	q, queued := w.queues[key]
	if !queued {
		q = &webhookQueue{key: key}
		w.queues[key] = q
		w.ready.push(q)
	}
	q.items = append(q.items, webhookEvent{kind: kind, id: id, status: status, url: target, body: body,
		wait: w.s.cfg.webhookFirstWait})
	w.notifyLocked()
	w.spawnLocked()
}

func (w *webhooks) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// spawnLocked starts workers for the ready queues, up to the limit. A
// worker that is not in an attempt is about to take a ready queue, so new
// ones are started only for the queues those cannot take.
func (w *webhooks) spawnLocked() {
	for w.workers < w.limit && w.workers-w.busy < w.ready.len() {
		w.workers++
		w.wg.Add(1)
		go w.work()
	}
}

// work attempts the head event of ready queues until none is ready.
func (w *webhooks) work() {
	defer w.wg.Done()
	w.mu.Lock()
	for {
		q, ok := w.ready.pop()
		if w.closed || !ok {
			w.workers--
			w.mu.Unlock()
			return
		}
		ev := q.items[0]
		w.busy++
		w.mu.Unlock()

		d, retry := w.attempt(ev, ev.attempts+1)

		w.mu.Lock()
		w.busy--
		w.log.add(d)
		if !w.closed {
			w.afterAttemptLocked(q, retry, d.RetryAfter)
		}
		w.notifyLocked()
	}
}

// afterAttemptLocked schedules the retry of q's head event (after its
// backoff, or the receiver's Retry-After if longer), or drops it
// (delivered, refused or out of attempts) and readies q's next event.
func (w *webhooks) afterAttemptLocked(q *webhookQueue, retry bool, retryAfter time.Duration) {
	ev := &q.items[0]
	ev.attempts++
	if retry && ev.attempts < w.s.cfg.webhookAttempts {
		wait := max(ev.wait, retryAfter)
		ev.wait = min(ev.wait*2, time.Minute)
		w.wg.Add(1)
		q.timer = w.afterFunc(wait, func() { w.retryDue(q) })
		return
	}
	q.items[0] = webhookEvent{}
	q.items = q.items[1:]
	w.pending--
	if len(q.items) == 0 {
		delete(w.queues, q.key)
		return
	}
	w.ready.push(q)
}

// retryDue puts q back on the ready list once its retry wait is over.
func (w *webhooks) retryDue(q *webhookQueue) {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	q.timer = nil
	if w.closed {
		return
	}
	w.ready.push(q)
	w.spawnLocked()
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
	if !ok {
		d.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	}
	w.s.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "cryptopaytest webhook",
		slog.String("kind", ev.kind), slog.String("id", ev.id), slog.String("status", ev.status),
		slog.Int("attempt", n), slog.Int("httpStatus", resp.StatusCode))
	return d, !ok
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date, capped at
// a minute; 0 when absent, unreadable or past.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d = time.Minute // too many digits is long, not absent
		if err == nil && secs < 60 {
			d = time.Duration(secs) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), time.Minute)
}

func (w *webhooks) snapshot() []WebhookDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.list()
}

// close abandons every queued event and retry; attempts in flight are
// cancelled (and still recorded).
func (w *webhooks) close() {
	w.mu.Lock()
	w.closed = true
	for _, q := range w.queues {
		if q.timer != nil && q.timer.Stop() {
			w.wg.Done() // its retryDue will not run
		}
	}
	clear(w.queues)
	w.ready = fifo[*webhookQueue]{}
	w.pending = 0
	w.notifyLocked()
	w.mu.Unlock()
	w.cancel()
}

func (w *webhooks) wait() {
	w.wg.Wait()
	w.client.CloseIdleConnections()
}

// Webhooks returns the delivery attempts the log holds, oldest first. The
// log is a ring of the newest WithWebhookLog attempts (default
// DefaultWebhookLogSize): once it is full each new attempt replaces the
// oldest, so a long-running server keeps a bounded history.
// WebhooksRecorded counts every attempt, including those the ring dropped.
func (s *Server) Webhooks() []WebhookDelivery { return s.wh.snapshot() }

// WebhooksRecorded returns how many delivery attempts have been recorded
// since the server started, whether or not the log still holds them.
func (s *Server) WebhooksRecorded() int {
	s.wh.mu.Lock()
	defer s.wh.mu.Unlock()
	return s.wh.log.total
}

// errClosed is returned by the waiting helpers once the server is closed.
var errClosed = errors.New("cryptopaytest: server closed")

// WaitWebhooks waits until at least n delivery attempts have been recorded
// since the server started (counted as WebhooksRecorded counts them) and
// returns the attempts the log holds, as Webhooks does: all of them unless
// more than the log's size were made. It returns what it has with ctx's
// error when ctx ends first, or with an error when the server is closed.
func (s *Server) WaitWebhooks(ctx context.Context, n int) ([]WebhookDelivery, error) {
	w := s.wh
	for {
		w.mu.Lock()
		total, ch, closed := w.log.total, w.changed, w.closed
		w.mu.Unlock()
		switch {
		case total >= n:
			return s.Webhooks(), nil
		case closed:
			return s.Webhooks(), errClosed
		}
		select {
		case <-ctx.Done():
			return s.Webhooks(), ctx.Err()
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
