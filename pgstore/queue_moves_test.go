package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Four eyes: an intent above the approval threshold is queued only by the
// approval of a second distinct person. The enqueuer's approval does not
// count, nor the same person's twice, and an operator's Queue configured
// with fewer approvals cannot lower the number recorded at enqueue.
func TestQueueFourEyes(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	lax := r.queue(t, func(c *pgstore.QueueConfig) { c.Approvals, c.CreateTable = 1, false })
	p := payoutParams(1)
	r.enqueueBy(t, q, "carol", p)
	for _, step := range []struct {
		queue   *pgstore.Queue
		actor   string
		err     error
		state   pgstore.IntentState
		already []string
	}{
		{q, "carol", pgstore.ErrApprovalNotCounted, pgstore.StateNeedsApproval, nil},
		{q, "", cryptopay.ErrInvalidParams, pgstore.StateNeedsApproval, nil},
		{q, "a\u202eb", cryptopay.ErrInvalidParams, pgstore.StateNeedsApproval, nil},
		{lax, "alice", nil, pgstore.StateNeedsApproval, []string{"alice"}},
		{q, "alice", pgstore.ErrApprovalNotCounted, pgstore.StateNeedsApproval, []string{"alice"}},
		{q, "bob", nil, pgstore.StateQueued, []string{"alice", "bob"}},
		{q, "dave", pgstore.ErrIntentState, pgstore.StateQueued, []string{"alice", "bob"}},
	} {
		err := step.queue.Approve(ctx, p.OrderID, step.actor, "looked")
		if step.err == nil {
			require.NoError(t, err, step.actor)
		} else {
			require.ErrorIs(t, err, step.err, step.actor)
		}
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		assert.Equal(t, step.state, in.State, "after %q", step.actor)
		assert.Equal(t, step.already, in.ApprovedBy, "after %q", step.actor)
		assert.Equal(t, step.state == pgstore.StateQueued, !in.ApprovedAt.IsZero())
		assert.Equal(t, "carol", in.EnqueuedBy)
		assert.Equal(t, 2, in.ApprovalsNeeded)
	}
	hist, err := q.History(ctx, p.OrderID)
	require.NoError(t, err)
	require.Len(t, hist, 3, "the enqueue and two approvals; refused approvals change nothing")
	assert.Equal(t, []string{"carol", "alice", "bob"}, []string{hist[0].ActorID, hist[1].ActorID, hist[2].ActorID})
	assert.Equal(t, "approval 2 of 2: looked", hist[2].Note)
}

// Two approvers at the same moment: the row lock orders them, so the
// intent is queued once, with both approvals in its history.
func TestQueueFourEyesConcurrent(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	var obs transitions
	q2 := r.queue(t, func(c *pgstore.QueueConfig) { c.CreateTable, c.Observer = false, obs.observe })
	for i := range 20 {
		p := payoutParams(i)
		r.enqueue(t, q, p)
		var wg sync.WaitGroup
		for _, who := range []string{"alice", "bob"} {
			wg.Go(func() { assert.NoError(t, q2.Approve(ctx, p.OrderID, who, "")) })
		}
		wg.Wait()
		in, err := q.Get(ctx, p.OrderID)
		require.NoError(t, err)
		assert.Equal(t, pgstore.StateQueued, in.State)
		assert.ElementsMatch(t, []string{"alice", "bob"}, in.ApprovedBy)
	}
	assert.Equal(t, 20, obs.count(pgstore.StateQueued), "one transition to queued per intent")
}
