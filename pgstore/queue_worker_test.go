package pgstore_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"sync/atomic"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"

	"github.com/shopspring/decimal"
)

// Every way a create request can end: the intent ends paid with exactly
// one payout when the API created one, is resent only after the list
// showed it was not created, and a definite refusal is final with its
// error and its effect.
func TestQueueCreateOutcomes(t *testing.T) {
	tests := []struct {
		name         string
		fault        cryptopaytest.Fault
		wantState    pgstore.IntentState
		wantAttempts int
		wantPayouts  int
		wantVerdict  string
	}{
		{"dropped after processing", cryptopaytest.Fault{Process: true, Drop: true}, pgstore.StatePaid, 1, 1, "exists"},
		{"dropped before processing", cryptopaytest.Fault{Drop: true}, pgstore.StatePaid, 2, 1, "not_created"},
		{"500 after processing", cryptopaytest.Fault{Process: true, Status: 500}, pgstore.StatePaid, 1, 1, "exists"},
		{"500 without processing", cryptopaytest.Fault{Status: 500}, pgstore.StatePaid, 2, 1, "not_created"},
		{"408 after processing", cryptopaytest.Fault{Process: true, Status: http.StatusRequestTimeout}, pgstore.StatePaid, 1, 1, "exists"},
		{"429 without processing", cryptopaytest.Fault{Status: http.StatusTooManyRequests}, pgstore.StatePaid, 2, 1, "not_created"},
		{"refused 400", cryptopaytest.Fault{Status: http.StatusBadRequest}, pgstore.StateRefused, 1, 0, ""},
		{"refused 422", cryptopaytest.Fault{Status: http.StatusUnprocessableEntity}, pgstore.StateRefused, 1, 0, ""},
		// Server text with quotes, backslashes and SQL is recorded as text.
		{"refused with hostile text", cryptopaytest.Fault{Status: http.StatusBadRequest, Body: hostileBody}, pgstore.StateRefused, 1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newQRig(t)
			q := r.queue(t)
			p := payoutParams(1)
			r.fake.InjectFault(cryptopaytest.RouteCreatePayout, tt.fault)
			r.enqueue(t, q, p)
			r.payAll(t)
			run(t, q)
			waitFor(t, q, string(tt.wantState), func(c map[pgstore.IntentState]int) bool { return c[tt.wantState] == 1 })
			in, err := q.Get(context.Background(), p.OrderID)
			require.NoError(t, err)
			assert.Equal(t, tt.wantAttempts, in.Attempts)
			assert.Equal(t, tt.wantVerdict, in.Verdict)
			assert.Equal(t, tt.wantPayouts, r.fake.PayoutsWithOrderID(p.OrderID))
			assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t), "one effect, committed with the final state")
			if tt.wantState == pgstore.StateRefused {
				want := "fault_injected"
				if tt.fault.Body != "" {
					want = hostileText
				}
				assert.Contains(t, in.LastError, want)
				assert.NotContains(t, in.LastError, r.fake.APIKey)
			}
		})
	}
}

const (
	hostileText = `it's a \\ back'slash E'\\x00' $$; DROP TABLE x; --`
	hostileBody = `{"code":"bad_wallet","message":"it's a \\\\ back'slash E'\\\\x00' $$; DROP TABLE x; --"}`
)

// transitions records what the Observer saw.
type transitions struct {
	mu sync.Mutex
	ts []pgstore.Transition
}

func (o *transitions) observe(t pgstore.Transition) {
	o.mu.Lock()
	o.ts = append(o.ts, t)
	o.mu.Unlock()
}

func (o *transitions) count(to pgstore.IntentState) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, t := range o.ts {
		if t.To == to {
			n++
		}
	}
	return n
}

// An unknown outcome that the list cannot decide parks the intent: it is
// listed as parked, the Observer is told, nothing is resent, and once the
// list can be read again the reconciliation finds the payout.
func TestQueueParkedThenFound(t *testing.T) {
	r := newQRig(t)
	var obs transitions
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Observer = obs.observe })
	p := payoutParams(1)
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	r.fake.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 500, Times: 1 << 20})
	r.enqueue(t, q, p)
	r.payAll(t)
	run(t, q)
	waitFor(t, q, "parked", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateParked] == 1 })
	parked, err := q.List(context.Background(), pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateParked}})
	require.NoError(t, err)
	require.Len(t, parked, 1)
	assert.Equal(t, "still_unknown", parked[0].Verdict)
	assert.NotEmpty(t, parked[0].LastError)
	assert.Equal(t, 1, parked[0].Attempts)
	assert.Positive(t, obs.count(pgstore.StateParked), "the Observer saw it parked")

	r.fake.ClearFaults()
	waitFor(t, q, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
	in, err := q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, 1, in.Attempts, "never resent")
	assert.Equal(t, "exists", in.Verdict)
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(p.OrderID))
}

// tieHidingTransport passes every request to the fake but, while hiding,
// answers the payout list itself: two payouts of other orderIds that share
// a createdAt, one a page, the same one shown at both places (they swap
// places between requests: the model allows it), so no page ever shows
// the other.
type tieHidingTransport struct{ hiding *atomic.Bool }

func (h tieHidingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !h.hiding.Load() || r.URL.Path != "/v1/payout/list" {
		return http.DefaultTransport.RoundTrip(r)
	}
	items := `{"status":"paid","amount":"1","orderId":"someone-else","customerId":"c","createdAt":"2025-01-01T00:00:00Z"}`
	if off, _ := strconv.Atoi(r.URL.Query().Get("offset")); off >= 2 {
		items = ""
	}
	body := `{"payout":[` + items + `],"count":2}`
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// A list whose pages do not prove that every payout was seen is an
// unknown verdict (*cryptopay.ListProofError), never "not created": the
// intent is parked, the failure on record and in Health, nothing resent;
// once the list proves its answer the reconciliation finds the payout.
func TestQueueListProofUnknownParks(t *testing.T) {
	r := newQRig(t)
	var hiding atomic.Bool
	hiding.Store(true)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Client = r.fake.Client(cryptopay.WithHTTPClient(&http.Client{Transport: tieHidingTransport{&hiding}}))
	})
	p := payoutParams(1)
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	r.enqueue(t, q, p)
	r.payAll(t)
	run(t, q)
	waitFor(t, q, "parked", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateParked] == 1 })
	in, err := q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutStillUnknown.String(), in.Verdict)
	assert.Contains(t, in.LastError, "prove 1 distinct payouts where the list holds 2")
	assert.True(t, in.LastFailure.Failing())
	assert.Equal(t, pgstore.FailOther, in.LastFailure.Class)
	h, err := q.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, h.NeedsAction, "parked: a person's attention")
	assert.Equal(t, 1, h.Failing)
	assert.Contains(t, h.Commonest.Text, "distinct payouts")

	hiding.Store(false)
	waitFor(t, q, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
	in, err = q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, 1, in.Attempts, "never resent")
	assert.Equal(t, "exists", in.Verdict)
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(p.OrderID))
}

// An operator who checked that a parked attempt created nothing retries
// it: a second attempt is sent and followed by its payout id.
func TestQueueParkedRetry(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	p := payoutParams(1)
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true}) // not processed
	r.fake.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 500, Times: 1 << 20})
	r.enqueue(t, q, p)
	r.payAll(t)
	run(t, q)
	waitFor(t, q, "parked", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateParked] == 1 })
	ctx := context.Background()
	assert.ErrorIs(t, q.Approve(ctx, p.OrderID, "ops", "x"), pgstore.ErrIntentState)
	assert.ErrorIs(t, q.Retry(ctx, "nope", "ops", "x"), pgstore.ErrIntentNotFound)
	require.NoError(t, q.Retry(ctx, p.OrderID, "ops", "checked the dashboard, no payout for this orderId"))
	waitFor(t, q, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
	in, err := q.Get(ctx, p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, 2, in.Attempts)
	assert.NotEmpty(t, in.PayoutID, "followed by id")
	assert.Contains(t, in.Note, "checked the dashboard")
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(p.OrderID))
	assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t))
}

// sendOne enqueues p, works the queue until p's payout is created, and
// returns the payout's id at the fake.
func (r *qrig) sendOne(t *testing.T, q *pgstore.Queue, p cryptopay.CreatePayoutParams) string {
	t.Helper()
	r.enqueue(t, q, p)
	run(t, q)
	waitFor(t, q, "created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 1 })
	ids := r.fake.PayoutIDsWithOrderID(p.OrderID)
	require.Len(t, ids, 1)
	return ids[0]
}

// A failed payout ends the intent failed, with the payout's status.
func TestQueuePayoutFailed(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	p := payoutParams(1)
	id := r.sendOne(t, q, p)
	require.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutCancelled))
	waitFor(t, q, "failed", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateFailed] == 1 })
	in, err := q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutCancelled, in.PayoutStatus)
	assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t))
}

// A webhook wired to PayoutChanged ends the follow at once: with a poll
// interval of an hour, the intent is final after the processor's webhook,
// not after the poll. The handler re-reads the payout through the API
// (Client set), and the queue reads it again itself.
func TestQueueWebhookWakes(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.FollowEvery = time.Hour })
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret, Client: r.fake.Client(),
		OnPayout: q.PayoutChanged,
	})
	require.NoError(t, err)
	hooks := httptest.NewServer(h)
	t.Cleanup(hooks.Close)
	p := payoutParams(1)
	p.WebhookURL, err = webhook.URL(hooks.URL+"/hooks", secret, p.OrderID)
	require.NoError(t, err)
	id := r.sendOne(t, q, p)
	require.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutProcessing))
	require.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutPaid))
	waitFor(t, q, "paid after the webhook", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
	assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t))
}

// Callbacks are never skipped: a final state recorded by a process
// without OnFinal (an operator's CLI rejecting, a worker without it)
// leaves the callback due, and a Run with OnFinal runs it exactly once, in
// the transaction that clears it. Before, the CLI's reject never reached
// the application's OnFinal.
func TestQueueCallbackDue(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	noCallback := func(c *pgstore.QueueConfig) { c.OnFinal = nil }
	cli := r.queue(t, noCallback, func(c *pgstore.QueueConfig) {
		c.Client = nil
		c.Guardrails = pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(50)}}
	})
	rejected, paid := withAmount(payoutParams(1), "60"), payoutParams(2)
	r.enqueue(t, cli, rejected)
	require.NoError(t, cli.Reject(ctx, rejected.OrderID, "ops", "not this customer"))
	in, err := cli.Get(ctx, rejected.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateRejected, in.State)
	assert.True(t, in.CallbackDue)

	// A worker without OnFinal pays the other: final, callback due.
	plain := r.queue(t, noCallback)
	r.enqueue(t, plain, paid)
	r.payAll(t)
	stop := run(t, plain)
	waitIntent(t, plain, paid.OrderID, "paid without a callback", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	stop()
	in, err = plain.Get(ctx, paid.OrderID)
	require.NoError(t, err)
	assert.True(t, in.CallbackDue)
	assert.Empty(t, r.effectCounts(t))

	// Two workers with OnFinal: each callback runs once.
	q1, q2 := r.queue(t), r.queue(t)
	run(t, q1)
	run(t, q2)
	for _, id := range []string{rejected.OrderID, paid.OrderID} {
		waitIntent(t, q1, id, "callback run", func(in *pgstore.Intent) bool { return !in.CallbackDue })
	}
	n, err := pgstore.Claim(ctx, r.queue(t), 10)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left to claim")
	assert.Equal(t, map[string]int{rejected.OrderID: 1, paid.OrderID: 1}, r.effectCounts(t))
	in, err = q1.Get(ctx, rejected.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateRejected, in.State, "the callback saw the state, and it stays")
}

// The payout id is learned: an intent whose payout only the list found
// (the create's answer was lost) records the id from the payout's
// webhook, once the queue's own API read confirms the orderId; a webhook
// naming another order's payout teaches nothing. Before, PayoutChanged
// only woke the intent, which ended paid with an empty PayoutID.
func TestQueuePayoutIDLearned(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.FollowEvery = time.Hour })
	other := r.sendOne(t, q, payoutParams(2))
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	p := payoutParams(1)
	r.enqueue(t, q, p)
	in := waitIntent(t, q, p.OrderID, "found by the list", func(in *pgstore.Intent) bool { return in.State == pgstore.StateCreated })
	require.Empty(t, in.PayoutID, "the list carries no id")
	ids := r.fake.PayoutIDsWithOrderID(p.OrderID)
	require.Len(t, ids, 1)

	// A forged event: another order's payout under this orderId.
	require.NoError(t, q.PayoutChanged(ctx, &cryptopay.Payout{ID: other, OrderID: p.OrderID}))
	in, err := q.Get(ctx, p.OrderID)
	require.NoError(t, err)
	assert.Empty(t, in.PayoutID, "not confirmed by the API")

	require.NoError(t, r.fake.SetPayoutStatus(ids[0], cryptopay.PayoutProcessing))
	require.NoError(t, r.fake.SetPayoutStatus(ids[0], cryptopay.PayoutPaid))
	require.NoError(t, q.PayoutChanged(ctx, &cryptopay.Payout{ID: ids[0], OrderID: p.OrderID, Status: cryptopay.PayoutPaid}))
	in = waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	assert.Equal(t, ids[0], in.PayoutID)
}

// A webhook that arrives while a worker is following the intent is not
// lost: the worker's record of the status it read (still processing)
// keeps the intent due instead of putting it off for FollowEvery. Before,
// the record overwrote the wake-up and the paid payout waited an hour.
func TestQueueWakeDuringFollow(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	// One slot: the worker cannot claim the woken intent again before it
	// has recorded what it read, which is when the wake-up was lost.
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.FollowEvery, c.Concurrency = time.Hour, 1 })
	var armed, fired atomic.Bool
	var id string
	pgstore.SetQueueHook(q, func(point string) {
		if point != "follow-read" || !armed.Load() || fired.Swap(true) {
			return
		}
		// The worker has read "processing"; now the payout is paid and its
		// webhook wakes the intent before the worker records what it read.
		assert.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutPaid))
		assert.NoError(t, q.PayoutChanged(ctx, &cryptopay.Payout{ID: id, OrderID: "wd-000001", Status: cryptopay.PayoutPaid}))
	})
	r.wakeFollowUntilPaid(t, q, &id, &armed)
	assert.True(t, fired.Load(), "the wake-up came during a follow")
}

// wakeFollowUntilPaid sends wd-000001's payout (its id in *id), marks it
// processing, arms the test's hook and wakes the intent, so that a worker
// follows it through the hook; then waits for the intent to be paid.
func (r *qrig) wakeFollowUntilPaid(t *testing.T, q *pgstore.Queue, id *string, armed *atomic.Bool) {
	t.Helper()
	p := payoutParams(1)
	*id = r.sendOne(t, q, p)
	require.NoError(t, r.fake.SetPayoutStatus(*id, cryptopay.PayoutProcessing))
	armed.Store(true)
	require.NoError(t, q.PayoutChanged(context.Background(), &cryptopay.Payout{ID: *id, OrderID: p.OrderID, Status: cryptopay.PayoutProcessing}))
	waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
}

// A wake-up that commits after the worker's record of a follow has
// started, but before that record reaches the row, is not lost (issue 29:
// TestQueuePayoutIDLearned waited an hour 1 run in 3). The record kept the
// intent due only when the wake-up's time was at or before its own
// transaction's start (now()), and the wake-up's time is its own
// transaction's start: a wake-up that began a moment later looked like the
// future, and the paid payout waited FollowEvery. Here the record is held
// between its start and the row by a lock on the history table (its
// statement appends there), the wake-up commits meanwhile, then the lock
// goes: the intent must stay due and reach paid.
func TestQueueWakeBetweenRecordStartAndRow(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	// One implicit transaction per statement, begun before the statement
	// takes its locks (the extended protocol's cached statements take them
	// at Bind, also inside the transaction; Exec mode makes it certain).
	pcfg, err := pgxpool.ParseConfig(r.srv.DSN())
	require.NoError(t, err)
	pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Pool, c.FollowEvery, c.Concurrency = pool, time.Hour, 1 })
	hist := r.table + "_history"
	var armed, fired atomic.Bool
	var id string
	done := make(chan struct{})
	pgstore.SetQueueHook(q, func(point string) {
		if point != "follow-read" || !armed.Load() || fired.Swap(true) {
			return
		}
		lock, err := r.pool.Begin(ctx)
		if !assert.NoError(t, err) {
			return
		}
		_, err = lock.Exec(ctx, "LOCK TABLE "+hist+" IN SHARE MODE")
		assert.NoError(t, err)
		go func() {
			defer close(done)
			defer func() { assert.NoError(t, lock.Commit(ctx)) }()
			// Wait for the worker's record to wait on the lock: its
			// transaction has begun.
			for {
				var waiting int
				assert.NoError(t, r.pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass", hist).Scan(&waiting))
				if waiting > 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			assert.NoError(t, r.fake.SetPayoutStatus(id, cryptopay.PayoutPaid))
			assert.NoError(t, q.PayoutChanged(ctx, &cryptopay.Payout{ID: id, OrderID: "wd-000001", Status: cryptopay.PayoutPaid}))
		}()
	})
	r.wakeFollowUntilPaid(t, q, &id, &armed)
	<-done
	assert.True(t, fired.Load(), "the wake-up came between the record's start and its row")
}

// A 401 to a create request is proof that nothing was created (the key is
// checked first), and says nothing about the payout: with a rotated key
// each intent the key probe sends stays queued, its failure on record,
// nothing final and no OnFinal; once the key works each one is paid
// exactly once. Before, each probe refused one payout for good.
func TestQueueRefusedKeyKeepsPayoutsQueued(t *testing.T) {
	r := newQRig(t)
	var seen transitions
	// The first claim takes all three; their 401s hold claims back for a
	// window of PollInterval, an hour here, so no probe is in flight when
	// the run stops (a send cut off by the stop is rightly reconciled).
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Client, c.Observer, c.PollInterval = rotatedClient(t, r.fake), seen.observe, time.Hour
	})
	ps := []cryptopay.CreatePayoutParams{payoutParams(1), payoutParams(2), payoutParams(3)}
	r.enqueue(t, q, ps...)
	stop := run(t, q)
	for _, p := range ps {
		waitIntent(t, q, p.OrderID, "a refused send", func(in *pgstore.Intent) bool {
			return in.Attempts >= 1 && in.State != pgstore.StateSending
		})
	}
	stop()
	for _, p := range ps {
		in, err := q.Get(context.Background(), p.OrderID)
		require.NoError(t, err)
		assert.Equal(t, pgstore.StateQueued, in.State, p.OrderID)
		assert.Equal(t, pgstore.FailUnauthorized, in.LastFailure.Class, p.OrderID)
		assert.Contains(t, in.LastError, "401")
		assert.NotContains(t, in.LastError+in.LastFailure.Text, rotatedKey)
	}
	for _, st := range []pgstore.IntentState{pgstore.StatePaid, pgstore.StateFailed, pgstore.StateRefused} {
		assert.Zero(t, seen.count(st), "no final transition: %s", st)
	}
	assert.Empty(t, r.effectCounts(t), "no OnFinal")
	assert.Zero(t, r.fake.PayoutCount(), "nothing created")

	// The key is fixed: each one is sent and paid, once.
	r.payAll(t)
	run(t, r.queue(t))
	waitFor(t, q, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == len(ps) })
	want := map[string]int{}
	for _, p := range ps {
		want[p.OrderID] = 1
		assert.Equal(t, 1, r.fake.PayoutsWithOrderID(p.OrderID), p.OrderID)
	}
	assert.Equal(t, want, r.effectCounts(t), "OnFinal once each, paid")
}
