package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// fillTable runs insert (one statement filling table) and ANALYZE, so the
// planner sees the rows.
func fillTable(t *testing.T, pool *pgxpool.Pool, table, insert string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), insert)
	require.NoError(t, err)
	_, err = pool.Exec(context.Background(), "ANALYZE "+table)
	require.NoError(t, err)
}

// assertIndexScan runs EXPLAIN of sql with args and checks that its plan
// scans an index of the table whose indexes' names start with prefix
// (want, if set: that one alone), and never reads the whole table.
func assertIndexScan(t *testing.T, pool *pgxpool.Pool, prefix, want, sql string, args ...any) {
	t.Helper()
	var plan []map[string]any
	require.NoError(t, pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan))
	var indexes []string
	var seqScan bool
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
	require.NotEmpty(t, indexes, "an index scan")
	if want != "" {
		assert.Equal(t, []string{want}, indexes)
	}
	for _, name := range indexes {
		assert.True(t, strings.HasPrefix(name, prefix), "%s is not an index of the table", name)
	}
	assert.False(t, seqScan, "no sequential scan")
}

// The list pages of an operator's console use an index over 100,000
// intents: orderId order by the primary key, a state filter by the
// state index, the health summary by the due and state indexes; none
// reads the whole table (counts, not clocks: the plan).
func TestQueueListUsesIndex(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	q, err := NewQueue(ctx, QueueConfig{Pool: pool, Table: pgtest.Name("intents"), CreateTable: true})
	require.NoError(t, err)
	fillTable(t, pool, q.Table(), `INSERT INTO `+q.Table()+` (order_id, wallet_address, network_fee_by_user, amount, currency, network,
    customer_id, customer_ip, additional_data, webhook_url, state)
SELECT 'wd-' || lpad(i::text, 7, '0'), 'T' || i, false, 10, 'usdt', 'tron', 'c', '203.0.113.7', '', '',
    CASE WHEN i % 100 = 0 THEN 'parked' WHEN i % 100 = 1 THEN 'needs_approval' ELSE 'paid' END
FROM generate_series(1, 100000) AS i`)
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
			assertIndexScan(t, pool, prefix, "", q.sql.list, pgx.NamedArgs{
				"all": len(tc.states) == 0, "states": tc.states, "after": tc.after, "limit": 51,
				"held": false, "currency": "", "network": "", "since": nil, "until": nil, "search": "",
			})
		})
	}
	t.Run("health", func(t *testing.T) {
		assertIndexScan(t, pool, prefix, "", q.sql.health, time.Minute.Microseconds())
	})
}
