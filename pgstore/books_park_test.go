package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// listedOutside creates, at the fake and outside the queue, a payout with
// each p's orderId (what another system or the dashboard does).
func (r *qrig) listedOutside(t *testing.T, ps ...cryptopay.CreatePayoutParams) {
	t.Helper()
	for _, p := range ps {
		_, err := r.fake.Client().CreatePayout(context.Background(), p)
		require.NoError(t, err)
	}
}

// payoutsAt counts the payouts the fake holds for orderID.
func (r *qrig) payoutsAt(orderID string) int { return len(r.fake.PayoutIDsWithOrderID(orderID)) }

// smallPayout is payoutParams(i) for 3.5 usdt: under heldQueue's
// approval threshold.
func smallPayout(i int) cryptopay.CreatePayoutParams {
	p := payoutParams(i)
	p.Amount = decimal.RequireFromString("3.5")
	return p
}

// The books check parks every intent it finds unsent_but_listed: the
// workers never send it (one payout at the fake once they ran), approve
// and retry refuse it, a report-only check changes nothing, and an
// operator's release (the text shown must match) sends it back where it
// was, queued or held for approval, while reject-listed ends it.
func TestBooksParksUnsentButListed(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	held, queued, ended, sentinel, bound := payoutParams(0), smallPayout(1), smallPayout(2), smallPayout(3), smallPayout(4)
	r.enqueueBy(t, q, "carol", held, queued, ended, bound) // needs_approval, queued, queued, queued: never sent
	r.listedOutside(t, held, queued, ended, bound)

	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour}
	res := runBooks(t, pgstore.BooksConfig{Client: cfg.Client, Queue: q, SettleTime: time.Hour, ReportOnly: true})
	assert.Contains(t, res.by["payouts:"+queued.OrderID].Detail, "not parked (a report-only check)")
	in, err := q.Get(ctx, queued.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State, "a report-only check changes nothing")

	res = runBooks(t, cfg)
	for _, p := range []cryptopay.CreatePayoutParams{held, queued, ended} {
		it := res.by["payouts:"+p.OrderID]
		assert.Equal(t, pgstore.BooksUnsentButListed, it.Class, p.OrderID)
		assert.Contains(t, it.Detail, "parked by this check", p.OrderID)
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		assert.Equal(t, pgstore.StateParked, in.State, p.OrderID)
		assert.Equal(t, pgstore.HoldUnsentListed, in.Hold, p.OrderID)
		assert.Contains(t, in.LastError, p.Amount.String()+" usdt/tron, createdAt 20", p.OrderID)
		assert.Contains(t, in.LastError, ", status created: not sent until", p.OrderID)
	}
	assert.Contains(t, runBooks(t, cfg).by["payouts:"+queued.OrderID].Detail, "parked by an earlier check")

	r.enqueue(t, q, sentinel)
	stop := run(t, q)
	waitFor(t, q, "the sentinel sent", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 1 })
	for _, p := range []cryptopay.CreatePayoutParams{held, queued, ended} {
		assert.Equal(t, 1, r.payoutsAt(p.OrderID), "%s: the workers sent nothing", p.OrderID)
	}
	assert.Equal(t, 1, r.payoutsAt(sentinel.OrderID))

	refused := []error{
		q.Approve(ctx, held.OrderID, "alice", "looks fine"),
		q.Retry(ctx, queued.OrderID, "alice", "no payout, says alice"),
	}
	for i, err := range refused {
		require.ErrorIs(t, err, pgstore.ErrUnsentButListed, i)
		require.ErrorIs(t, err, pgstore.ErrIntentState, i)
	}
	bulk, err := q.RetryMany(ctx, []string{queued.OrderID}, "alice", "bulk")
	require.NoError(t, err)
	assert.Equal(t, []string{queued.OrderID}, bulk.Skipped, "a bulk retry skips it")

	r.resolveListed(t, q, held, queued, ended)

	// The listed payout is exactly this intent's: resolved with its id,
	// followed, never sent; the next check compares it as a sent intent.
	require.NoError(t, q.Resolve(ctx, bound.OrderID, r.fake.PayoutIDsWithOrderID(bound.OrderID)[0], "dave", "it is ours, ticket 7"))
	waitFor(t, q, "the resolved intent followed", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 3 })
	assert.Equal(t, 1, r.payoutsAt(bound.OrderID), "resolved: nothing sent")
	assert.Equal(t, pgstore.BooksInFlight, runBooks(t, cfg).by["payouts:"+bound.OrderID].Class, "no longer unsent_but_listed")
	stop()
	r.releasedStaysReleased(t, cfg, held)
}

// releasedStaysReleased: an intent an operator released from a park (held:
// back to needs_approval) is not parked again by the next checks while the
// listed payout is the one the park named, even once that payout's status
// moved; a second payout listed under its orderId parks it again.
func (r *qrig) releasedStaysReleased(t *testing.T, cfg pgstore.BooksConfig, held cryptopay.CreatePayoutParams) {
	t.Helper()
	ctx := context.Background()
	state := func() pgstore.IntentState {
		in, err := cfg.Queue.Get(ctx, held.OrderID)
		require.NoError(t, err)
		return in.State
	}
	require.Equal(t, pgstore.StateNeedsApproval, state())
	it := runBooks(t, cfg).by["payouts:"+held.OrderID]
	assert.Equal(t, pgstore.BooksUnsentButListed, it.Class, "still reported")
	assert.Contains(t, it.Detail, "not parked again: an operator released it")
	require.NoError(t, r.fake.SetPayoutStatus(r.fake.PayoutIDsWithOrderID(held.OrderID)[0], cryptopay.PayoutProcessing))
	assert.Contains(t, runBooks(t, cfg).by["payouts:"+held.OrderID].Detail, "not parked again", "only its status moved")
	assert.Equal(t, pgstore.StateNeedsApproval, state())

	r.listedOutside(t, held) // a second payout under the orderId: new evidence
	assert.Contains(t, runBooks(t, cfg).by["payouts:"+held.OrderID].Detail, "parked by this check")
	assert.Equal(t, pgstore.StateParked, state())
}

// resolveListed makes the operators' moves on the intents the books
// parked: release (refused when the text shown is not the intent's
// now), back to needs_approval or queued; reject-listed, final.
func (r *qrig) resolveListed(t *testing.T, q *pgstore.Queue, held, queued, ended cryptopay.CreatePayoutParams) {
	t.Helper()
	ctx := context.Background()
	s := pgstore.Stores{Queue: q}
	release, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "release")
	reject, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "reject-listed")
	retry, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "retry")
	dave := pgstore.Operator{ID: "dave", Login: "dave"}
	shown := func(p cryptopay.CreatePayoutParams) string {
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		return in.LastError
	}
	in, err := q.Get(ctx, queued.OrderID)
	require.NoError(t, err)
	assert.False(t, retry.AppliesToIntent(in), "no retry is offered")
	assert.True(t, release.AppliesToIntent(in) && reject.AppliesToIntent(in), "release and reject-listed are")
	assert.False(t, release.AppliesToIntent(&pgstore.Intent{State: pgstore.StateParked}), "only for an intent the books parked")
	_, err = retry.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: dave, Values: map[string]string{"note": "checked"}})
	require.ErrorIs(t, err, pgstore.ErrUnsentButListed, "the retry move refuses it")
	_, err = release.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: dave,
		Values: map[string]string{"note": "another order's", "listed": "another text"}})
	require.ErrorIs(t, err, pgstore.ErrChanged, "the text shown must be the intent's")

	for _, c := range []struct {
		p  cryptopay.CreatePayoutParams
		m  pgstore.Move
		to pgstore.IntentState
	}{
		{held, release, pgstore.StateNeedsApproval},
		{queued, release, pgstore.StateQueued},
		{ended, reject, pgstore.StateRejected},
	} {
		got, err := c.m.Do(ctx, s, pgstore.MoveInput{OrderID: c.p.OrderID, By: dave,
			Values: map[string]string{"note": "the listed payout is another order's", "reason": "paid by hand", "listed": shown(c.p)}})
		require.NoError(t, err, c.p.OrderID)
		assert.Equal(t, c.to, got.Intent.State, c.p.OrderID)
		assert.Empty(t, got.Intent.Hold, c.p.OrderID)
	}
	_, err = release.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: dave, Values: map[string]string{"note": "again", "listed": "x"}})
	require.ErrorIs(t, err, pgstore.ErrIntentState, "released once")
	_, err = release.Do(ctx, s, pgstore.MoveInput{OrderID: held.OrderID, By: dave, Values: map[string]string{"note": "no words shown"}})
	var ve *cryptopay.ValidationError
	require.ErrorAs(t, err, &ve, "a release needs the words shown")

	waitFor(t, q, "the released intent sent", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 2 })
	assert.Equal(t, 2, r.payoutsAt(queued.OrderID), "released: the operator said the listed payout is another one")
	assert.Equal(t, 1, r.payoutsAt(held.OrderID), "back to needs_approval: not sent")
	assert.Equal(t, 1, r.payoutsAt(ended.OrderID), "rejected: not sent")
	var effects int
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT count(*) FROM "+r.effects+" WHERE order_id = $1 AND state = 'rejected'",
		ended.OrderID).Scan(&effects))
	assert.Equal(t, 1, effects, "OnFinal ran once for the rejection")
}

// A worker that claimed the intent before the books check parked it does
// not send it: held between its claim and its attempt (in the address
// check) while the check runs, it finds the intent parked and its lease
// gone. Run several times: one payout each time.
func TestBooksParkBeatsAClaimedWorker(t *testing.T) {
	r := newQRig(t)
	for i := range 5 {
		p := smallPayout(100 + i)
		claimed, gate := make(chan struct{}), make(chan struct{})
		var once sync.Once
		var armed atomic.Bool // the enqueue checks the address too: only the worker's check waits
		q := r.queue(t, func(c *pgstore.QueueConfig) {
			c.Guardrails.CheckAddress = func(ctx context.Context, got cryptopay.CreatePayoutParams) error {
				if got.OrderID == p.OrderID && armed.Load() {
					once.Do(func() { close(claimed) })
					<-gate
				}
				return nil
			}
		})
		r.enqueue(t, q, p)
		armed.Store(true)
		r.listedOutside(t, p)
		stop := run(t, q)
		<-claimed
		res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour})
		assert.Contains(t, res.by["payouts:"+p.OrderID].Detail, "parked by this check", i)
		close(gate)
		stop()
		assert.Equal(t, 1, r.payoutsAt(p.OrderID), "run %d: the claimed worker sent nothing", i)
		in, err := q.Get(context.Background(), p.OrderID)
		require.NoError(t, err)
		assert.Equal(t, pgstore.StateParked, in.State, i)
		assert.Equal(t, 0, in.Attempts, i)
	}
}

// Workers and the books check race, free, several times: whatever wins,
// an intent the check parked was never sent (one payout at the fake, no
// attempt), and one the check did not park was one a worker had begun
// sending (an attempt committed), as the item says: never two payouts
// for an intent the check parked.
func TestBooksParkRacesTheWorkers(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t)
	stop := run(t, q)
	defer stop()
	var parked int
	defer func() { t.Logf("parked %d of 8; the workers sent the others first", parked) }()
	for i := range 8 {
		p := smallPayout(200 + i)
		r.listedOutside(t, p)
		r.enqueue(t, q, p) // the running workers may claim it at once: the check runs meanwhile
		res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour})
		waitFor(t, q, "settled", func(map[pgstore.IntentState]int) bool {
			in, err := q.Get(ctx, p.OrderID)
			return err == nil && (in.State == pgstore.StateParked || in.State == pgstore.StateCreated)
		})
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		it, seen := res.by["payouts:"+p.OrderID]
		if in.State == pgstore.StateParked {
			assert.Equal(t, 1, r.payoutsAt(p.OrderID), "run %d: parked, never sent", i)
			assert.Equal(t, 0, in.Attempts, i)
			assert.Contains(t, it.Detail, "parked by this check", i)
			parked++
			continue
		}
		assert.Equal(t, 2, r.payoutsAt(p.OrderID), "run %d: a worker sent it before the check could park it", i)
		assert.Positive(t, in.Attempts, i)
		if seen {
			assert.NotContains(t, it.Detail, "parked by this check", "run %d: the check never says it parked an intent a worker sent", i)
		}
	}
}

// A double payment whose intent the queue has not sent yet is parked
// too: sending it would make a third payout.
func TestBooksParksUnsentDoublePayment(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	p := smallPayout(1)
	r.enqueue(t, q, p)
	r.listedOutside(t, p)
	_, err := r.fake.DuplicatePayout(r.fake.PayoutIDsWithOrderID(p.OrderID)[0])
	require.NoError(t, err)
	it := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour}).by["payouts:"+p.OrderID]
	assert.Equal(t, pgstore.BooksDoublePayment, it.Class)
	assert.Contains(t, it.Detail, "parked by this check")
	in, err := q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateParked, in.State)
	assert.Contains(t, in.LastError, "(one of 2 listed that can move money)")
}

// The park follows what is listed (the review's cases):
//   - new evidence while parked (a second payout listed) rewrites the
//     intent's last error, so a release confirmed against the words shown
//     before changes nothing;
//   - a released intent is parked again when the listed set changes, even
//     with the count, the standing payout and the second unchanged (one
//     payout cancelled, another created);
//   - a payout listed in another network parks the intent too.
func TestBooksParkFollowsTheListedSet(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t)
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour}
	release, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "release")
	dave := pgstore.Operator{ID: "dave", Login: "dave"}
	lastError := func(p cryptopay.CreatePayoutParams) (pgstore.IntentState, string) {
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		return in.State, in.LastError
	}
	releaseAs := func(p cryptopay.CreatePayoutParams, shown string) error {
		_, err := release.Do(ctx, pgstore.Stores{Queue: q}, pgstore.MoveInput{OrderID: p.OrderID, By: dave,
			Values: map[string]string{"note": "the listed payouts are another order's", "listed": shown}})
		return err
	}
	reworded, swapped, apart := smallPayout(201), smallPayout(202), smallPayout(203)
	r.enqueue(t, q, reworded, swapped, apart)
	r.listedOutside(t, reworded, swapped)
	a := r.fake.PayoutIDsWithOrderID(swapped.OrderID)[0]
	b, err := r.fake.DuplicatePayout(a)
	require.NoError(t, err)
	other := apart
	other.Network, other.WalletAddress = "eth", "0x52908400098527886E0F7030069857D2E4169EE7"
	r.listedOutside(t, other)

	res := runBooks(t, cfg)
	assert.Contains(t, res.by["payouts:"+reworded.OrderID].Detail, "parked by this check")
	_, shown := lastError(reworded)
	r.listedOutside(t, reworded) // new evidence while parked
	assert.Contains(t, runBooks(t, cfg).by["payouts:"+reworded.OrderID].Detail, "what is listed changed")
	_, now := lastError(reworded)
	assert.NotEqual(t, shown, now, "the last error names what is listed now")
	require.ErrorIs(t, releaseAs(reworded, shown), pgstore.ErrChanged, "a release against the words shown before")
	state, _ := lastError(reworded)
	assert.Equal(t, pgstore.StateParked, state)

	_, shown = lastError(swapped)
	require.NoError(t, releaseAs(swapped, shown))
	require.NoError(t, r.fake.SetPayoutStatus(b, cryptopay.PayoutCancelled))
	_, err = r.fake.DuplicatePayout(a) // another payout where b was: two listed that can move money, as before
	require.NoError(t, err)
	assert.Contains(t, runBooks(t, cfg).by["payouts:"+swapped.OrderID].Detail, "parked by this check", "the listed set changed")
	state, _ = lastError(swapped)
	assert.Equal(t, pgstore.StateParked, state)

	state, _ = lastError(apart)
	assert.Equal(t, pgstore.StateParked, state, "a payout listed in another network parks it too")
	stop := run(t, q)
	r.enqueue(t, q, smallPayout(204))
	waitFor(t, q, "the sentinel sent", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 1 })
	stop()
	for p, want := range map[string]int{reworded.OrderID: 2, swapped.OrderID: 3, apart.OrderID: 1} {
		assert.Equal(t, want, r.payoutsAt(p), "%s: the workers sent nothing", p)
	}
}
