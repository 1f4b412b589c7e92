package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Exactly one Transition per committed change, across two replicas sharing
// one counting Observer, over a run with a dropped create (a resend),
// approvals, a rejection, two intents taken over in sending from a worker
// that died after committing its attempt (one resent, one parked at
// MaxAttempts and retried by an operator), and an enqueue whose
// transaction rolled back. The Observer's moves are the history's state
// changes, each once; no transition keeps its state; the rolled-back
// enqueue is never reported. Before, Enqueue reported the rolled-back
// intent, and the intent taken over in sending was sent again as
// "sending -> sending".
func TestQueueObserverOnePerChange(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	var obs transitions
	cfg := func(c *pgstore.QueueConfig) {
		c.Observer = obs.observe
		c.MaxAttempts = 3
		c.Guardrails = pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(50)}}
	}
	q1, q2 := r.queue(t, cfg), r.queue(t, cfg)

	rolledBack := payoutParams(9)
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := q1.Enqueue(ctx, tx, rolledBack); err != nil {
			return err
		}
		return errors.New("the merchant's transaction fails")
	})
	require.Error(t, err)

	plain, approved, rejected := payoutParams(1), withAmount(payoutParams(2), "60"), withAmount(payoutParams(3), "70")
	resent, parked := payoutParams(4), payoutParams(5)
	all := []cryptopay.CreatePayoutParams{plain, approved, rejected, resent, parked}
	r.enqueue(t, q1, all...)
	// A worker committed an attempt for these and died before sending
	// (nothing reached the server); its Observer calls died with it.
	for id, attempts := range map[string]int{resent.OrderID: 1, parked.OrderID: 3} {
		_, err := r.pool.Exec(ctx, "UPDATE "+r.table+` SET state = 'sending', attempts = $2,
attempted_at = now() - interval '1 minute', reserved_at = now(), updated_at = now() WHERE order_id = $1`, id, attempts)
		require.NoError(t, err)
	}
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true, Times: 1})
	r.payAll(t)
	stop1, stop2 := run(t, q1), run(t, q2)

	waitIntent(t, q1, parked.OrderID, "parked at MaxAttempts", func(in *pgstore.Intent) bool { return in.Hold == pgstore.HoldMaxAttempts })
	require.NoError(t, q2.Retry(ctx, parked.OrderID, "ops", "the processor has no payout for it"))
	waitIntent(t, q1, approved.OrderID, "held for approval", func(in *pgstore.Intent) bool { return in.State == pgstore.StateNeedsApproval })
	require.NoError(t, q1.Approve(ctx, approved.OrderID, "alice", ""))
	require.NoError(t, q1.Approve(ctx, approved.OrderID, "carol", ""))
	require.NoError(t, q2.Reject(ctx, rejected.OrderID, "bob", ""))
	for _, p := range all {
		want := pgstore.StatePaid
		if p.OrderID == rejected.OrderID {
			want = pgstore.StateRejected
		}
		waitIntent(t, q1, p.OrderID, string(want), func(in *pgstore.Intent) bool { return in.State == want && !in.CallbackDue })
	}
	stop1() // every Observer call made: a worker reports just after its commit
	stop2()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	per := map[string][][2]pgstore.IntentState{}
	for _, tr := range obs.ts {
		assert.NotEqual(t, tr.From, tr.To, "a transition changes the state: %+v", tr)
		per[tr.OrderID] = append(per[tr.OrderID], [2]pgstore.IntentState{tr.From, tr.To})
	}
	assert.Empty(t, per[rolledBack.OrderID], "an enqueue rolled back is no transition")
	for _, p := range all {
		hist, err := q1.History(ctx, p.OrderID)
		require.NoError(t, err)
		if p.OrderID == resent.OrderID || p.OrderID == parked.OrderID {
			hist = hist[1:] // the enqueue: reported by the worker that died
		}
		var changes [][2]pgstore.IntentState
		for _, e := range hist {
			if e.From != e.To {
				changes = append(changes, [2]pgstore.IntentState{e.From, e.To})
			}
		}
		assert.ElementsMatch(t, changes, per[p.OrderID], "%s: one transition per committed change", p.OrderID)
	}
	assert.Contains(t, per[resent.OrderID], [2]pgstore.IntentState{pgstore.StateSending, pgstore.StateReconciling}, "taken over")
	assert.Contains(t, per[parked.OrderID], [2]pgstore.IntentState{pgstore.StateParked, pgstore.StateQueued}, "the operator's retry")
	for _, p := range all {
		if p.OrderID != rejected.OrderID {
			assert.Equal(t, 1, r.payoutsPerOrder()[p.OrderID], "%s: one payout", p.OrderID)
		}
	}
	in, err := q1.Get(ctx, parked.OrderID)
	require.NoError(t, err)
	assert.Equal(t, 4, in.Attempts, "MaxAttempts, then the one an operator's Retry allows")
}

// An operator's way out of a parked intent whose payout exists: Resolve
// binds it to the payout only once the API's read of that id names the
// intent's orderId, amount, currency, network and wallet, and no other
// intent holds it; the workers then follow it to paid and OnFinal runs
// once. Nothing is sent. Another order's payout, an intent not parked,
// and a payout another intent holds are refused and change nothing.
func TestQueueResolve(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t)
	// The list cannot be read: the dropped create's intent parks undecided.
	r.fake.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 500, Times: 1 << 20})
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true, Times: 1})
	p, other := payoutParams(1), payoutParams(2)
	r.enqueue(t, q, p)
	stop := run(t, q)
	waitIntent(t, q, p.OrderID, "parked", func(in *pgstore.Intent) bool { return in.State == pgstore.StateParked })
	r.enqueue(t, q, other)
	waitIntent(t, q, other.OrderID, "other created", func(in *pgstore.Intent) bool { return in.State == pgstore.StateCreated })
	stop()
	mine := r.fake.PayoutIDsWithOrderID(p.OrderID)
	require.Len(t, mine, 1)
	theirs := r.fake.PayoutIDsWithOrderID(other.OrderID)
	require.Len(t, theirs, 1)

	err := q.Resolve(ctx, p.OrderID, theirs[0], "ops", "wrong row")
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams, "another order's payout")
	assert.ErrorIs(t, q.Resolve(ctx, other.OrderID, theirs[0], "ops", ""), pgstore.ErrIntentState, "not parked")
	assert.ErrorIs(t, q.Resolve(ctx, "wd-none", mine[0], "ops", ""), pgstore.ErrIntentNotFound)
	noClient := r.queue(t, func(c *pgstore.QueueConfig) { c.Client = nil })
	assert.ErrorIs(t, noClient.Resolve(ctx, p.OrderID, mine[0], "ops", ""), pgstore.ErrInvalidOption)
	// An intent bound to p's payout already (as a replayed answer once
	// bound one to another order's payout): refused.
	_, err = r.pool.Exec(ctx, "UPDATE "+r.table+" SET payout_id = $1 WHERE order_id = $2", mine[0], other.OrderID)
	require.NoError(t, err)
	assert.ErrorContains(t, q.Resolve(ctx, p.OrderID, mine[0], "ops", ""), "already")
	_, err = r.pool.Exec(ctx, "UPDATE "+r.table+" SET payout_id = $1 WHERE order_id = $2", theirs[0], other.OrderID)
	require.NoError(t, err)
	in, err := q.Get(ctx, p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateParked, in.State, "a refused Resolve changes nothing")
	assert.Empty(t, in.PayoutID)

	require.NoError(t, q.Resolve(ctx, p.OrderID, mine[0], "ops", "dashboard shows it"))
	r.payAll(t)
	run(t, q)
	in = waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	assert.Equal(t, mine[0], in.PayoutID)
	assert.Equal(t, 1, r.fake.Requests(cryptopaytest.RouteCreatePayout)-1, "one create for p (one for other): nothing sent by Resolve")
	assert.Equal(t, 1, len(r.fake.PayoutIDsWithOrderID(p.OrderID)))
	assert.Equal(t, 1, r.effectCounts(t)[p.OrderID], "OnFinal ran once")
	hist, err := q.History(ctx, p.OrderID)
	require.NoError(t, err)
	var resolved bool
	for _, e := range hist {
		resolved = resolved || e.Actor == "operator" && e.From == pgstore.StateParked && e.To == pgstore.StateCreated && e.ActorID == "ops" && e.Note == "dashboard shows it"
	}
	assert.True(t, resolved, "the operator's Resolve is in the history")
}
