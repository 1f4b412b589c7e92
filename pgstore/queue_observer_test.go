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
	run(t, q1)
	run(t, q2)

	waitIntent(t, q1, parked.OrderID, "parked at MaxAttempts", func(in *pgstore.Intent) bool { return in.Hold == pgstore.HoldMaxAttempts })
	require.NoError(t, q2.Retry(ctx, parked.OrderID, "ops: the processor has no payout for it"))
	waitIntent(t, q1, approved.OrderID, "held for approval", func(in *pgstore.Intent) bool { return in.State == pgstore.StateNeedsApproval })
	require.NoError(t, q1.Approve(ctx, approved.OrderID, "alice"))
	require.NoError(t, q2.Reject(ctx, rejected.OrderID, "bob"))
	for _, p := range all {
		want := pgstore.StatePaid
		if p.OrderID == rejected.OrderID {
			want = pgstore.StateRejected
		}
		waitIntent(t, q1, p.OrderID, string(want), func(in *pgstore.Intent) bool { return in.State == want && !in.CallbackDue })
	}

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
