package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// FailureClass sorts the failures of a worker's reads, sends and
// callbacks, so that operators see what kind of problem they have and the
// log says each kind once.
type FailureClass string

// Failure classes.
const (
	// FailUnauthorized: the API answered 401. No retry fixes it: the API
	// key is wrong, rotated or revoked.
	FailUnauthorized FailureClass = "unauthorized"
	// FailForbidden: the API answered 403. No retry fixes it: the key may
	// not do this (its account, its permissions).
	FailForbidden FailureClass = "forbidden"
	// FailRateLimited: the API answered 429.
	FailRateLimited FailureClass = "rate_limited"
	// FailNotFound: the API answered 404.
	FailNotFound FailureClass = "not_found"
	// FailRefused: the API answered another 4xx.
	FailRefused FailureClass = "refused"
	// FailServer: the API answered 5xx.
	FailServer FailureClass = "server"
	// FailUnreachable: no answer (network, timeout, unknown outcome).
	FailUnreachable FailureClass = "unreachable"
	// FailCallback: OnChange or OnFinal returned an error; its transaction
	// rolled back and the work is tried again with backoff.
	FailCallback FailureClass = "callback"
	// FailPanic: OnChange or OnFinal panicked; recovered, its transaction
	// rolled back and the work tried again with backoff.
	FailPanic FailureClass = "panic"
	// FailOther: anything else (an answer the SDK could not read ...).
	FailOther FailureClass = "other"
)

// Permanent reports whether no retry can fix a failure of this class
// (401, 403): a person must change the API key or its permissions.
func (c FailureClass) Permanent() bool { return c == FailUnauthorized || c == FailForbidden }

// Hint is a short line for an operator: what the class means and what to
// do.
func (c FailureClass) Hint() string {
	switch c {
	case FailUnauthorized:
		return "401 unauthorized: no retry fixes this: check the API key"
	case FailForbidden:
		return "403 forbidden: no retry fixes this: check the API key's account and permissions"
	case FailRateLimited:
		return "429 rate limited: retried with backoff"
	case FailNotFound:
		return "404 not found: the API does not know it"
	case FailRefused:
		return "refused by the API (4xx)"
	case FailServer:
		return "the API failed (5xx): retried with backoff"
	case FailUnreachable:
		return "no answer from the API: retried with backoff"
	case FailCallback:
		return "the callback returned an error: rolled back, retried with backoff"
	case FailPanic:
		return "the callback panicked: rolled back, retried with backoff"
	}
	return "failed: retried with backoff"
}

// Failure is the latest failure of a worker's read, send or callback for
// one tracked payment or payout intent.
type Failure struct {
	// Class sorts it ("" if it never failed).
	Class FailureClass
	// Text is the error, in words: scrubbed, one line, at most 1 KiB.
	// Server text: show it escaped.
	Text string
	// At is when it failed (the database's clock).
	At time.Time
	// Count is how many times in a row it failed; 0 once a read or send
	// succeeded since (Class, Text and At then say what failed last).
	Count int
}

// Failing reports whether the latest read, send or callback failed.
func (f Failure) Failing() bool { return f.Count > 0 }

// failureOf sorts err and keeps its text scrubbed.
func failureOf(err error) Failure {
	return Failure{Class: classify(err), Text: errText(err), Count: 1}
}

// classify sorts err into a FailureClass.
func classify(err error) FailureClass {
	var pe *CallbackPanicError
	var apiErr *cryptopay.APIError
	switch {
	case errors.As(err, &pe):
		return FailPanic
	case errors.Is(err, errCallback):
		return FailCallback
	case errors.As(err, &apiErr):
		return classOfStatus(apiErr.StatusCode)
	case errors.Is(err, cryptopay.ErrOutcomeUnknown), errors.Is(err, context.DeadlineExceeded):
		return FailUnreachable
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return FailUnreachable
	}
	return FailOther
}

func classOfStatus(s int) FailureClass {
	switch {
	case s == http.StatusUnauthorized:
		return FailUnauthorized
	case s == http.StatusForbidden:
		return FailForbidden
	case s == http.StatusTooManyRequests:
		return FailRateLimited
	case s == http.StatusRequestTimeout:
		return FailUnreachable
	case s == http.StatusNotFound:
		return FailNotFound
	case s >= 500:
		return FailServer
	case s >= 400:
		return FailRefused
	}
	return FailOther
}

// errCallback marks an error OnChange or OnFinal returned.
var errCallback = errors.New("callback failed")

// CallbackPanicError is a panic of OnChange, OnFinal or an Observer,
// recovered: the callback's transaction rolled back (an Observer's change
// had committed already) and the process goes on.
type CallbackPanicError struct {
	// Callback names it: "OnChange", "OnFinal", "Observer".
	Callback string
	// Value is the panic's value, as text.
	Value string
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error names the callback and the panic's value (not the stack).
func (e *CallbackPanicError) Error() string {
	return fmt.Sprintf("%s panicked: %s", e.Callback, e.Value)
}

// guard runs fn, turning a panic into a *CallbackPanicError and an error
// into one that matches errCallback, both naming the callback.
func guard(name string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &CallbackPanicError{Callback: name, Value: scrubText(fmt.Sprint(v)), Stack: debug.Stack()}
		}
	}()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w: %w", name, errCallback, err)
	}
	return nil
}

// watch is what a Queue or a Tracker keeps of its workers' failures in
// this process: the recovered panics, and the log gate.
type watch struct {
	log    *slog.Logger
	panics atomic.Int64
	gate   logGate
	key    keyGate
}

// defaultLogger is the logger of a Queue or Tracker built without one:
// warnings and errors to standard error (standard output is the program's
// own: the CLI prints JSON there), so a worker never fails in silence.
func defaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// failed logs a worker's failure for orderID, at most once per class and
// window (see logGate): a failure repeated on every attempt is one line,
// and the next says how many were held back.
func (w *watch) failed(ctx context.Context, what, orderID string, f Failure) {
	held, ok := w.gate.allow(what + "/" + string(f.Class))
	if !ok {
		return
	}
	level := slog.LevelWarn
	if f.Class.Permanent() || f.Class == FailPanic {
		level = slog.LevelError
	}
	attrs := []slog.Attr{slog.String("orderId", orderID), slog.String("class", string(f.Class)),
		slog.String("hint", f.Class.Hint()), slog.String("error", f.Text)}
	if held > 0 {
		attrs = append(attrs, slog.Int("similar_not_logged", held))
	}
	w.log.LogAttrs(ctx, level, "pgstore: "+what, attrs...)
}

// warn logs a worker's error that has no row to go to (the database
// unreachable ...), at most once per msg and window (see logGate).
func (w *watch) warn(ctx context.Context, msg string, attrs ...slog.Attr) {
	held, ok := w.gate.allow(msg)
	if !ok {
		return
	}
	if held > 0 {
		attrs = append(attrs, slog.Int("similar_not_logged", held))
	}
	w.log.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}

// recovered counts and logs a callback's recovered panic, with its stack.
func (w *watch) recovered(ctx context.Context, what, orderID string, err error) {
	var pe *CallbackPanicError
	if !errors.As(err, &pe) {
		return
	}
	w.panics.Add(1)
	if held, ok := w.gate.allow(what + "/panic/" + pe.Callback); ok {
		w.log.LogAttrs(ctx, slog.LevelError, "pgstore: "+what+": "+pe.Callback+" panicked (recovered, rolled back, retried with backoff)",
			slog.String("orderId", orderID), slog.String("panic", pe.Value), slog.Int("similar_not_logged", held),
			slog.String("stack", string(pe.Stack)))
	}
}

// Log windows: the first failure of a class is logged at once, the next
// after logEvery, then after windows doubling up to logEveryMax.
const (
	logEvery    = time.Minute
	logEveryMax = time.Hour
)

// logGate lets one line per key through, then one per window (doubling
// from logEvery to logEveryMax), and counts the lines it held back.
type logGate struct {
	mu   sync.Mutex
	keys map[string]*gateKey
}

type gateKey struct {
	next  time.Time
	every time.Duration
	held  int
}

// allow reports whether a line for key may be logged now, and how many
// were held back since the last one.
func (g *logGate) allow(key string) (held int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		g.keys = make(map[string]*gateKey)
	}
	now := time.Now()
	k := g.keys[key]
	if k == nil {
		g.keys[key] = &gateKey{next: now.Add(logEvery), every: logEvery}
		return 0, true
	}
	if now.Before(k.next) {
		k.held++
		return 0, false
	}
	held, k.held = k.held, 0
	k.every = min(2*k.every, logEveryMax)
	k.next = now.Add(k.every)
	return held, true
}

// report logs err, a worker's failure for orderID (a recovered panic with
// its stack, counted), and returns it sorted for the row.
func (w *watch) report(ctx context.Context, what, orderID string, err error) Failure {
	f := failureOf(err)
	if f.Class.Permanent() {
		w.key.refused()
	}
	if f.Class == FailPanic {
		w.recovered(ctx, what, orderID, err)
	} else {
		w.failed(ctx, what, orderID, f)
	}
	return f
}

// WebhookRefusalWindow is how recent a recorded webhook refusal must be for
// Health to say that refusals continue (Health.WebhookRefusing, not OK):
// the sender retries a refused delivery for a while and then drops it, so
// a refusal within the last hour means events are being lost now.
const WebhookRefusalWindow = time.Hour

// Health is a summary of a Queue's or a Tracker's open work, for an
// operator or a dashboard (Queue.Health, Tracker.Health): every field is
// a count or a failure, ready to render.
type Health struct {
	// Noun is what is counted: "payments" (Tracker) or "payouts" (Queue).
	Noun string
	// Open counts the items still worked on: tracked payments not closed,
	// intents not final.
	Open int
	// Due counts the open items whose next read or send is due now.
	Due int
	// Overdue counts the items due for longer than a lease: no worker is
	// taking them (none is running, or all are busy).
	Overdue int
	// Waiting is how long the item due the longest has been due (0: none
	// is due). Workers claim the longest due first, so no worker has
	// claimed work for at least Waiting: with items overdue, String says
	// so.
	Waiting time.Duration
	// Failing counts the open items whose latest read, send or callback
	// failed (Failure.Failing).
	Failing int
	// NeedsAction counts the items a person should look at (a tracked
	// payment's NeedsAction; an intent parked or waiting for approval).
	NeedsAction int
	// Commonest is the commonest failure class among the failing items,
	// with the latest text of that class; CommonestCount is how many
	// items it is. Zero when none is failing.
	Commonest      Failure
	CommonestCount int
	// CallbackPanics counts the panics of OnChange, OnFinal and the
	// Observer recovered in this process since the Queue or Tracker was
	// built.
	CallbackPanics int64
	// WebhookRefusals counts the webhook deliveries refused, as recorded
	// by WebhookRefused (from any process, in the table beside this one's).
	WebhookRefusals webhook.RefusalStats
	// WebhookRefusing: a delivery was refused within WebhookRefusalWindow
	// (by the database's clock): events are being lost now.
	WebhookRefusing bool
}

// OK reports whether nothing needs a look: nothing overdue, failing or
// waiting for a person, no callback panicked, and no webhook refused
// within WebhookRefusalWindow.
func (h Health) OK() bool {
	return h.Overdue == 0 && h.Failing == 0 && h.NeedsAction == 0 && h.CallbackPanics == 0 && !h.WebhookRefusing
}

// String is the summary in a few lines, each kept whatever else is
// shown: with items overdue, that no worker has claimed work for
// Waiting; the webhook refusals within WebhookRefusalWindow; the failing
// items; e.g.
// "12 payments failing: 401 unauthorized: no retry fixes this: check the
// API key". Failure text is server text, escaped by %q.
func (h Health) String() string {
	var s string
	if idle := h.Idle(); idle != "" {
		s = idle + "\n"
	}
	if h.WebhookRefusing {
		s += h.WebhookRefusals.String() + "\n"
	}
	if h.Failing > 0 {
		s += fmt.Sprintf("%d %s failing: %s (%d of them; latest: %q)\n", h.Failing, h.noun(h.Failing), h.Commonest.Class.Hint(),
			h.CommonestCount, h.Commonest.Text)
	}
	s += fmt.Sprintf("%d %s open, %d due, %d overdue, %d failing, %d need action", h.Open, h.noun(h.Open), h.Due, h.Overdue,
		h.Failing, h.NeedsAction)
	if h.CallbackPanics > 0 {
		s += fmt.Sprintf(", %d callback panics recovered in this process", h.CallbackPanics)
	}
	if h.WebhookRefusals.Count > 0 && !h.WebhookRefusing {
		s += "\n" + h.WebhookRefusals.String() + " (none in the last " + WebhookRefusalWindow.String() + ")"
	}
	return s
}

// Idle says, when items are overdue, that no worker has claimed work for
// Waiting ("no worker has claimed work for 5m0s: 3 payouts overdue: are
// the workers running (Run)?"); "" when none is overdue.
func (h Health) Idle() string {
	if h.Overdue == 0 {
		return ""
	}
	return fmt.Sprintf("no worker has claimed work for %s: %d %s overdue: are the workers running (Run)?",
		h.Waiting.Round(time.Second), h.Overdue, h.noun(h.Overdue))
}

// noun is Noun for n of them ("1 payout", "2 payouts").
func (h Health) noun(n int) string {
	if n == 1 {
		return strings.TrimSuffix(h.Noun, "s")
	}
	return h.Noun
}

// healthSQL is a health statement: open, due, overdue, failing, needing
// action (open or not), how long the oldest due item has waited (in
// microseconds), then the commonest failure's
// class, count, text and time. open is the SQL condition of an open item, action that of one
// needing a person; $1 is the lease in microseconds.
func healthSQL(table, open, action string) string {
	return fmt.Sprintf(`WITH o AS (SELECT * FROM %[1]s WHERE %[2]s)
SELECT (SELECT count(*) FROM o)::int,
    (SELECT count(*) FROM o WHERE next_at <= now())::int,
    (SELECT count(*) FROM o WHERE next_at <= now() - $1 * interval '1 microsecond')::int,
    (SELECT count(*) FROM o WHERE fail_count > 0)::int,
    (SELECT count(*) FROM %[1]s WHERE %[3]s)::int,
    COALESCE((SELECT (extract(epoch FROM now() - min(next_at)) * 1000000)::bigint FROM o WHERE next_at <= now()), 0),
    COALESCE(c.fail_class, ''), COALESCE(c.n, 0), COALESCE(c.fail_text, ''), c.failed_at
FROM (SELECT 1) one LEFT JOIN LATERAL (
    SELECT fail_class, count(*) OVER (PARTITION BY fail_class)::int AS n, fail_text, failed_at
    FROM o WHERE fail_count > 0 ORDER BY 2 DESC, failed_at DESC LIMIT 1) c ON true`, table, open, action)
}

// health runs a health statement.
func (w *watch) health(ctx context.Context, pool *pgxpool.Pool, noun, stmt string, lease time.Duration) (Health, error) {
	h := Health{Noun: noun, CallbackPanics: w.panics.Load()}
	var class string
	var at *time.Time
	var waiting int64
	err := pool.QueryRow(ctx, stmt, lease.Microseconds()).Scan(&h.Open, &h.Due, &h.Overdue, &h.Failing, &h.NeedsAction,
		&waiting, &class, &h.CommonestCount, &h.Commonest.Text, &at)
	h.Waiting = time.Duration(waiting) * time.Microsecond
	if err != nil {
		return Health{}, fmt.Errorf("pgstore: the health of the %s: %w", noun, err)
	}
	h.Commonest.Class, h.Commonest.Count = FailureClass(class), h.CommonestCount
	if at != nil {
		h.Commonest.At = *at
	}
	return h, nil
}

// failCols are the failure columns every read returns, in failScan's
// order; failDDL adds them to a table (an older table too).
const failCols = `fail_class, fail_text, failed_at, fail_count`

func failDDL(table string) string {
	return fmt.Sprintf(`ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS fail_class text NOT NULL DEFAULT '';
ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS fail_text text NOT NULL DEFAULT '';
ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS failed_at timestamptz;
ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS fail_count integer NOT NULL DEFAULT 0;`, table)
}

// failScan scans failCols into a Failure.
type failScan struct {
	f     *Failure
	class string
	at    *time.Time
}

func (s *failScan) dest(f *Failure) []any {
	s.f = f
	return []any{&s.class, &f.Text, &s.at, &f.Count}
}

func (s *failScan) done() {
	s.f.Class = FailureClass(s.class)
	if s.at != nil {
		s.f.At = *s.at
	}
}

// isCallback reports whether err is a callback's error or recovered panic.
func isCallback(err error) bool {
	var pe *CallbackPanicError
	return errors.Is(err, errCallback) || errors.As(err, &pe)
}

// doubling is base doubled n times, at most ceiling.
func doubling(base, ceiling time.Duration, n int) time.Duration {
	d := base
	for range min(n, 30) {
		d *= 2
		if d >= ceiling {
			return ceiling
		}
	}
	return d
}

// keyMaxWait bounds the wait between two probes of a refused API key.
const keyMaxWait = 5 * time.Minute

// keyGate holds a Run's claims back while the API refuses its key (401,
// 403): no retry fixes that, so instead of every due item failing in
// turn, one item at a time probes the key, once per window (PollInterval
// doubling to keyMaxWait), until the API answers anything else.
type keyGate struct {
	mu    sync.Mutex
	until time.Time     // no claim before this
	every time.Duration // the current window (0: the key is not refused)
	base  time.Duration // the first window (the engine's PollInterval)
}

// claims returns how many of n items a claim may take now: n while the
// key is not refused, else 1 once per window (the probe) and 0 meanwhile.
func (g *keyGate) claims(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	switch {
	case g.every == 0:
		return n
	case now.Before(g.until):
		return 0
	}
	g.every = min(2*g.every, keyMaxWait)
	g.until = now.Add(g.every)
	return 1
}

// refused records a 401 or 403.
func (g *keyGate) refused() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.every == 0 {
		g.every = max(g.base, time.Millisecond)
	}
	if until := time.Now().Add(g.every); until.After(g.until) {
		g.until = until
	}
}

// answered records an API call's outcome: anything but a 401 or 403 (an
// answer, or an error that is not the key's) lets the claims go on.
func (w *watch) answered(err error) {
	if err != nil && classify(err).Permanent() {
		return
	}
	w.key.mu.Lock()
	defer w.key.mu.Unlock()
	w.key.every, w.key.until = 0, time.Time{}
}

// failSet records a worker's failure (the parameters class and text) or,
// with none, resets the count of failures in a row (the read succeeded).
func failSet(class, text string) string {
	return fmt.Sprintf(`fail_count = CASE WHEN %[1]s::text = '' THEN 0 ELSE fail_count + 1 END,
    fail_class = CASE WHEN %[1]s::text = '' THEN fail_class ELSE %[1]s::text END,
    fail_text = CASE WHEN %[1]s::text = '' THEN fail_text ELSE %[2]s::text END,
    failed_at = CASE WHEN %[1]s::text = '' THEN failed_at ELSE now() END`, class, text)
}
