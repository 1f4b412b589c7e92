package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Every move is declared whole: a name, a verb, a role, what it applies
// to, its confirmation and its result; a payout's move is a transition of
// the state machine, and the zero Move moves nothing.
func TestMovesTable(t *testing.T) {
	names := map[string]bool{}
	for _, m := range pgstore.Moves() {
		key := m.On + " " + m.Name
		assert.False(t, names[key], "one entry per move: %s", key)
		names[key] = true
		assert.NotEmpty(t, m.Verb, key)
		assert.Contains(t, []pgstore.MoveRole{pgstore.MoveApprover, pgstore.MoveOperator}, m.Role, key)
		assert.NotEmpty(t, m.Confirm, key)
		assert.NotEmpty(t, m.Done, key)
		assert.NotEmpty(t, m.Fields, key)
		if m.On == pgstore.ObjectPayout {
			assert.NotEmpty(t, m.From, key)
			assert.NotEmpty(t, m.To, key)
		}
		got, ok := pgstore.MoveNamed(m.On, m.Name)
		assert.True(t, ok, key)
		assert.Equal(t, m.Name, got.Name)
	}
	for _, want := range []string{"approve", "reject", "retry", "resolve", "cancel", "release", "reject-listed"} {
		assert.True(t, names["payout "+want], want)
	}
	for _, want := range []string{"clear-anomaly", "refund", "accept", "write-off"} {
		assert.True(t, names["payment "+want], want)
		m, _ := pgstore.MoveNamed(pgstore.ObjectPayment, want)
		assert.NotEmpty(t, m.Payments, "%s says which payments it applies to", want)
	}
	_, err := pgstore.Move{}.Do(context.Background(), pgstore.Stores{}, pgstore.MoveInput{})
	assert.ErrorIs(t, err, pgstore.ErrUnknownMove)
	_, err = pgstore.Move{Name: "wipe", On: pgstore.ObjectPayout}.Do(context.Background(), pgstore.Stores{}, pgstore.MoveInput{})
	assert.ErrorIs(t, err, pgstore.ErrUnknownMove, "a move not in the table")
	m, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "cancel")
	_, err = m.Do(context.Background(), pgstore.Stores{}, pgstore.MoveInput{})
	assert.ErrorIs(t, err, pgstore.ErrUnknownMove, "no queue")
	m.From[0] = pgstore.StateSending
	again, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "cancel")
	assert.Equal(t, []pgstore.IntentState{pgstore.StateQueued}, again.From, "a copy: the table cannot be changed through it")
}

// A move returns what it changed; cancel moves a queued payout to
// rejected (final: OnFinal runs) before any attempt, and nothing else.
func TestMoveCancelAndWhatChanged(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	s := pgstore.Stores{Queue: q}
	queued, held := payoutParams(1), payoutParams(2)
	queued.Amount = queued.Amount.Div(queued.Amount) // 1 usdt: under the approval threshold
	r.enqueueBy(t, q, "ops", queued, held)
	cancel, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "cancel")
	approve, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "approve")
	alice := pgstore.Operator{ID: "Alice", Login: "alice"}

	_, err := cancel.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: alice, Values: map[string]string{"reason": " "}})
	var ve *cryptopay.ValidationError
	require.ErrorAs(t, err, &ve, "the reason is required")
	assert.Equal(t, "reason", ve.Field)
	_, err = cancel.Do(ctx, s, pgstore.MoveInput{OrderID: held.OrderID, By: alice, Values: map[string]string{"reason": "dup"}})
	require.ErrorIs(t, err, pgstore.ErrIntentState, "only a queued payout")

	got, err := cancel.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: alice, Values: map[string]string{"reason": "duplicate order"}})
	require.NoError(t, err)
	require.NotNil(t, got.Intent)
	assert.Equal(t, pgstore.StateRejected, got.Intent.State)
	assert.Equal(t, "duplicate order", got.Intent.Note)
	assert.Equal(t, 0, got.Intent.Attempts)
	assert.Equal(t, map[string]int{queued.OrderID: 1}, r.effectCounts(t), "OnFinal ran once")
	hist, err := q.History(ctx, queued.OrderID)
	require.NoError(t, err)
	last := hist[len(hist)-1]
	assert.Equal(t, []any{pgstore.StateQueued, pgstore.StateRejected, "alice"}, []any{last.From, last.To, last.ActorID})
	_, err = cancel.Do(ctx, s, pgstore.MoveInput{OrderID: queued.OrderID, By: alice, Values: map[string]string{"reason": "again"}})
	require.ErrorIs(t, err, pgstore.ErrIntentState, "final")

	got, err = approve.Do(ctx, s, pgstore.MoveInput{OrderID: held.OrderID, By: alice})
	require.NoError(t, err)
	assert.Equal(t, []string{"alice"}, got.Intent.ApprovedBy, "the approval, returned: no second read")
	assert.Equal(t, pgstore.StateNeedsApproval, got.Intent.State)
}

// Clearing an anomaly clears only the text the person was shown: an
// anomaly replaced (another payment merged in) since is ErrChanged, and
// nothing is cleared.
func TestMoveClearAnomalySeen(t *testing.T) {
	r := newTRig(t)
	ctx := context.Background()
	tr, err := pgstore.NewTracker(ctx, r.config())
	require.NoError(t, err)
	p := r.create(t, "ord-seen", "10")
	r.track(t, tr, p)
	_, err = r.pool.Exec(ctx, "UPDATE "+r.table+" SET status = 'waiting', anomaly = 'A', needs_action = true WHERE order_id = $1", p.OrderID)
	require.NoError(t, err)
	clear, _ := pgstore.MoveNamed(pgstore.ObjectPayment, "clear-anomaly")
	s := pgstore.Stores{Tracker: tr}
	ops := pgstore.Operator{ID: "ops"}
	// B is merged in after the page showed A.
	_, err = r.pool.Exec(ctx, "UPDATE "+r.table+" SET anomaly = 'A; B: another payment of this order, paid' WHERE order_id = $1", p.OrderID)
	require.NoError(t, err)
	_, err = clear.Do(ctx, s, pgstore.MoveInput{OrderID: p.OrderID, By: ops, Values: map[string]string{"anomaly": "A", "note": "looked at A"}})
	require.ErrorIs(t, err, pgstore.ErrChanged)
	tp, err := tr.Get(ctx, p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, "A; B: another payment of this order, paid", tp.Anomaly, "nothing cleared")
	moves, err := tr.Moves(ctx, p.OrderID)
	require.NoError(t, err)
	assert.Empty(t, moves)

	got, err := clear.Do(ctx, s, pgstore.MoveInput{OrderID: p.OrderID, By: ops, Values: map[string]string{"anomaly": tp.Anomaly, "note": "looked at both"}})
	require.NoError(t, err)
	assert.Equal(t, tp.Anomaly, got.Cleared)
}
