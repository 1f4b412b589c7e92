package pgstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// The console's unresolved list is served by indexes: over 100,000
// tracked payments, 500 of them needing action and every other one of
// those resolved, a page of 50 reads the payments needing action up to
// its 51st unresolved one and probes their resolutions, never the table.
func TestUnresolvedUsesIndexes(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	q, err := NewQueue(ctx, QueueConfig{Pool: pool, Table: pgtest.Name("intents"), CreateTable: true})
	require.NoError(t, err)
	tr := newTestTracker(t, pool)
	rf, err := NewRefunds(ctx, RefundsConfig{Queue: q, Tracker: tr, Table: pgtest.Name("refunds"), CreateTable: true})
	require.NoError(t, err)
	fillTable(t, pool, tr.Table(), `INSERT INTO `+tr.Table()+` (order_id, payment_id, state, needs_action)
SELECT 'ord-' || lpad(i::text, 7, '0'), 'p' || i, 'closed', i % 200 = 0 FROM generate_series(1, 100000) AS i`)
	fillTable(t, pool, rf.res.Sanitize(), `INSERT INTO `+rf.res.Sanitize()+` (order_id, kind, actor_id, note)
SELECT 'ord-' || lpad(i::text, 7, '0'), 'accepted', 'ops', 'n' FROM generate_series(400, 100000, 400) AS i`)

	rows, err := rf.UnresolvedPayments(ctx, "", 50)
	require.NoError(t, err)
	require.Len(t, rows, 50)
	assert.Equal(t, "ord-0000200", rows[0].OrderID)
	assert.Equal(t, "ord-0000600", rows[1].OrderID, "ord-0000400 is resolved")
	read, seq := rowsRead(t, pool, rf.sql.unresolvedRows, "", 51)
	assert.False(t, seq, "no sequential scan")
	assert.LessOrEqual(t, read, 2*(2*51+1), "rows read for a page of 50: the needing action up to the 51st unresolved, and their probes")
	t.Logf("rows read for a page of 50 unresolved among 100,000: %d", read)
}
