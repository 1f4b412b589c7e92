package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// The refund, accept and write-off moves of a payment needing action:
// each needs the refunds store, applies only to a payment needing action,
// records a resolution with its actor and note, and returns what it
// changed; a refund records its resolution naming it once, even retried.
func TestMoveRefundAcceptWriteOff(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "over", cryptopay.PaymentPaidOver, "100", "100.500001", false)
	r.track(t, "partial", cryptopay.PaymentPaidPartial, "100", "40", false)
	r.track(t, "short", cryptopay.PaymentPaidPartial, "100", "1", false)
	r.track(t, "ontime", cryptopay.PaymentPaid, "100", "100", false)
	s := pgstore.Stores{Queue: r.queue, Tracker: r.tracker, Refunds: r.refunds}
	refund, _ := pgstore.MoveNamed(pgstore.ObjectPayment, "refund")
	accept, _ := pgstore.MoveNamed(pgstore.ObjectPayment, "accept")
	writeOff, _ := pgstore.MoveNamed(pgstore.ObjectPayment, "write-off")
	alice := pgstore.Operator{ID: "Alice", Login: "alice"}
	rows, err := r.refunds.UnresolvedPayments(ctx, "", 2)
	require.NoError(t, err)
	require.Len(t, rows, 2, "a page of two")
	assert.Equal(t, []string{"over", "partial"}, []string{rows[0].OrderID, rows[1].OrderID})
	assert.Equal(t, "100.500001", rows[0].PaidAmount.Decimal.String(), "each payment whole, in the one query")
	rows, err = r.refunds.UnresolvedPayments(ctx, "partial", 0)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "short", rows[0].OrderID)

	for _, m := range []pgstore.Move{refund, accept, writeOff} {
		assert.False(t, m.Available(pgstore.Stores{Tracker: r.tracker}), "%s needs the refunds", m.Name)
		_, err := m.Do(ctx, pgstore.Stores{Tracker: r.tracker}, pgstore.MoveInput{OrderID: "over"})
		assert.ErrorIs(t, err, pgstore.ErrUnknownMove, m.Name)
		assert.True(t, m.Available(s))
		for id, want := range map[string]bool{"over": true, "partial": true, "ontime": false} {
			p, err := r.tracker.Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, want, m.AppliesToPayment(p), "%s on %s", m.Name, id)
		}
	}

	in := pgstore.MoveInput{OrderID: "over", By: alice, Values: map[string]string{"rule": "most", "idempotency-key": "T-1", "customer-id": "c-1"}}
	_, err = refund.Do(ctx, s, in)
	var ve *cryptopay.ValidationError
	require.ErrorAs(t, err, &ve, "a rule not among the choices")
	assert.Equal(t, "rule", ve.Field)
	in.Values["rule"] = "excess"
	got, err := refund.Do(ctx, s, in)
	require.NoError(t, err)
	require.NotNil(t, got.Refund)
	assert.True(t, got.RefundCreated)
	assert.Equal(t, "0.500001", got.Refund.Amount.String())
	assert.Equal(t, []string{"usdt", "tron", string(pgstore.RefundAwaitingClaim)}, []string{got.Refund.Currency, got.Refund.Network, string(got.Refund.State)})
	require.NotNil(t, got.Resolution)
	assert.Equal(t, pgstore.Resolution{OrderID: "over", Kind: pgstore.ResolutionRefunded, RefundID: got.Refund.ID, ActorID: "alice",
		Note: "refund of 0.500001 usdt", At: got.Resolution.At}, *got.Resolution)
	again, err := refund.Do(ctx, s, in)
	require.NoError(t, err, "a retry with the same key")
	assert.False(t, again.RefundCreated)
	assert.Equal(t, got.Resolution, again.Resolution, "the resolution recorded first")

	in = pgstore.MoveInput{OrderID: "partial", By: alice, Values: map[string]string{"rule": "all_paid", "idempotency-key": "T-2", "customer-id": "c-2",
		"wallet": tronAddr, "customer-ip": "203.0.113.7", "note": "ticket 2"}}
	got, err = refund.Do(ctx, s, in)
	require.NoError(t, err)
	assert.Equal(t, "40", got.Refund.Amount.String())
	assert.Equal(t, pgstore.StateNeedsApproval, got.Refund.PayoutState, "held for approval")

	_, err = accept.Do(ctx, s, pgstore.MoveInput{OrderID: "short", By: alice, Values: map[string]string{"note": " "}})
	require.ErrorAs(t, err, &ve, "the note is required")
	got, err = accept.Do(ctx, s, pgstore.MoveInput{OrderID: "short", By: alice, Values: map[string]string{"note": "1 usdt short, let go"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"short", "accepted", "alice", "1 usdt short, let go"},
		[]string{got.Resolution.OrderID, string(got.Resolution.Kind), got.Resolution.ActorID, got.Resolution.Note})
	_, err = writeOff.Do(ctx, s, pgstore.MoveInput{OrderID: "nobody", By: alice, Values: map[string]string{"note": "x"}})
	require.ErrorIs(t, err, pgstore.ErrNotTracked)

	left, err := r.refunds.Unresolved(ctx, "", 0)
	require.NoError(t, err)
	assert.Empty(t, left, "every payment needing action is resolved")
	rows, err = r.refunds.UnresolvedPayments(ctx, "", 0)
	require.NoError(t, err)
	assert.Empty(t, rows)
	res, err := r.refunds.Resolutions(ctx, "over")
	require.NoError(t, err)
	assert.Len(t, res, 1, "one resolution for the refund and its retry")
}
