package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// rowsRead runs sql with args as List runs it (listExecMode) under
// EXPLAIN ANALYZE and returns the rows its scans read: those they
// returned and those their filters removed, over every loop; and whether
// any scan was sequential.
func rowsRead(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) (read int, seqScan bool) {
	t.Helper()
	var plan []map[string]any
	require.NoError(t, pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, append([]any{listExecMode}, args...)...).Scan(&plan))
	num := func(node map[string]any, key string) int {
		f, _ := node[key].(float64)
		return int(f)
	}
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		typ, _ := node["Node Type"].(string)
		seqScan = seqScan || typ == "Seq Scan"
		if strings.HasSuffix(typ, "Scan") && typ != "Bitmap Index Scan" { // a bitmap's rows are read by its heap scan
			read += (num(node, "Actual Rows") + num(node, "Rows Removed by Filter") + num(node, "Rows Removed by Index Recheck")) *
				max(num(node, "Actual Loops"), 1)
		}
		kids, _ := node["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(plan[0]["Plan"].(map[string]any))
	return read, seqScan
}

// Each filter of the console's payouts list is served by an index: over
// 100,000 intents a page of 50 reads at most its 51 rows, also for a
// currency, a network or a date no intent has (before: every row).
func TestQueueListFiltersUseIndexes(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	q, err := NewQueue(ctx, QueueConfig{Pool: pool, Table: pgtest.Name("intents"), CreateTable: true})
	require.NoError(t, err)
	// One intent a minute, going back from now; 1% in btc on bitcoin, 1% held.
	fillTable(t, pool, q.Table(), `INSERT INTO `+q.Table()+` (order_id, wallet_address, network_fee_by_user, amount, currency, network,
    customer_id, customer_ip, additional_data, webhook_url, state, hold, created_at)
SELECT 'wd-' || lpad(i::text, 7, '0'), 'T' || i, false, 10, CASE WHEN i % 100 = 7 THEN 'btc' ELSE 'usdt' END,
    CASE WHEN i % 100 = 7 THEN 'bitcoin' ELSE 'tron' END, 'c', '203.0.113.7', '', '',
    CASE WHEN i % 100 = 0 THEN 'parked' ELSE 'paid' END, CASE WHEN i % 100 = 0 THEN 'max_attempts' ELSE '' END,
    now() - i * interval '1 minute'
FROM generate_series(1, 100000) AS i`)
	now := time.Now()
	tomorrow := now.Add(24 * time.Hour)
	longAgo := now.Add(-365 * 24 * time.Hour)
	for _, tc := range []struct {
		name              string
		states            []string
		currency, network string
		since, until      *time.Time
		held              bool
		search            string
		max               int // rows read at most
	}{
		{name: "a currency no intent has", currency: "zzz"},
		{name: "a rare currency", currency: "btc", max: 51},
		{name: "a network no intent has", network: "zzz"},
		{name: "a currency and a state", states: []string{"needs_approval"}, currency: "btc"},
		{name: "since tomorrow", since: &tomorrow},
		{name: "until long ago", until: &longAgo},
		{name: "held", held: true, max: 51},
		{name: "search by wallet", search: "T50000", max: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, seq := rowsRead(t, pool, q.sql.list, namedArgs{
				"all": len(tc.states) == 0, "states": tc.states, "after": "", "limit": 51,
				"held": tc.held, "currency": tc.currency, "network": tc.network, "since": tc.since, "until": tc.until, "search": tc.search,
			})
			assert.LessOrEqual(t, read, tc.max, "rows read for a page of 50")
			assert.False(t, seq, "no sequential scan")
		})
	}
	// List runs the same way: the filters answer what they match.
	for _, tc := range []struct {
		f    ListFilter
		want int
	}{
		{ListFilter{Currency: "zzz"}, 0},
		{ListFilter{Currency: "btc", Limit: 50}, 50},
		{ListFilter{Since: tomorrow}, 0},
		{ListFilter{Since: now.Add(-10*time.Minute - 30*time.Second), Until: now}, 10},
	} {
		got, err := q.List(ctx, tc.f)
		require.NoError(t, err)
		assert.Len(t, got, tc.want, "%+v", tc.f)
	}
}

// The payments list's anomaly filter is served by its index: a page reads
// its rows, not every payment before them (anomalies are rare).
func TestTrackerListFiltersUseIndexes(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	tr := newTestTracker(t, pool)
	fillTable(t, pool, tr.Table(), `INSERT INTO `+tr.Table()+` (order_id, payment_id, state, needs_action, anomaly)
SELECT 'ord-' || lpad(i::text, 7, '0'), 'p' || i, 'closed', false, CASE WHEN i % 1000 = 0 THEN 'odd' ELSE '' END
FROM generate_series(1, 100000) AS i`)
	for _, tc := range []struct {
		name   string
		anom   bool
		search string
		max    int
	}{
		{name: "anomaly", anom: true, max: 51},
		{name: "search by payment id", search: "p777", max: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, seq := rowsRead(t, pool, tr.sql.list, true, []string(nil), false, "", 51, tc.anom, tc.search)
			assert.LessOrEqual(t, read, tc.max, "rows read for a page of 50")
			assert.False(t, seq, "no sequential scan")
		})
	}
}
