package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"
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
	assert.ErrorIs(t, q.Approve(ctx, p.OrderID, "x"), pgstore.ErrIntentState)
	assert.ErrorIs(t, q.Retry(ctx, "nope", "x"), pgstore.ErrIntentNotFound)
	require.NoError(t, q.Retry(ctx, p.OrderID, "ops: checked the dashboard, no payout for this orderId"))
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
