package cryptopay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// Defaults for WaitForPayment and WaitForPayout.
const (
	// DefaultPollInterval is the first wait between two status reads.
	DefaultPollInterval = 2 * time.Second
	// DefaultMaxPollInterval caps the wait between two status reads.
	DefaultMaxPollInterval = 30 * time.Second
	// DefaultMaxConcurrentWaitReads is how many status reads the waits of
	// one Client make at the same time, unless WithMaxConcurrentWaitReads
	// says otherwise.
	DefaultMaxConcurrentWaitReads = 64
)

// WithMaxConcurrentWaitReads bounds how many status reads the Client's
// WaitForPayment and WaitForPayout calls make at the same time (default
// DefaultMaxConcurrentWaitReads); n must be positive. A wait whose read is
// due while n are in flight queues for its turn (first come, first served;
// ctx still ends it). This is what keeps a restart with thousands of open
// orders from stampeding the API: their first reads go out n at a time, at
// the pace the API answers, and the jittered intervals spread them from
// there. It also bounds the connections, goroutines and memory that
// thousands of waits need. Other calls are not limited by it.
func WithMaxConcurrentWaitReads(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return &ValidationError{Field: "WithMaxConcurrentWaitReads", Reason: "must be positive"}
		}
		c.waitReads = n
		return nil
	}
}

// acquireWaitRead takes one of the Client's wait-read slots, or reports
// false when ctx ends first. releaseWaitRead gives it back.
func (c *Client) acquireWaitRead(ctx context.Context) bool {
	r := c.waiters
	r.readsOnce.Do(func() { r.reads = make(chan struct{}, cmp.Or(c.cfg.waitReads, DefaultMaxConcurrentWaitReads)) })
	select {
	case r.reads <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Client) releaseWaitRead() { <-c.waiters.reads }

// WaitOption configures WaitForPayment and WaitForPayout alike: the poll
// intervals and webhook wake-ups. It is both a PaymentWaitOption and a
// PayoutWaitOption.
type WaitOption func(*waitCommon) error

// PaymentWaitOption configures WaitForPayment. It is one of: a WaitOption;
// StopOn given payment statuses; StopWhen or OnStatusChange given a
// func(*Payment); or a RequestOption, which applies to each status read.
// The options meant for payouts are not PaymentWaitOptions, so
// WaitForPayment(ctx, id, StopOn(PayoutReview)) does not compile.
type PaymentWaitOption interface {
	applyPaymentWait(*waitConfig[Payment, PaymentStatus]) error
}

// PayoutWaitOption configures WaitForPayout: a WaitOption; StopOn given
// payout statuses; StopWhen or OnStatusChange given a func(*Payout); or a
// RequestOption, which applies to each status read. Payment options do not
// compile here.
type PayoutWaitOption interface {
	applyPayoutWait(*waitConfig[Payout, PayoutStatus]) error
}

// waitCommon is what a WaitOption sets.
type waitCommon struct {
	interval    time.Duration
	maxInterval time.Duration
	noWake      bool
}

// waitConfig is everything the options of one wait set. T and S are the
// object and status types of the call; the typed options' methods mention
// them, which is what lets the compiler refuse a payout option given to
// WaitForPayment.
type waitConfig[T any, S ~string] struct {
	waitCommon
	stop     []func(*T, S) bool
	onChange []func(*T)
	reqOpts  []RequestOption
}

func newWaitConfig[T any, S ~string]() *waitConfig[T, S] {
	return &waitConfig[T, S]{waitCommon: waitCommon{interval: DefaultPollInterval, maxInterval: DefaultMaxPollInterval}}
}

func (o WaitOption) applyPaymentWait(c *waitConfig[Payment, PaymentStatus]) error {
	return o.apply(&c.waitCommon)
}

func (o WaitOption) applyPayoutWait(c *waitConfig[Payout, PayoutStatus]) error {
	return o.apply(&c.waitCommon)
}

func (o WaitOption) apply(c *waitCommon) error {
	if o == nil {
		return nil
	}
	return o(c)
}

// A RequestOption given to WaitForPayment or WaitForPayout applies to
// every status read of the wait (WithResponseInto then describes the last
// read). It is checked before the first read.
func (o RequestOption) applyPaymentWait(c *waitConfig[Payment, PaymentStatus]) error {
	return addReadOption(&c.reqOpts, o)
}

func (o RequestOption) applyPayoutWait(c *waitConfig[Payout, PayoutStatus]) error {
	return addReadOption(&c.reqOpts, o)
}

func addReadOption(opts *[]RequestOption, o RequestOption) error {
	if o == nil {
		return nil
	}
	var probe callConfig // a refused option fails here, before any read
	if err := o(&probe); err != nil {
		return err
	}
	*opts = append(*opts, o)
	return nil
}

// WithPollInterval sets the first wait between two status reads (default
// DefaultPollInterval). The wait grows by half after every read that shows
// no change, up to the maximum, and falls back to d when the status changes.
// Every wait is drawn at random from [3/4 of it, all of it] so that many
// waiters do not poll in lockstep. d must be positive.
func WithPollInterval(d time.Duration) WaitOption {
	return func(c *waitCommon) error {
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
	return func(c *waitCommon) error {
		if d <= 0 {
			return &ValidationError{Field: "WithMaxPollInterval", Reason: "must be positive"}
		}
		c.maxInterval = d
		return nil
	}
}

// WithWebhookWakeup turns waking by webhooks on (the default) or off. When
// on, a WebhookHandler built with this Client (WebhookConfig.Client) that
// receives an event for the object being waited for hands the wait the
// object it has just re-read through the API, so the wait ends within
// milliseconds of the event instead of at its next poll; with a
// WakeupBus (WithWakeupBus), a hint that another replica's handler
// received an event makes the wait read the object again at once. Polling
// goes on regardless: a lost webhook or hint only makes the wait slower.
func WithWebhookWakeup(enabled bool) WaitOption {
	return func(c *waitCommon) error {
		c.noWake = !enabled
		return nil
	}
}

// StatusWaitOption is what StopOn returns. With S = PaymentStatus it is a
// PaymentWaitOption, with S = PayoutStatus a PayoutWaitOption, and never
// the other.
type StatusWaitOption[S PaymentStatus | PayoutStatus] struct {
	statuses []S
}

// StopOn ends the wait, without an error, as soon as the status is one of
// statuses, in addition to the terminal statuses. Give payment statuses to
// WaitForPayment and payout statuses to WaitForPayout (the other way round
// does not compile), for example
//
//	p, err := client.WaitForPayment(ctx, id, cryptopay.StopOn(cryptopay.PaymentConfirming, cryptopay.PaymentLocked))
//
// Money caveat: the object returned is then not necessarily terminal; check
// its Status before shipping goods.
func StopOn[S PaymentStatus | PayoutStatus](statuses ...S) StatusWaitOption[S] {
	return StatusWaitOption[S]{statuses: append([]S(nil), statuses...)}
}

func (o StatusWaitOption[S]) applyPaymentWait(c *waitConfig[Payment, S]) error {
	c.stop = append(c.stop, stopOnStatus[Payment](o.statuses))
	return nil
}

func (o StatusWaitOption[S]) applyPayoutWait(c *waitConfig[Payout, S]) error {
	c.stop = append(c.stop, stopOnStatus[Payout](o.statuses))
	return nil
}

func stopOnStatus[T any, S comparable](statuses []S) func(*T, S) bool {
	return func(_ *T, s S) bool { return slices.Contains(statuses, s) }
}

// ObjectWaitOption is what StopWhen and OnStatusChange return. With
// T = Payment it is a PaymentWaitOption, with T = Payout a
// PayoutWaitOption, and never the other.
type ObjectWaitOption[T Payment | Payout] struct {
	name     string // the function that made it, for errors
	stop     func(*T) bool
	onChange func(*T)
}

// StopWhen ends the wait, without an error, as soon as stop returns true for
// the object just read, in addition to the terminal statuses. stop takes a
// *Payment for WaitForPayment and a *Payout for WaitForPayout (the other way
// round does not compile):
//
//	cryptopay.StopWhen(func(p *cryptopay.Payment) bool { return p.Status.NeedsAction() })
//
// stop runs in the waiting goroutine and must not keep the pointer. A nil
// stop is refused with a *ValidationError before any read.
func StopWhen[T Payment | Payout](stop func(*T) bool) ObjectWaitOption[T] {
	return ObjectWaitOption[T]{name: "StopWhen", stop: stop}
}

// OnStatusChange calls fn with the object each time the wait sees a status
// different from the one it saw before, starting with the first status it
// reads (so fn also sees the final one). fn takes a *Payment for
// WaitForPayment and a *Payout for WaitForPayout (the other way round does
// not compile). It runs in the waiting goroutine, between reads: a slow fn
// delays the wait. fn gets its own copy. A nil fn is refused with a
// *ValidationError before any read.
func OnStatusChange[T Payment | Payout](fn func(*T)) ObjectWaitOption[T] {
	return ObjectWaitOption[T]{name: "OnStatusChange", onChange: fn}
}

func (o ObjectWaitOption[T]) applyPaymentWait(c *waitConfig[T, PaymentStatus]) error {
	return applyObjectOption(o, c)
}

func (o ObjectWaitOption[T]) applyPayoutWait(c *waitConfig[T, PayoutStatus]) error {
	return applyObjectOption(o, c)
}

func applyObjectOption[T Payment | Payout, S ~string](o ObjectWaitOption[T], c *waitConfig[T, S]) error {
	switch {
	case o.stop != nil:
		c.stop = append(c.stop, func(obj *T, _ S) bool { return o.stop(obj) })
	case o.onChange != nil:
		c.onChange = append(c.onChange, func(obj *T) {
			cp := *obj
			o.onChange(&cp)
		})
	default:
		field := cmp.Or(o.name, "WaitOption")
		return &ValidationError{Field: field, Reason: "func is nil"}
	}
	return nil
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
func (c *Client) WaitForPayment(ctx context.Context, id string, opts ...PaymentWaitOption) (*Payment, error) {
	if err := validatePaymentID(id); err != nil {
		return nil, err
	}
	cfg := newWaitConfig[Payment, PaymentStatus]()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyPaymentWait(cfg); err != nil {
			return nil, err
		}
	}
	return waitLoop(ctx, c, paymentWait, id, cfg)
}

// WaitForPayout reads the payout's status (GET /v1/payout/{id}/status) until
// it is terminal (paid, failed, cancelled; see PayoutStatus.IsTerminal) or a
// StopOn/StopWhen option says stop, and returns it.
//
// Everything WaitForPayment says about backoff, webhook wake-ups, errors and
// ctx holds here too. A payout in review waits for a person: consider
// StopOn(PayoutReview) to learn about it. On error the payout returned is
// the last one read (nil if none) and is never terminal.
func (c *Client) WaitForPayout(ctx context.Context, id string, opts ...PayoutWaitOption) (*Payout, error) {
	if err := validatePayoutID(id); err != nil {
		return nil, err
	}
	cfg := newWaitConfig[Payout, PayoutStatus]()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyPayoutWait(cfg); err != nil {
			return nil, err
		}
	}
	return waitLoop(ctx, c, payoutWait, id, cfg)
}

// waitSpec is what differs between waiting for a payment and for a payout.
type waitSpec[T any, S ~string] struct {
	kind     objKind
	get      func(*Client, context.Context, string, ...RequestOption) (*T, error)
	state    func(*T) (S, time.Time) // status and UpdatedAt
	terminal func(S) bool
}

var (
	paymentWait = waitSpec[Payment, PaymentStatus]{
		kind:     kindPayment,
		get:      (*Client).GetPayment,
		state:    func(p *Payment) (PaymentStatus, time.Time) { return p.Status, p.UpdatedAt },
		terminal: PaymentStatus.IsTerminal,
	}
	payoutWait = waitSpec[Payout, PayoutStatus]{
		kind:     kindPayout,
		get:      (*Client).GetPayout,
		state:    func(p *Payout) (PayoutStatus, time.Time) { return p.Status, p.UpdatedAt },
		terminal: PayoutStatus.IsTerminal,
	}
)

// waitRun is one wait in progress: its options, what it has seen, and its
// timer and wake-up mailbox.
type waitRun[T any, S ~string] struct {
	spec     waitSpec[T, S]
	c        *Client
	id       string
	shown    string // id, scrubbed, for errors and logs: a payout id is server text
	cfg      *waitConfig[T, S]
	wake     *waiter // nil: not woken by webhooks
	timer    *time.Timer
	interval time.Duration // the next wait between reads, before jitter

	last       *T
	lastStatus S
	lastSeen   time.Time // UpdatedAt of last
	lastErr    error     // the last transient failure, nil after a good read
	reads      int
}

// waitLoop is the one polling loop behind WaitForPayment and WaitForPayout:
// read, and unless that ends the wait, sleep until the next read or a
// wake-up; repeat.
func waitLoop[T any, S ~string](ctx context.Context, c *Client, spec waitSpec[T, S], id string, cfg *waitConfig[T, S]) (*T, error) {
	if ctx == nil {
		return nil, &ValidationError{Field: "ctx", Reason: "is nil"}
	}
	w := newWaitRun(c, spec, id, cfg)
	defer w.close()
	if w.wake != nil {
		c.subscribeBus(ctx)
	}
	for {
		if obj, done, err := w.read(ctx); done {
			return obj, err
		}
		if obj, done, err := w.sleep(ctx); done {
			return obj, err
		}
	}
}

// newWaitRun registers the wait for wake-ups.
func newWaitRun[T any, S ~string](c *Client, spec waitSpec[T, S], id string, cfg *waitConfig[T, S]) *waitRun[T, S] {
	cfg.interval = min(cfg.interval, cfg.maxInterval)
	w := &waitRun[T, S]{spec: spec, c: c, id: id, shown: c.scrubString(id), cfg: cfg, interval: cfg.interval}
	if !cfg.noWake && c.waiters != nil {
		w.wake = c.waiters.add(spec.kind, id)
	}
	return w
}

func (w *waitRun[T, S]) close() {
	if w.wake != nil {
		w.c.waiters.remove(w.spec.kind, w.id, w.wake)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}

// read reads the object once; done says the wait is over, with the object
// and error to return.
func (w *waitRun[T, S]) read(ctx context.Context) (_ *T, done bool, _ error) {
	if ctx.Err() != nil {
		return w.last, true, w.ctxErr(ctx)
	}
	if !w.c.acquireWaitRead(ctx) {
		return w.last, true, w.ctxErr(ctx)
	}
	w.reads++
	obj, err := w.spec.get(w.c, ctx, w.id, w.cfg.reqOpts...)
	w.c.releaseWaitRead()
	switch {
	case err == nil:
		w.lastErr = nil
		if w.see(obj, false) {
			return obj, true, nil
		}
	case ctx.Err() != nil:
		return w.last, true, w.ctxErr(ctx)
	case !transientWaitError(err):
		return w.last, true, fmt.Errorf("cryptopay: waiting for %s %s: %w", w.spec.kind, w.shown, err)
	default:
		w.lastErr = err
		w.c.logger.LogAttrs(ctx, slog.LevelDebug, "cryptopay: wait: transient failure, will read again",
			slog.String("kind", w.spec.kind.String()), slog.String("id", w.shown), slog.Int("read", w.reads),
			slog.String("error", err.Error()))
	}
	return nil, false, nil
}

// sleep waits until the next read is due, taking the objects webhooks hand
// over meanwhile; done says one of them (or ctx) ended the wait.
func (w *waitRun[T, S]) sleep(ctx context.Context) (_ *T, done bool, _ error) {
	d := jitterWait(w.interval)
	w.interval = nextInterval(w.interval, w.cfg.maxInterval)
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	var woke <-chan struct{}
	if w.wake != nil {
		woke = w.wake.ch
	}
	for {
		select {
		case <-ctx.Done():
			return w.last, true, w.ctxErr(ctx)
		case <-w.timer.C:
			return nil, false, nil
		case <-woke:
			obj, hinted := w.wake.take()
			if v, ok := obj.(*T); ok && w.see(v, true) {
				return v, true, nil
			}
			if hinted {
				return nil, false, nil // read now: a hint is not a status
			}
		}
	}
}

// see takes in an object read by this wait or handed over by a webhook and
// reports whether the wait is over. A status change calls the
// OnStatusChange callbacks and brings the interval back to its first value.
func (w *waitRun[T, S]) see(obj *T, fromWebhook bool) bool {
	st, updated := w.spec.state(obj)
	if fromWebhook && w.last != nil && !updated.IsZero() && updated.Before(w.lastSeen) {
		return false // older than what a read already showed
	}
	changed := w.last == nil || st != w.lastStatus
	w.last, w.lastStatus, w.lastSeen = obj, st, updated
	if changed {
		w.interval = w.cfg.interval
		for _, fn := range w.cfg.onChange {
			fn(obj)
		}
	}
	if w.spec.terminal(st) {
		return true
	}
	for _, stop := range w.cfg.stop {
		if stop(obj, st) {
			return true
		}
	}
	return false
}

// ctxErr is the error of a wait that ctx ended.
func (w *waitRun[T, S]) ctxErr(ctx context.Context) error {
	if w.lastErr != nil {
		return fmt.Errorf("cryptopay: waiting for %s %s: %w (after %d read(s), last failure: %v)", w.spec.kind, w.shown, ctx.Err(), w.reads, w.lastErr)
	}
	return fmt.Errorf("cryptopay: waiting for %s %s: %w (after %d read(s))", w.spec.kind, w.shown, ctx.Err(), w.reads)
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
