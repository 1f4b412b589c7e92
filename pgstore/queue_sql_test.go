package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// syncCommit raises synchronous_commit to on for the rest of the
// transaction, whatever the session says, keeps remote_apply (stronger),
// and leaves the session's own setting alone once the transaction ends.
func TestSyncCommitAtLeastOn(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1)
	ctx := context.Background()
	for _, tc := range []struct{ session, inTx string }{
		{"off", "on"},
		{"local", "on"},
		{"remote_write", "on"},
		{"on", "on"},
		{"remote_apply", "remote_apply"},
	} {
		t.Run(tc.session, func(t *testing.T) {
			conn, err := pool.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release()
			_, err = conn.Exec(ctx, "SET synchronous_commit = "+tc.session)
			require.NoError(t, err)
			defer func() { _, _ = conn.Exec(ctx, "RESET synchronous_commit") }()
			var got, after string
			require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT "+syncCommit); err != nil {
					return err
				}
				return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
			}))
			require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after))
			assert.Equal(t, tc.inTx, got, "in the transaction")
			assert.Equal(t, tc.session, after, "after it")
		})
	}
}

// indexesUsed runs EXPLAIN of sql with args and returns the indexes its
// plan scans, and whether it reads a whole table (a Seq Scan).
func indexesUsed(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) (indexes []string, seqScan bool) {
	t.Helper()
	var plan []map[string]any
	require.NoError(t, pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan))
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		if name, ok := node["Index Name"].(string); ok {
			indexes = append(indexes, name)
		}
		seqScan = seqScan || node["Node Type"] == "Seq Scan"
		kids, _ := node["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(plan[0]["Plan"].(map[string]any))
	return indexes, seqScan
}

// The list pages of an operator's console use an index over 100,000
// intents: orderId order by the primary key, a state filter by the
// state index; none reads the whole table (counts, not clocks: the plan).
func TestQueueListUsesIndex(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	q, err := NewQueue(ctx, QueueConfig{Pool: pool, Table: pgtest.Name("intents"), CreateTable: true})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+q.Table()+` (order_id, wallet_address, network_fee_by_user, amount, currency, network,
    customer_id, customer_ip, additional_data, webhook_url, state)
SELECT 'wd-' || lpad(i::text, 7, '0'), 'T' || i, false, 10, 'usdt', 'tron', 'c', '203.0.113.7', '', '',
    CASE WHEN i % 100 = 0 THEN 'parked' WHEN i % 100 = 1 THEN 'needs_approval' ELSE 'paid' END
FROM generate_series(1, 100000) AS i`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE "+q.Table())
	require.NoError(t, err)
	prefix := q.table[len(q.table)-1] + "_"
	for _, tc := range []struct {
		name   string
		states []string
		after  string
	}{
		{"first page", nil, ""},
		{"a later page", nil, "wd-0050000"},
		{"parked", []string{"parked"}, ""},
		{"needs approval, a later page", []string{"needs_approval"}, "wd-0050000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, seq := indexesUsed(t, pool, q.sql.list, len(tc.states) == 0, tc.states, tc.after, 51,
				false, "", "", nil, nil, "")
			require.NotEmpty(t, idx, "an index scan")
			for _, name := range idx {
				assert.True(t, strings.HasPrefix(name, prefix), "%s is not an index of the table", name)
			}
			assert.False(t, seq, "no sequential scan")
		})
	}
}
