package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// EnqueueMany inserts a batch in one statement: each intent once with its
// history row, an orderId repeated in the batch counts as a second
// Enqueue (a no-op when equal, a conflict naming its index when not), and
// amounts keep every digit.
func TestQueueEnqueueManyRepeats(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	ctx := context.Background()
	enqMany := func(ps ...cryptopay.CreatePayoutParams) (int, error) {
		return inTx(r.pool, func(tx pgx.Tx) (int, error) { return q.EnqueueMany(ctx, tx, ps) })
	}
	p1, p2 := payoutParams(1), payoutParams(2)
	p2.Amount = decimal.RequireFromString("0.000001")
	n, err := enqMany(p1, p2, p1)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = enqMany(p2, payoutParams(3))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "p2 was queued already")
	for _, id := range []string{p1.OrderID, p2.OrderID, payoutParams(3).OrderID} {
		hist, err := q.History(ctx, id)
		require.NoError(t, err)
		require.Len(t, hist, 1, id)
		assert.Equal(t, pgstore.StateQueued, hist[0].To)
	}
	in, err := q.Get(ctx, p2.OrderID)
	require.NoError(t, err)
	assert.Equal(t, "0.000001", in.Params.Amount.String())

	other := payoutParams(4)
	changed := other
	changed.CustomerID = "cust-2"
	_, err = enqMany(other, changed)
	var conflict *pgstore.IntentConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "CustomerID", conflict.Field)
	assert.Contains(t, err.Error(), "intent 2 of 2", "the repeat is named")
	_, err = q.Get(ctx, other.OrderID)
	assert.ErrorIs(t, err, pgstore.ErrIntentNotFound, "rolled back with the batch")
}

func TestQueueEnqueue(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	ctx := context.Background()
	enq := func(p cryptopay.CreatePayoutParams) (bool, error) {
		return inTx(r.pool, func(tx pgx.Tx) (bool, error) { return q.Enqueue(ctx, tx, p) })
	}
	p := payoutParams(1)
	created, err := enq(p)
	require.NoError(t, err)
	assert.True(t, created)

	same := p
	same.Amount = decimal.RequireFromString("10.250") // equal by value
	created, err = enq(same)
	require.NoError(t, err)
	assert.False(t, created, "identical parameters: a no-op")

	tests := []struct {
		field string
		edit  func(*cryptopay.CreatePayoutParams)
	}{
		{"Amount", func(p *cryptopay.CreatePayoutParams) { p.Amount = decimal.RequireFromString("10.26") }},
		{"WalletAddress", func(p *cryptopay.CreatePayoutParams) { p.WalletAddress = "TWcR2h7LU8NJ3abih21721Ag6fTYzdJQaw" }},
		{"Currency", func(p *cryptopay.CreatePayoutParams) { p.Currency = "btc" }},
		{"CustomerID", func(p *cryptopay.CreatePayoutParams) { p.CustomerID = "cust-2" }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			other := p
			tt.edit(&other)
			_, err := enq(other)
			var conflict *pgstore.IntentConflictError
			require.ErrorAs(t, err, &conflict)
			assert.ErrorIs(t, err, pgstore.ErrIntentConflict)
			assert.Equal(t, tt.field, conflict.Field)
			in, err := q.Get(ctx, p.OrderID)
			require.NoError(t, err)
			assert.True(t, in.Params.Amount.Equal(p.Amount), "the existing intent is unchanged")
			assert.Equal(t, p.WalletAddress, in.Params.WalletAddress)
		})
	}

	bad := payoutParams(2)
	bad.Amount = decimal.Zero
	_, err = enq(bad)
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)

	// Rolled back with the merchant's transaction: nothing queued.
	rolled := payoutParams(3)
	require.Error(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := q.Enqueue(ctx, tx, rolled); err != nil {
			return err
		}
		return fmt.Errorf("the merchant's own write failed")
	}))
	_, err = q.Get(ctx, rolled.OrderID)
	assert.ErrorIs(t, err, pgstore.ErrIntentNotFound)
	counts, err := q.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[pgstore.IntentState]int{pgstore.StateQueued: 1}, counts)
}
