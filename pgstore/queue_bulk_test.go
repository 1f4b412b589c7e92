package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// ApproveMany approves 500 intents in transactions of BulkBatch, two
// round trips of statements each (BEGIN, the lock and four-eyes read, the
// batch, COMMIT), with every approval in the history; four eyes holds in
// bulk too.
func TestQueueApproveMany(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	var trips tripCounter
	traced := r.queue(t, func(c *pgstore.QueueConfig) { c.Pool, c.CreateTable = r.tracedPool(t, &trips, 4), false })
	const n = 500
	ids := make([]string, n)
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = payoutParams(i)
		ids[i] = ps[i].OrderID
	}
	r.enqueueBy(t, q, "carol", ps...)

	require.NoError(t, traced.CheckSchema(ctx)) // once per Queue, before its first move
	trips.trips.Store(0)
	res, err := traced.ApproveMany(ctx, append(ids, "wd-unknown"), "alice", "batch 7")
	require.NoError(t, err)
	assert.Equal(t, n, res.Done)
	assert.Empty(t, res.Queued, "one approval of two")
	assert.Equal(t, []string{"wd-unknown"}, res.Skipped)
	batches := (n + 1 + pgstore.BulkBatch - 1) / pgstore.BulkBatch
	// The last batch holds wd-unknown alone: nothing to move, no statements.
	assert.Equal(t, int64(4*batches-1), trips.trips.Load(), "BEGIN, the read, one batch, COMMIT per %d intents", pgstore.BulkBatch)

	res, err = traced.ApproveMany(ctx, ids[:10], "carol", "")
	require.NoError(t, err)
	assert.Equal(t, 0, res.Done, "the enqueuer's approvals do not count")
	assert.Len(t, res.Skipped, 10)

	res, err = traced.ApproveMany(ctx, ids, "bob", "")
	require.NoError(t, err)
	assert.Len(t, res.Queued, n)
	counts, err := q.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[pgstore.IntentState]int{pgstore.StateQueued: n}, counts)
	var approvals int
	require.NoError(t, r.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s_history WHERE actor = 'operator' AND actor_id IN ('alice', 'bob')`, r.table)).Scan(&approvals))
	assert.Equal(t, 2*n, approvals, "every approval in the history")

	_, err = traced.ApproveMany(ctx, ids, "", "")
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
}

// RetryMany queues parked intents again, skipping the rest.
func TestQueueRetryMany(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t)
	ps := []cryptopay.CreatePayoutParams{payoutParams(1), payoutParams(2), payoutParams(3)}
	r.enqueue(t, q, ps...)
	_, err := r.pool.Exec(ctx, "UPDATE "+r.table+" SET state = 'parked', hold = 'max_attempts' WHERE order_id <> $1", ps[2].OrderID)
	require.NoError(t, err)
	res, err := q.RetryMany(ctx, []string{ps[0].OrderID, ps[1].OrderID, ps[2].OrderID}, "ops", "checked: none at the processor")
	require.NoError(t, err)
	assert.Equal(t, pgstore.BulkResult{Done: 2, Queued: []string{ps[0].OrderID, ps[1].OrderID}, Skipped: []string{ps[2].OrderID}}, res)
	in, err := q.Get(ctx, ps[0].OrderID)
	require.NoError(t, err)
	assert.Empty(t, in.Hold, "Retry clears the hold")
	hist, err := q.History(ctx, ps[0].OrderID)
	require.NoError(t, err)
	assert.Equal(t, "ops", hist[len(hist)-1].ActorID)
}
