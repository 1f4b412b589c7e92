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

// WaitForPaymentParams says which payment WaitForPayment follows and when
// it stops. Only ID is required; every zero field takes its default.
type WaitForPaymentParams struct {
	// ID is the payment id. Required.
	ID string
	// StopOn ends the wait, without an error, as soon as the status is one
	// of these, in addition to the terminal statuses (payout statuses do
	// not compile here). Money caveat: the payment returned is then not
	// necessarily terminal; check its Status before shipping goods.
	StopOn []PaymentStatus
	// StopWhen, if set, ends the wait, without an error, as soon as it
	// returns true for the payment just read. It runs in the waiting
	// goroutine and must not keep the pointer.
	StopWhen func(*Payment) bool
	// OnStatusChange, if set, is called with a copy of the payment each
	// time the wait sees a status different from the one before, starting
	// with the first status read (so it also sees the final one). It runs
	// in the waiting goroutine, between reads: a slow func delays the wait.
	OnStatusChange func(*Payment)
	// PollInterval is the first wait between two reads (0:
	// DefaultPollInterval). The wait grows by half after every read that
	// shows no change, up to MaxPollInterval, and falls back to
	// PollInterval when the status changes. Every wait is drawn at random
	// from [3/4 of it, all of it] so that many waiters do not poll in
	// lockstep. Negative is refused.
	PollInterval time.Duration
	// MaxPollInterval caps the wait between two reads (0:
	// DefaultMaxPollInterval); a cap below PollInterval lowers the first
	// interval to it. Negative is refused.
	MaxPollInterval time.Duration
	// NoWebhookWakeup turns waking by webhooks off. By default a webhook
	// handler that re-reads the payment through this Client (see
	// Client.Notify) hands the wait the payment at once, and a WakeupBus
	// hint from another replica makes the wait read again at once.
	// Polling goes on regardless: a lost webhook only makes a wait slower.
	NoWebhookWakeup bool
}

// WaitForPayoutParams says which payout WaitForPayout follows and when it
// stops. Exactly one of ID and OrderID is required; every zero field takes
// its default. The fields mean what WaitForPaymentParams' do, for payouts
// (payment statuses and funcs do not compile here).
type WaitForPayoutParams struct {
	// ID is the payout id.
	ID string
	// OrderID follows a payout known only by its orderId (for example
	// after ReconcilePayout said PayoutExists: the list item carries no
	// payout id). The wait then reads the payout list, finds the payout
	// and follows its status there, switching to its id (GET
	// /v1/payout/{id}/status) as soon as one is known: from the list item,
	// or from a webhook for this orderId handled with this Client. A
	// payout the list does not show ends the wait with an error matching
	// ErrNotFound. What WaitForPayout returns is then built from the list
	// item until the id is known: its ID may be empty and its WalletAddress
	// is the list's paid address.
	OrderID string
	// StopOn: see WaitForPaymentParams.StopOn. A payout in review waits for
	// a person: consider StopOn: []PayoutStatus{PayoutReview}.
	StopOn []PayoutStatus
	// StopWhen: see WaitForPaymentParams.StopWhen.
	StopWhen func(*Payout) bool
	// OnStatusChange: see WaitForPaymentParams.OnStatusChange.
	OnStatusChange func(*Payout)
	// PollInterval: see WaitForPaymentParams.PollInterval.
	PollInterval time.Duration
	// MaxPollInterval: see WaitForPaymentParams.MaxPollInterval.
	MaxPollInterval time.Duration
	// NoWebhookWakeup: see WaitForPaymentParams.NoWebhookWakeup.
	NoWebhookWakeup bool
}

// waitConfig is what the params and options of one wait set, for an object
// T with statuses S.
type waitConfig[T any, S ~string] struct {
	interval    time.Duration
	maxInterval time.Duration
	noWake      bool
	stopOn      []S
	stopWhen    func(*T) bool
	onChange    func(*T)
	reqOpts     []Option
}

// newWaitConfig checks the intervals and the per-read options (a refused
// option fails here, before any read).
func newWaitConfig[T any, S ~string](interval, maxInterval time.Duration, noWake bool, stopOn []S, stopWhen func(*T) bool, onChange func(*T), opts []Option) (*waitConfig[T, S], error) {
	switch {
	case interval < 0:
		return nil, &ValidationError{Field: "PollInterval", Reason: "must not be negative"}
	case maxInterval < 0:
		return nil, &ValidationError{Field: "MaxPollInterval", Reason: "must not be negative"}
	}
	probe := config{perCall: true}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&probe); err != nil {
			return nil, err
		}
	}
	return &waitConfig[T, S]{
		interval:    cmp.Or(interval, DefaultPollInterval),
		maxInterval: cmp.Or(maxInterval, DefaultMaxPollInterval),
		noWake:      noWake,
		stopOn:      stopOn,
		stopWhen:    stopWhen,
		onChange:    onChange,
		reqOpts:     opts,
	}, nil
}

// WaitForPayment reads the payment's status (GET /v1/payment/{id}/status)
// until it is terminal (paid, paid_over, paid_partial, failed, rejected,
// expired; see PaymentStatus.IsTerminal) or params.StopOn/StopWhen says
// stop, and returns it. The opts apply to every status read (WithResponseInto
// then describes the last read).
//
// Reads back off from PollInterval (2 s) to MaxPollInterval (30 s), with
// jitter; a webhook handled with this Client ends the wait at once (see
// Client.Notify). Transient failures (network, 408, 429, 5xx, an
// unreadable 2xx body) are retried by the next read; a permanent one
// (401/403, 404, another 4xx, an invalid id, param or option) ends the wait
// with an error that matches its sentinel (ErrUnauthorized, ErrNotFound,
// ErrInvalidRequest, ErrInvalidParams). When ctx ends the wait returns
// promptly with an error that matches ctx.Err() (and names the last
// transient failure, if any). Pass a ctx with a deadline: an API that keeps
// failing transiently is otherwise polled forever.
//
// On error the payment returned is the last one read (nil if none): it is
// never terminal, and never a reason to ship goods.
//
// Money caveat: terminal is not final (PaymentStatus.IsFinal). A late
// transfer can move an expired payment to paid, the rest of a paid_partial
// one makes it paid, and paid_partial or paid_over need a person
// (NeedsAction). Keep listening to webhooks after the wait ends, or track
// the payment durably (pgstore.Tracker).
func (c *Client) WaitForPayment(ctx context.Context, params WaitForPaymentParams, opts ...Option) (*Payment, error) {
	if err := validatePaymentID(params.ID); err != nil {
		return nil, err
	}
	cfg, err := newWaitConfig(params.PollInterval, params.MaxPollInterval, params.NoWebhookWakeup,
		params.StopOn, params.StopWhen, params.OnStatusChange, opts)
	if err != nil {
		return nil, err
	}
	return waitLoop(ctx, c, paymentWait, params.ID, cfg)
}

// WaitForPayout reads the payout's status (GET /v1/payout/{id}/status, or
// the payout list for an OrderID) until it is terminal (paid, failed,
// cancelled; see PayoutStatus.IsTerminal) or params.StopOn/StopWhen says
// stop, and returns it.
//
// Everything WaitForPayment says about backoff, webhook wake-ups, errors and
// ctx holds here too. On error the payout returned is the last one read
// (nil if none) and is never terminal.
func (c *Client) WaitForPayout(ctx context.Context, params WaitForPayoutParams, opts ...Option) (*Payout, error) {
	cfg, err := newWaitConfig(params.PollInterval, params.MaxPollInterval, params.NoWebhookWakeup,
		params.StopOn, params.StopWhen, params.OnStatusChange, opts)
	switch {
	case err != nil:
		return nil, err
	case params.ID != "" && params.OrderID != "":
		return nil, &ValidationError{Field: "OrderID", Reason: "give either ID or OrderID, not both"}
	case params.ID == "" && params.OrderID != "":
		return c.waitForPayoutByOrderID(ctx, params.OrderID, cfg)
	}
	if err := validatePayoutID(params.ID); err != nil {
		return nil, err
	}
	return waitLoop(ctx, c, payoutWait, params.ID, cfg)
}

// waitSpec is what differs between waiting for a payment and for a payout.
type waitSpec[T any, S ~string] struct {
	kind     objKind
	get      func(*Client, context.Context, string, ...Option) (*T, error)
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
		if fn := w.cfg.onChange; fn != nil {
			cp := *obj
			fn(&cp)
		}
	}
	return w.spec.terminal(st) || slices.Contains(w.cfg.stopOn, st) || (w.cfg.stopWhen != nil && w.cfg.stopWhen(obj))
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
	if errors.Is(err, ErrInvalidParams) || errors.Is(err, ErrNotFound) {
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

// payoutFollow is a WaitForPayout by orderId: it reads the payout list
// until it learns the payout's id (from a list item that carries one, or
// from a payout a webhook handed over), then reads GET /v1/payout/{id}.
type payoutFollow struct {
	orderID string
	id      string // learned; "" until then
}

// waitForPayoutByOrderID is WaitForPayout for an OrderID.
func (c *Client) waitForPayoutByOrderID(ctx context.Context, orderID string, cfg *waitConfig[Payout, PayoutStatus]) (*Payout, error) {
	if err := validText("OrderID", orderID); err != nil {
		return nil, err
	}
	f := &payoutFollow{orderID: orderID}
	spec := waitSpec[Payout, PayoutStatus]{
		kind: kindPayoutOrder,
		get:  f.get,
		// state also learns the id of every payout the wait sees, read or
		// handed over by a webhook (it runs in the waiting goroutine).
		state: func(p *Payout) (PayoutStatus, time.Time) {
			if f.id == "" && p.ID != "" {
				f.id = p.ID
			}
			return p.Status, p.UpdatedAt
		},
		terminal: PayoutStatus.IsTerminal,
	}
	return waitLoop(ctx, c, spec, orderID, cfg)
}

// get reads the payout: by id once known, else from the payout list.
func (f *payoutFollow) get(c *Client, ctx context.Context, _ string, opts ...Option) (*Payout, error) {
	if f.id != "" {
		return c.GetPayout(ctx, f.id, opts...)
	}
	s := newPayoutSearch(ctx, c, f.orderID, time.Time{}, opts)
	if err := s.run(); err != nil {
		return nil, err
	}
	if s.found == nil {
		return nil, fmt.Errorf("the payout list holds no payout with this orderId: %w", ErrNotFound)
	}
	return s.found.payout(), nil
}

// payout is the Payout the list item describes, as far as it does: no
// UpdatedAt, no PaidAmount, and its ID only if the server sent one.
func (it *PayoutListItem) payout() *Payout {
	return &Payout{
		ID:             it.ID,
		Status:         it.Status,
		Amount:         it.Amount,
		WalletAddress:  it.PaidAddress,
		Currency:       it.Currency,
		Network:        it.Network,
		CustomerID:     it.CustomerID,
		OrderID:        it.OrderID,
		CreatedAt:      it.CreatedAt,
		MerchantAmount: it.MerchantAmount,
	}
}
