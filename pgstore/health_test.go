package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// logLines is a logger's output, safe for the workers' goroutines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines contain s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.Lines(l.buf.String()) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// A failure's class, and whether a retry can fix it, from the error.
func TestFailureClass(t *testing.T) {
	tests := []struct {
		err       error
		want      pgstore.FailureClass
		permanent bool
	}{
		{&cryptopay.APIError{StatusCode: http.StatusUnauthorized}, pgstore.FailUnauthorized, true},
		{fmt.Errorf("reading: %w", &cryptopay.APIError{StatusCode: http.StatusForbidden}), pgstore.FailForbidden, true},
		{&cryptopay.APIError{StatusCode: http.StatusTooManyRequests}, pgstore.FailRateLimited, false},
		{&cryptopay.APIError{StatusCode: http.StatusNotFound}, pgstore.FailNotFound, false},
		{&cryptopay.APIError{StatusCode: http.StatusConflict}, pgstore.FailRefused, false},
		{&cryptopay.APIError{StatusCode: http.StatusBadGateway}, pgstore.FailServer, false},
		{&cryptopay.OutcomeUnknownError{Err: errors.New("reset")}, pgstore.FailUnreachable, false},
		{context.DeadlineExceeded, pgstore.FailUnreachable, false},
		{&pgstore.CallbackPanicError{Callback: "OnChange", Value: "boom"}, pgstore.FailPanic, false},
		{errors.New("odd"), pgstore.FailOther, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			f := pgstore.FailureOf(tt.err)
			assert.Equal(t, tt.want, f.Class)
			assert.Equal(t, tt.permanent, f.Class.Permanent())
			assert.Equal(t, tt.permanent, strings.Contains(f.Class.Hint(), "no retry fixes this"))
		})
	}
}

// A panicking OnChange or tracker Observer does not take the process
// down. OnChange's panic rolls its change back (the row is not advanced:
// the second call finds the status unrecorded and the first panic on
// record), the payment is read again after a backoff, and once OnChange
// stops panicking the change is recorded and credited exactly once. An
// Observer is told after the commit: its panic is recovered and counted,
// and the change, committed with OnChange's effects, stays. Each panic is
// counted in Health and logged once, with the orderId. Before, the
// panic killed the process (and this test binary).
func TestTrackerCallbackPanics(t *testing.T) {
	for _, where := range []string{"OnChange", "Observer"} {
		t.Run(where, func(t *testing.T) {
			r := newTRig(t)
			var logs logLines
			var calls counter
			var tr *pgstore.Tracker
			const panics = 2
			tr = r.start(t, 0, func(c *pgstore.TrackerConfig) {
				c.Logger = logs.logger()
				onChange := c.OnChange
				c.OnChange = func(ctx context.Context, tx pgx.Tx, ch *pgstore.PaymentChange) error {
					if k := 0; where == "OnChange" {
						if k = calls.next(); k > panics {
							return onChange(ctx, tx, ch)
						}
						tp, err := tr.Get(ctx, ch.OrderID)
						require.NoError(t, err)
						assert.Equal(t, cryptopay.PaymentWaiting, tp.Status, "rolled back: not advanced from the create answer's status")
						if k == 2 {
							assert.Equal(t, pgstore.FailPanic, tp.LastFailure.Class)
							assert.Equal(t, 1, tp.LastFailure.Count)
							assert.Contains(t, tp.LastFailure.Text, "OnChange panicked: ledger bug")
						}
						panic("ledger bug")
					}
					return onChange(ctx, tx, ch)
				}
				c.Observer = func(pgstore.PaymentChange) {
					if where == "Observer" && calls.next() <= 1 {
						panic("metrics bug")
					}
				}
			})
			ctx := context.Background()
			run(t, tr)
			p := r.create(t, "ord-panic", "10")
			require.True(t, r.track(t, tr, p))
			require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
			tp := r.waitStatus(t, "ord-panic", cryptopay.PaymentPaid)
			assert.Equal(t, []string{"paid"}, r.credited(t, "ord-panic"), "credited once")
			hist, err := tr.History(ctx, "ord-panic")
			require.NoError(t, err)
			assert.Len(t, hist, 1, "recorded once")
			assert.Equal(t, 0, tp.LastFailure.Count, "reset by the change that succeeded")
			h, err := tr.Health(ctx)
			require.NoError(t, err)
			want := map[string]int64{"OnChange": panics, "Observer": 1}[where]
			assert.Equal(t, want, h.CallbackPanics)
			assert.Equal(t, int(want)+map[string]int{"OnChange": 1, "Observer": 0}[where], calls.next()-1, "retried until it stopped panicking")
			assert.Equal(t, 1, logs.count(where+" panicked"), "one line for the class")
			assert.Equal(t, 1, logs.count("orderId=ord-panic"))
		})
	}
}

// counter counts a callback's calls, from any goroutine.
type counter struct {
	mu sync.Mutex
	n  int
}

// next counts a call and returns its number (1 first).
func (c *counter) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// A panicking OnFinal or queue Observer does not take the process down.
// OnFinal's panic rolls the final state back (the intent stays created,
// the first panic on record), the intent is looked at again after a
// backoff, and once OnFinal stops panicking the final state and its effect
// are recorded exactly once. The Observer is told after the commit: its
// panic is recovered and counted, and the change stays. Before, the panic
// killed the process (and this test binary).
func TestQueueCallbackPanics(t *testing.T) {
	for _, where := range []string{"OnFinal", "Observer"} {
		t.Run(where, func(t *testing.T) {
			r := newQRig(t)
			var logs logLines
			var calls counter
			var q *pgstore.Queue
			const panics = 2
			q = r.queue(t, func(c *pgstore.QueueConfig) {
				c.Logger = logs.logger()
				c.OnFinal = func(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
					if k := 0; where == "OnFinal" {
						if k = calls.next(); k > panics {
							return r.onFinal(ctx, tx, in)
						}
						got, err := q.Get(ctx, in.Params.OrderID)
						require.NoError(t, err)
						assert.Equal(t, pgstore.StateCreated, got.State, "rolled back: not advanced")
						if k == 2 {
							assert.Equal(t, pgstore.FailPanic, got.LastFailure.Class)
							assert.Equal(t, 1, got.LastFailure.Count)
						}
						panic("ledger bug")
					}
					return r.onFinal(ctx, tx, in)
				}
				c.Observer = func(tr pgstore.Transition) {
					if where == "Observer" && tr.To == pgstore.StatePaid && calls.next() <= 1 {
						panic("metrics bug")
					}
				}
			})
			p := payoutParams(1)
			id := r.sendOne(t, q, p)
			require.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutProcessing))
			require.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutPaid))
			in := waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
			assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t), "the effect once")
			assert.Equal(t, 0, in.LastFailure.Count, "reset by the final state")
			h, err := q.Health(context.Background())
			require.NoError(t, err)
			want := map[string]int64{"OnFinal": panics, "Observer": 1}[where]
			assert.Equal(t, want, h.CallbackPanics)
			assert.Equal(t, int(want)+map[string]int{"OnFinal": 1, "Observer": 0}[where], calls.next()-1, "retried until it stopped panicking")
			assert.Equal(t, 1, logs.count(where+" panicked"), "one line for the class")
		})
	}
}

// rotatedKey is an API key the fake refuses (401).
const rotatedKey = "sk_rotated_key_0123456789abcdef"

// rotatedClient is a client of fake with a key it refuses.
func rotatedClient(t testing.TB, fake *cryptopaytest.Server) *cryptopay.Client {
	t.Helper()
	c, err := cryptopay.NewClient(fake.URL, rotatedKey)
	require.NoError(t, err)
	return c
}

// A rotated API key is loud: every read fails 401, and each payment shows
// the failure (class, scrubbed text, how many in a row), the health
// summary says what to do, and the log has one line for the class, not
// one per read. A read with the right key resets the count. Before, the
// payments showed state=open status="" with nothing recorded, and
// nothing was logged.
func TestTrackerWrongKeyIsLoud(t *testing.T) {
	r := newTRig(t)
	wrong := rotatedClient(t, r.fake)
	var logs logLines
	tr := r.start(t, 0, func(c *pgstore.TrackerConfig) {
		c.Logger = logs.logger()
		c.OpenEvery = 50 * time.Millisecond
		pgstore.WithTrackerAPI(c, wrong)
	})
	orders := []string{"ord-key-1", "ord-key-2", "ord-key-3"}
	for _, id := range orders {
		require.True(t, r.track(t, tr, r.create(t, id, "10")))
	}
	stop := run(t, tr)
	failing := func(min int) func() bool {
		return func() bool {
			ps, err := tr.List(context.Background(), pgstore.TrackFilter{})
			require.NoError(t, err)
			for _, p := range ps {
				if p.LastFailure.Count < min {
					return false
				}
			}
			return len(ps) == len(orders)
		}
	}
	trackWaitFor(t, "three failed reads of each", failing(3))
	stop()
	for _, id := range orders {
		tp, err := tr.Get(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, pgstore.FailUnauthorized, tp.LastFailure.Class)
		assert.True(t, tp.LastFailure.Class.Permanent())
		assert.Contains(t, tp.LastFailure.Text, "401")
		assert.NotContains(t, tp.LastFailure.Text, rotatedKey)
		assert.False(t, tp.LastFailure.At.IsZero())
		assert.Equal(t, cryptopay.PaymentWaiting, tp.Status, "nothing recorded: still the create answer's status")
		assert.Zero(t, tp.Changes, "nothing recorded")
	}
	h, err := tr.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, h.Failing)
	assert.Equal(t, 3, h.CommonestCount)
	assert.Equal(t, pgstore.FailUnauthorized, h.Commonest.Class)
	assert.Contains(t, h.String(), "3 payments failing: 401 unauthorized: no retry fixes this: check the API key")
	assert.False(t, h.OK())
	assert.Equal(t, 1, logs.count("class=unauthorized"), "one line for the class, not one per read:\n%s", logs.buf.String())
	assert.Equal(t, 1, logs.count("level=ERROR"), "a failure no retry fixes is an error")

	// The key is fixed: the next read resets the count.
	right := r.start(t, 0, func(c *pgstore.TrackerConfig) { c.Logger = logs.logger(); c.OpenEvery = 50 * time.Millisecond })
	run(t, right)
	trackWaitFor(t, "reads with the right key", func() bool {
		h, err := right.Health(context.Background())
		require.NoError(t, err)
		return h.Failing == 0
	})
	tp, err := right.Get(context.Background(), orders[0])
	require.NoError(t, err)
	assert.Equal(t, 0, tp.LastFailure.Count)
	assert.Equal(t, pgstore.FailUnauthorized, tp.LastFailure.Class, "what failed last is kept")
}

// The queue's follow-up reads with a rotated key: the intent shows the
// failure, the health summary says it, one log line for the class.
func TestQueueWrongKeyIsLoud(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	p := payoutParams(1)
	r.enqueue(t, q, p)
	stop := run(t, q)
	waitIntent(t, q, p.OrderID, "created", func(in *pgstore.Intent) bool { return in.State == pgstore.StateCreated })
	stop()
	var logs logLines
	wrong := rotatedClient(t, r.fake)
	q2, err := pgstore.NewQueue(context.Background(), func() pgstore.QueueConfig {
		c := r.config(wrong)
		c.Logger = logs.logger()
		return c
	}())
	require.NoError(t, err)
	stop = run(t, q2)
	in := waitIntent(t, q2, p.OrderID, "three failed reads", func(in *pgstore.Intent) bool { return in.LastFailure.Count >= 3 })
	stop()
	assert.Equal(t, pgstore.StateCreated, in.State)
	assert.Equal(t, pgstore.FailUnauthorized, in.LastFailure.Class)
	assert.NotContains(t, in.LastFailure.Text, rotatedKey)
	h, err := q2.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, h.Failing)
	assert.Contains(t, h.String(), "1 payout failing: 401 unauthorized: no retry fixes this: check the API key")
	assert.Equal(t, 1, logs.count("class=unauthorized"), "one line for the class:\n%s", logs.buf.String())
}

// Health reads as a summary an operator can act on.
func ExampleHealth_String() {
	h := pgstore.Health{Noun: "payments", Open: 40, Due: 12, Failing: 12, CommonestCount: 12,
		Commonest: pgstore.Failure{Class: pgstore.FailUnauthorized, Text: "cryptopay: GET /v1/payment/…: 401 unauthorized", Count: 4}}
	fmt.Println(h)
	// Output:
	// 12 payments failing: 401 unauthorized: no retry fixes this: check the API key (12 of them; latest: "cryptopay: GET /v1/payment/…: 401 unauthorized")
	// 40 payments open, 12 due, 0 overdue, 12 failing, 0 need action
}

// inflight is a tracker API that counts its reads and the most it had in
// flight at once.
type inflight struct {
	api              pgstore.TrackerAPI
	reads, now, most atomic.Int64
}

func (a *inflight) GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error) {
	a.reads.Add(1)
	n := a.now.Add(1)
	defer a.now.Add(-1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
	return a.api.GetPayment(ctx, id, opts...)
}

// While the API refuses the key, the workers do not spend a read on every
// due payment: one payment at a time probes the key, once per window, and
// the others wait. Nine payments fall due at once after the first 401:
// they are read one by one, never two at once. Before, every due payment
// was read (and refused) on every claim, Concurrency at a time.
func TestTrackerRefusedKeyProbesOneAtATime(t *testing.T) {
	r := newTRig(t)
	wrong := rotatedClient(t, r.fake)
	api := &inflight{api: wrong}
	var logs logLines
	tr := r.start(t, 0, func(c *pgstore.TrackerConfig) {
		c.Logger = logs.logger()
		c.OpenEvery = time.Hour // read when the test makes it due
		pgstore.WithTrackerAPI(c, api)
	})
	due := func() {
		_, err := r.pool.Exec(context.Background(), "UPDATE "+r.table+" SET next_at = now() WHERE changes = 0 AND fail_count = 0")
		require.NoError(t, err)
	}
	require.True(t, r.track(t, tr, r.create(t, "ord-probe-0", "10")))
	due()
	run(t, tr)
	trackWaitFor(t, "the first 401", func() bool { return api.reads.Load() == 1 })
	trackWaitFor(t, "the failure on record", func() bool {
		tp, err := tr.Get(context.Background(), "ord-probe-0")
		return err == nil && tp.LastFailure.Count == 1
	})
	for i := 1; i <= 9; i++ {
		require.True(t, r.track(t, tr, r.create(t, fmt.Sprintf("ord-probe-%d", i), "10")))
	}
	due()
	trackWaitFor(t, "three probes", func() bool { return api.reads.Load() >= 4 })
	assert.Equal(t, int64(1), api.most.Load(), "one read at a time while the key is refused")
	assert.Equal(t, 1, logs.count("class=unauthorized"))
}

// Due work that nothing claims is named as such: with the queue's and
// the tracker's work overdue by an hour (no worker runs), their health
// says no worker has claimed work for that long, not only "2 overdue".
func TestHealthNoWorkerClaims(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.enqueue(t, q, payoutParams(1), payoutParams(2))
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: r.pool, Client: r.fake.Client(),
		Table: pgtest.Name("tracked"), CreateTable: true})
	require.NoError(t, err)
	r.pay(t, tr, "pay-1", "10", "")
	_, err = r.pool.Exec(context.Background(), "UPDATE "+q.Table()+" SET next_at = now() - interval '1 hour';"+
		"UPDATE "+tr.Table()+" SET next_at = now() - interval '1 hour'")
	require.NoError(t, err)
	for name, health := range map[string]func(context.Context) (pgstore.Health, error){"queue": q.Health, "tracker": tr.Health} {
		h, err := health(context.Background())
		require.NoError(t, err, name)
		assert.Contains(t, h.String(), "no worker has claimed work for 1h0m", name)
		assert.False(t, h.OK(), name)
	}
	h, err := q.Health(context.Background())
	require.NoError(t, err)
	assert.Contains(t, h.String(), "2 payouts overdue: are the workers running (Run)?")
}

// Every line of the summary is kept whatever else it shows: no worker
// claiming overdue work, webhooks refused now and payments failing are
// three lines, none written over by the next.
func TestHealthStringKeepsEveryLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := pgstore.Health{Noun: "payments", Open: 5, Due: 3, Overdue: 3, Failing: 2, CommonestCount: 2, Waiting: time.Hour,
		Commonest:       pgstore.Failure{Class: pgstore.FailUnauthorized, Text: "401 unauthorized", Count: 2},
		WebhookRefusals: webhook.RefusalStats{Count: 4, Since: at, Last: webhook.RefusedToken, LastStatus: http.StatusUnauthorized, LastAt: at},
		WebhookRefusing: true}
	assert.Equal(t, "no worker has claimed work for 1h0m0s: 3 payments overdue: are the workers running (Run)?\n"+
		"webhooks refused: 4 since 2026-01-02T03:04:05Z, last reason token (401) at 2026-01-02T03:04:05Z\n"+
		"2 payments failing: 401 unauthorized: no retry fixes this: check the API key (2 of them; latest: \"401 unauthorized\")\n"+
		"5 payments open, 3 due, 3 overdue, 2 failing, 0 need action", h.String())
}
