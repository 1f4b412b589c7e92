package pgstore

import (
	"context"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// Every tracker statement is non-empty and parses and plans against the
// tables the tracker creates: PostgreSQL prepares each one, resolving its
// columns and the types of its parameters.
func TestTrackerSQLPrepares(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1)
	ctx := context.Background()
	tr, err := NewTracker(ctx, TrackerConfig{Pool: pool, Table: "tracker_sql_check", CreateTable: true})
	require.NoError(t, err)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	stmts := statements(reflect.ValueOf(tr.sql))
	require.Len(t, stmts, 17, "a statement added to trackerSQL is checked here too")
	for name, stmt := range stmts {
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, stmt)
			_, err := conn.Conn().Prepare(ctx, "", stmt)
			assert.NoError(t, err, stmt)
		})
	}
}

// statements returns the statements of a set built by concern (a struct
// of structs of strings), by field name.
func statements(v reflect.Value) map[string]string {
	out := map[string]string{}
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Struct {
			maps.Copy(out, statements(f))
		} else {
			out[v.Type().Field(i).Name] = f.String()
		}
	}
	return out
}

// The tracker's list pages and its health summary (the console shows it
// on every page) use an index over 100,000 tracked payments: the primary
// key, the state index, the needs-action index, the open index.
func TestTrackerListUsesIndex(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	tr, err := NewTracker(ctx, TrackerConfig{Pool: pool, Table: pgtest.Name("tracked"), CreateTable: true})
	require.NoError(t, err)
	fillTable(t, pool, tr.Table(), `INSERT INTO `+tr.Table()+` (order_id, payment_id, state, needs_action, anomaly)
SELECT 'ord-' || lpad(i::text, 7, '0'), 'p' || i, CASE WHEN i % 100 = 0 THEN 'open' ELSE 'closed' END,
    i % 200 = 0, CASE WHEN i % 1000 = 0 THEN 'odd' ELSE '' END
FROM generate_series(1, 100000) AS i`)
	prefix := tr.table[len(tr.table)-1] + "_"
	for _, tc := range []struct {
		name          string
		states        []string
		action, anom  bool
		after, search string
		want          string // the index it must use ("": any of the table's)
	}{
		{name: "first page"},
		{name: "open", states: []string{"open"}, after: "ord-0050000"},
		{name: "needs action", action: true, want: prefix + "action_idx"},
		{name: "anomaly", action: true, anom: true, want: prefix + "action_idx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertIndexScan(t, pool, prefix, tc.want, tr.sql.list, len(tc.states) == 0, tc.states, tc.action, tc.after, 51, tc.anom, tc.search)
		})
	}
	t.Run("health", func(t *testing.T) {
		assertIndexScan(t, pool, prefix, "", tr.sql.health, time.Minute.Microseconds())
	})
}
