package pgstore

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
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
	require.Len(t, stmts, 18, "a statement added to trackerSQL is checked here too")
	for name, stmt := range stmts {
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, stmt)
			_, err := conn.Conn().Prepare(ctx, "", sent(t, stmt))
			assert.NoError(t, err, stmt)
		})
	}
}

// newTestTracker is a Tracker on pool with a fresh table of its own.
func newTestTracker(tb testing.TB, pool *pgxpool.Pool) *Tracker {
	tb.Helper()
	tr, err := NewTracker(context.Background(), TrackerConfig{Pool: pool, Table: pgtest.Name("tracked"), CreateTable: true})
	require.NoError(tb, err)
	return tr
}

// sent is stmt as pgx sends it: its named parameters (@name) numbered in
// the order the statement first uses them, whatever the arguments.
func sent(t testing.TB, stmt string) string {
	t.Helper()
	s, _, err := pgx.NamedArgs{}.RewriteQuery(context.Background(), nil, stmt, nil)
	require.NoError(t, err)
	return s
}

// The statements with named parameters (Track's insert, the worker's set
// and record) do their work, every name bound, and reach the server as
// one text each: prepared once on a connection (its statement cache)
// however many payments go through them.
func TestTrackerNamedStatementsPreparedOnce(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1) // one connection: its prepared statements are the cache
	ctx := context.Background()
	tr := newTestTracker(t, pool)
	ten := decimal.RequireFromString("10")
	for i := range 4 {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tr.Track(ctx, tx, &cryptopay.Payment{ID: uuid.NewString(), OrderID: fmt.Sprint("once-", i),
				Status: cryptopay.PaymentWaiting, PayAmount: ten, Currency: "usdt", Network: "tron", ExpiredAt: time.Now().Add(time.Hour)})
			return err
		}))
	}
	_, err := pool.Exec(ctx, "UPDATE "+tr.Table()+" SET next_at = now()")
	require.NoError(t, err)
	hs, err := tr.claim(ctx, 4)
	require.NoError(t, err)
	require.Len(t, hs, 4)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	paid := decimal.RequireFromString("10.000000000000000001")
	for i, h := range hs {
		nx := next{state: TrackLate, at: &at, latePolls: 3, fail: Failure{Class: FailServer, Text: "answer " + h.OrderID}}
		if i%2 == 0 {
			tr.write(ctx, h, nx, "odd "+h.OrderID)
			got, err := tr.Get(ctx, h.OrderID)
			require.NoError(t, err)
			assert.Equal(t, TrackLate, got.State, h.OrderID)
			assert.True(t, got.NextAt.Equal(at), "next read of %s: %s", h.OrderID, got.NextAt)
			assert.Equal(t, "odd "+h.OrderID, got.Anomaly)
			assert.Equal(t, Failure{Class: FailServer, Text: "answer " + h.OrderID, At: got.LastFailure.At, Count: 1}, got.LastFailure)
			continue
		}
		p := &cryptopay.Payment{ID: h.PaymentID, OrderID: h.OrderID, Status: cryptopay.PaymentPaidOver, PayAmount: ten,
			PaidAmount: decimal.NewNullDecimal(paid), MerchantAmount: decimal.NewNullDecimal(ten), Currency: "usdt", Network: "tron"}
		require.NoError(t, tr.record(ctx, h, p, nx, ""))
		hist, err := tr.History(ctx, h.OrderID)
		require.NoError(t, err)
		require.Len(t, hist, 1, h.OrderID)
		assert.Equal(t, cryptopay.PaymentWaiting, hist[0].From)
		assert.Equal(t, cryptopay.PaymentPaidOver, hist[0].To)
		assert.Equal(t, "10.000000000000000001", hist[0].ToPaid.Decimal.String())
		assert.Equal(t, "10", hist[0].MerchantAmount.Decimal.String())
	}
	for name, stmt := range map[string]string{"insert": tr.sql.insert, "set": tr.sql.set, "record": tr.sql.record} {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, sent(t, stmt)).Scan(&n))
		assert.Equal(t, 1, n, "%s prepared as one text", name)
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
	tr := newTestTracker(t, pool)
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
		{name: "anomaly", action: true, anom: true, want: prefix + "anomaly_idx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertIndexScan(t, pool, prefix, tc.want, tr.sql.list, len(tc.states) == 0, tc.states, tc.action, tc.after, 51, tc.anom, tc.search)
		})
	}
	t.Run("health", func(t *testing.T) {
		assertIndexScan(t, pool, prefix, "", tr.sql.health, time.Minute.Microseconds())
	})
}

// BenchmarkTrackerStatements measures the worker's and Track's statements
// one payment at a time, without the poll loop's waits: "track" is Track
// in its own transaction (BEGIN, the insert, COMMIT), "write" a claim and
// a read recorded without a change, "record" a claim and a change with
// its history row (BEGIN, the record, COMMIT). The payment stays due, so
// each claim finds it. Metrics: cpu-ns/op, this process's CPU time per op
// (the client's side: the server runs apart), which a busy machine
// disturbs less than wall time, and the client's allocations per op.
func BenchmarkTrackerStatements(b *testing.B) {
	srv := pgtest.Need(b)
	pool := srv.Pool(b, 2)
	ctx := context.Background()
	tr := newTestTracker(b, pool)
	ten := decimal.RequireFromString("10")
	track := func(orderID string) {
		require.NoError(b, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tr.Track(ctx, tx, &cryptopay.Payment{ID: uuid.NewString(), OrderID: orderID,
				Status: cryptopay.PaymentWaiting, PayAmount: ten, Currency: "usdt", Network: "tron", ExpiredAt: time.Now().Add(time.Hour)})
			return err
		}))
	}
	b.Run("track", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			track(uuid.NewString())
		}
	})
	track("bench-due")
	_, err := pool.Exec(ctx, "UPDATE "+tr.Table()+" SET next_at = now() - interval '1 hour' WHERE order_id = 'bench-due'")
	require.NoError(b, err)
	claimOne := func() held {
		hs, err := tr.claim(ctx, 1)
		require.NoError(b, err)
		require.Len(b, hs, 1)
		return hs[0]
	}
	past := time.Now().Add(-time.Hour)
	b.Run("write", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			tr.write(ctx, claimOne(), next{state: TrackOpen, at: &past}, "")
		}
	})
	var n int64
	b.Run("record", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			h := claimOne()
			n++
			p := &cryptopay.Payment{ID: h.PaymentID, OrderID: h.OrderID, Status: cryptopay.PaymentPaidPartial, PayAmount: ten,
				PaidAmount: decimal.NewNullDecimal(decimal.New(n, -6)), Currency: "usdt", Network: "tron"}
			require.NoError(b, tr.record(ctx, h, p, next{state: TrackOpen, at: &past}, ""))
		}
	})
}

// reportCPU starts counting this process's CPU time (user + system) and
// allocations; the function it returns reports the time per op as
// cpu-ns/op.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ReportAllocs()
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}
