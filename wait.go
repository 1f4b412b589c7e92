package cryptopay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Defaults for WaitForPayment and WaitForPayout.
const (
	// DefaultPollInterval is the first wait between two status reads.
	DefaultPollInterval = 2 * time.Second
	// DefaultMaxPollInterval caps the wait between two status reads.
	DefaultMaxPollInterval = 30 * time.Second
)

// WaitOption configures WaitForPayment and WaitForPayout. The same options
// serve both; the typed ones (StopOn, StopWhen, OnStatusChange) are checked
// against the call they are given to, and a payout option given to
// WaitForPayment (or the reverse) is refused with a *ValidationError before
// any request is sent.
type WaitOption func(*waitConfig) error

// objKind tells payments and payouts apart in options, wake-ups and
// dedupe keys.
type objKind uint8

const (
	kindPayment objKind = iota + 1
	kindPayout
)

func (k objKind) String() string {
	if k == kindPayout {
		return "payout"
	}
	return "payment"
}

func kindOf[T Payment | Payout]() objKind {
	var zero T
	if _, ok := any(&zero).(*Payout); ok {
		return kindPayout
	}
	return kindPayment
}

func statusKind[S PaymentStatus | PayoutStatus]() objKind {
	var zero S
	if _, ok := any(zero).(PayoutStatus); ok {
		return kindPayout
	}
	return kindPayment
}

type waitConfig struct {
	kind        objKind // of the call the options are applied to
	interval    time.Duration
	maxInterval time.Duration
	stop        []func(any) bool // given *Payment or *Payout
	onChange    []func(any)
	noWake      bool
}

func (c *waitConfig) sameKind(k objKind, opt string) error {
	if k != c.kind {
		return &ValidationError{Field: "WaitOption", Reason: opt + " was given " + k.String() + " types, but this waits for a " + c.kind.String()}
	}
	return nil
}

// WithPollInterval sets the first wait between two status reads (default
// DefaultPollInterval). The wait grows by half after every read that shows
// no change, up to the maximum, and falls back to d when the status changes.
// Every wait is drawn at random from [3/4 of it, all of it] so that many
// waiters do not poll in lockstep. d must be positive.
func WithPollInterval(d time.Duration) WaitOption {
	return func(c *waitConfig) error {
		if d <= 0 {
			return &ValidationError{Field: "WithPollInterval", Reason: "must be positive"}
		}
		c.interval = d
		return nil
	}
}

// WithMaxPollInterval caps the wait between two status reads (default
// DefaultMaxPollInterval). A cap below the first interval lowers the first
// interval to it. d must be positive.
func WithMaxPollInterval(d time.Duration) WaitOption {
	return func(c *waitConfig) error {
		if d <= 0 {
			return &ValidationError{Field: "WithMaxPollInterval", Reason: "must be positive"}
		}
		c.maxInterval = d
		return nil
	}
}

// StopOn ends the wait, without an error, as soon as the status is one of
// statuses, in addition to the terminal statuses. Give payment statuses to
// WaitForPayment and payout statuses to WaitForPayout, for example
//
//	p, err := client.WaitForPayment(ctx, id, cryptopay.StopOn(cryptopay.PaymentConfirming, cryptopay.PaymentLocked))
//
// Money caveat: the object returned is then not necessarily terminal; check
// its Status before shipping goods.
func StopOn[S PaymentStatus | PayoutStatus](statuses ...S) WaitOption {
	k := statusKind[S]()
	set := make(map[string]struct{}, len(statuses))
	for _, s := range statuses {
		set[string(s)] = struct{}{}
	}
	return func(c *waitConfig) error {
		if err := c.sameKind(k, "StopOn"); err != nil {
			return err
		}
		c.stop = append(c.stop, func(v any) bool {
			_, ok := set[statusOf(v)]
			return ok
		})
		return nil
	}
}

// StopWhen ends the wait, without an error, as soon as stop returns true for
// the object just read, in addition to the terminal statuses. stop takes a
// *Payment for WaitForPayment and a *Payout for WaitForPayout:
//
//	cryptopay.StopWhen(func(p *cryptopay.Payment) bool { return p.Status.NeedsAction() })
//
// stop runs in the waiting goroutine and must not keep the pointer.
func StopWhen[T Payment | Payout](stop func(*T) bool) WaitOption {
	k := kindOf[T]()
	return func(c *waitConfig) error {
		if err := c.sameKind(k, "StopWhen"); err != nil {
			return err
		}
		if stop == nil {
			return &ValidationError{Field: "StopWhen", Reason: "func is nil"}
		}
		c.stop = append(c.stop, func(v any) bool { return stop(v.(*T)) })
		return nil
	}
}

// OnStatusChange calls fn with the object each time the wait sees a status
// different from the one it saw before, starting with the first status it
// reads (so fn also sees the final one). fn takes a *Payment for
// WaitForPayment and a *Payout for WaitForPayout. It runs in the waiting
// goroutine, between reads: a slow fn delays the wait. fn gets its own copy.
func OnStatusChange[T Payment | Payout](fn func(*T)) WaitOption {
	k := kindOf[T]()
	return func(c *waitConfig) error {
		if err := c.sameKind(k, "OnStatusChange"); err != nil {
			return err
		}
		if fn == nil {
			return &ValidationError{Field: "OnStatusChange", Reason: "func is nil"}
		}
		c.onChange = append(c.onChange, func(v any) {
			cp := *v.(*T)
			fn(&cp)
		})
		return nil
	}
}

// WithWebhookWakeup turns waking by webhooks on (the default) or off. When
// on, a WebhookHandler built with this Client (WebhookConfig.Client) that
// receives an event for the object being waited for hands the wait the
// object it has just re-read through the API, so the wait ends within
// milliseconds of the event instead of at its next poll. Polling goes on
// regardless: a lost webhook only makes the wait slower.
func WithWebhookWakeup(enabled bool) WaitOption {
	return func(c *waitConfig) error {
		c.noWake = !enabled
		return nil
	}
}

func statusOf(v any) string {
	switch o := v.(type) {
	case *Payment:
		return string(o.Status)
	case *Payout:
		return string(o.Status)
	}
	return ""
}

// WaitForPayment reads the payment's status (GET /v1/payment/{id}/status)
// until it is terminal (paid, paid_over, paid_partial, failed, rejected,
// expired; see PaymentStatus.IsTerminal) or a StopOn/StopWhen option says
// stop, and returns it.
//
// Reads back off from WithPollInterval (2 s) to WithMaxPollInterval (30 s),
// with jitter; a webhook received by a WebhookHandler sharing this Client
// ends the wait at once (see WithWebhookWakeup). Transient failures
// (network, 408, 429, 5xx, an unreadable 2xx body) are retried by the next
// read; a permanent one (401/403, 404, another 4xx, an invalid id or option)
// ends the wait with an error that matches its sentinel (ErrUnauthorized,
// ErrNotFound, ErrInvalidRequest, ErrInvalidParams). When ctx ends the wait
// returns promptly with an error that matches ctx.Err() (and names the last
// transient failure, if any). Pass a ctx with a deadline: an API that keeps
// failing transiently is otherwise polled forever.
//
// On error the payment returned is the last one read (nil if none): it is
// never terminal, and never a reason to ship goods.
//
// Money caveat: terminal is not final forever. A late transfer can move an
// expired payment to paid, and paid_partial or paid_over need a person
// (NeedsAction). Keep listening to webhooks after the wait ends.
func (c *Client) WaitForPayment(ctx context.Context, id string, opts ...WaitOption) (*Payment, error) {
	if err := validatePaymentID(id); err != nil {
		return nil, err
	}
	return waitLoop(ctx, c, kindPayment, id, opts, c.GetPayment,
		func(p *Payment) (PaymentStatus, time.Time) { return p.Status, p.UpdatedAt },
		PaymentStatus.IsTerminal)
}

// WaitForPayout reads the payout's status (GET /v1/payout/{id}/status) until
// it is terminal (paid, failed, cancelled; see PayoutStatus.IsTerminal) or a
// StopOn/StopWhen option says stop, and returns it.
//
// Everything WaitForPayment says about backoff, webhook wake-ups, errors and
// ctx holds here too. A payout in review waits for a person: consider
// StopOn(PayoutReview) to learn about it. On error the payout returned is
// the last one read (nil if none) and is never terminal.
func (c *Client) WaitForPayout(ctx context.Context, id string, opts ...WaitOption) (*Payout, error) {
	if err := validatePayoutID(id); err != nil {
		return nil, err
	}
	return waitLoop(ctx, c, kindPayout, id, opts, c.GetPayout,
		func(p *Payout) (PayoutStatus, time.Time) { return p.Status, p.UpdatedAt },
		PayoutStatus.IsTerminal)
}

// waitLoop is the one polling loop behind WaitForPayment and WaitForPayout.
func waitLoop[T any, S ~string](
	ctx context.Context, c *Client, kind objKind, id string, opts []WaitOption,
	get func(context.Context, string, ...RequestOption) (*T, error),
	state func(*T) (S, time.Time),
	terminal func(S) bool,
) (*T, error) {
	if ctx == nil {
		return nil, &ValidationError{Field: "ctx", Reason: "is nil"}
	}
	cfg := waitConfig{kind: kind, interval: DefaultPollInterval, maxInterval: DefaultMaxPollInterval}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	cfg.interval = min(cfg.interval, cfg.maxInterval)

	var wake *waiter
	if !cfg.noWake && c.waiters != nil {
		wake = c.waiters.add(kind, id)
		defer c.waiters.remove(kind, id, wake)
	}

	var (
		last       *T
		lastStatus S
		lastSeen   time.Time // UpdatedAt of last
		lastErr    error
		polls      int
	)
	// see handles an object read by this loop or handed over by a webhook;
	// it reports whether the wait is over.
	see := func(obj *T, fromWebhook bool) (done, changed bool) {
		st, updated := state(obj)
		if fromWebhook && last != nil && !updated.IsZero() && updated.Before(lastSeen) {
			return false, false // older than what a poll already showed
		}
		changed = last == nil || st != lastStatus
		last, lastStatus, lastSeen = obj, st, updated
		if changed {
			for _, fn := range cfg.onChange {
				fn(obj)
			}
		}
		if terminal(st) {
			return true, changed
		}
		for _, stop := range cfg.stop {
			if stop(obj) {
				return true, changed
			}
		}
		return false, changed
	}
	ctxErr := func() error {
		if lastErr != nil {
			return fmt.Errorf("cryptopay: waiting for %s %s: %w (after %d read(s), last failure: %v)", kind, id, ctx.Err(), polls, lastErr)
		}
		return fmt.Errorf("cryptopay: waiting for %s %s: %w (after %d read(s))", kind, id, ctx.Err(), polls)
	}

	interval := cfg.interval
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if ctx.Err() != nil {
			return last, ctxErr()
		}
		polls++
		obj, err := get(ctx, id)
		switch {
		case err == nil:
			lastErr = nil
			done, changed := see(obj, false)
			if done {
				return obj, nil
			}
			if changed {
				interval = cfg.interval
			}
		case ctx.Err() != nil:
			return last, ctxErr()
		case !transientWaitError(err):
			return last, fmt.Errorf("cryptopay: waiting for %s %s: %w", kind, id, err)
		default:
			lastErr = err
			c.logger.LogAttrs(ctx, slog.LevelDebug, "cryptopay: wait: transient failure, will read again",
				slog.String("kind", kind.String()), slog.String("id", id), slog.Int("read", polls),
				slog.String("error", err.Error()))
		}

		d := jitterWait(interval)
		interval = nextInterval(interval, cfg.maxInterval)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
	sleep:
		for {
			var woke <-chan struct{}
			if wake != nil {
				woke = wake.ch
			}
			select {
			case <-ctx.Done():
				return last, ctxErr()
			case <-timer.C:
				break sleep
			case <-woke:
				v, ok := wake.take().(*T)
				if !ok {
					// A second signal for an object already taken.
					continue
				}
				done, changed := see(v, true)
				if done {
					return v, nil
				}
				if changed {
					interval = cfg.interval
				}
			}
		}
	}
}

// jitterWait draws a wait from [3/4 d, d], so waits never exceed the
// configured maximum and many waiters spread out.
func jitterWait(d time.Duration) time.Duration {
	return d - rand.N(d/4+1)
}

// nextInterval grows d by half, capped at maxD.
func nextInterval(d, maxD time.Duration) time.Duration {
	if d > maxD/3*2 {
		return maxD
	}
	return min(d+d/2, maxD)
}

// transientWaitError reports whether a failed read is worth another read.
func transientWaitError(err error) bool {
	if errors.Is(err, ErrInvalidParams) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.StatusCode == http.StatusRequestTimeout, apiErr.StatusCode == http.StatusTooManyRequests:
			return true
		case apiErr.StatusCode >= 500:
			return true
		}
		return false
	}
	// Transport failures and unreadable 2xx bodies.
	return true
}

// waitRegistry lets a WebhookHandler hand the object it re-read to the
// waits for that object on the same Client. Its zero value is ready.
type waitRegistry struct {
	mu sync.Mutex
	m  map[string]map[*waiter]struct{}
}

// waiter is one wait's mailbox: the latest object, and a signal.
type waiter struct {
	ch     chan struct{} // capacity 1
	mu     sync.Mutex
	latest any
}

func (w *waiter) take() any {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.latest
	w.latest = nil
	return v
}

func waitKey(kind objKind, id string) string {
	return kind.String() + "/" + waitKeyID(kind, id)
}

func (r *waitRegistry) add(kind objKind, id string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	key := waitKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]map[*waiter]struct{})
	}
	set := r.m[key]
	if set == nil {
		set = make(map[*waiter]struct{}, 1)
		r.m[key] = set
	}
	set[w] = struct{}{}
	return w
}

func (r *waitRegistry) remove(kind objKind, id string, w *waiter) {
	key := waitKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if set := r.m[key]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(r.m, key)
		}
	}
}

// notify hands a copy of obj (a *Payment or *Payout read through the API)
// to every wait for it. It never blocks; it reports how many waits it woke.
func (r *waitRegistry) notify(kind objKind, id string, obj func() any) int {
	if r == nil {
		return 0
	}
	key := waitKey(kind, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.m[key]
	for w := range set {
		w.mu.Lock()
		w.latest = obj()
		w.mu.Unlock()
		select {
		case w.ch <- struct{}{}:
		default: // already signalled; it will take the latest object
		}
	}
	return len(set)
}
