package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// scheduledReads walks the default schedule of one payment (TTL ttl) on a
// simulated clock: paid at paidAt (0: never) with its webhook read at
// once when hooks is true, and returns how many API reads the tracker
// makes until it stops polling.
func scheduledReads(t testing.TB, tr *pgstore.Tracker, ttl, paidAt time.Duration, hooks bool) int {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expires := created.Add(ttl)
	_, at, late := pgstore.TrackerSchedule(tr, created, expires, "", 0)
	reads, status := 0, cryptopay.PaymentWaiting
	if hooks && paidAt > 0 {
		// Polls before the payment, then the webhook's read closes it.
		for at != nil && at.Before(created.Add(paidAt)) {
			reads++
			_, at, late = pgstore.TrackerSchedule(tr, *at, expires, status, late)
		}
		return reads + 1
	}
	for at != nil {
		reads++
		now := *at
		switch {
		case paidAt > 0 && !now.Before(created.Add(paidAt)):
			status = cryptopay.PaymentPaid
		case !now.Before(expires):
			status = cryptopay.PaymentExpired
		}
		_, at, late = pgstore.TrackerSchedule(tr, now, expires, status, late)
		require.Less(t, reads, 10000, "the schedule ends")
	}
	return reads
}

// TestTrackerScheduleBounded: with the defaults, a 30-minute payment is
// read a bounded number of times whatever happens, and webhooks make it
// cheaper.
func TestTrackerScheduleBounded(t *testing.T) {
	t.Parallel()
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: &pgxpool.Pool{}})
	require.NoError(t, err)
	ttl := 30 * time.Minute
	tests := []struct {
		name   string
		paidAt time.Duration
		hooks  bool
		max    int
	}{
		{"paid at 3 min, webhooks work", 3 * time.Minute, true, 1},
		{"paid at 20 min, webhooks work", 20 * time.Minute, true, 3},
		{"paid at 20 min, webhooks lost", 20 * time.Minute, false, 3},
		{"paid 2 h late, webhooks lost", ttl + 2*time.Hour, false, 10},
		{"never paid, webhooks lost", 0, false, 25},
	}
	for _, tt := range tests {
		n := scheduledReads(t, tr, ttl, tt.paidAt, tt.hooks)
		t.Logf("%s: %d API reads", tt.name, n)
		assert.LessOrEqual(t, n, tt.max, tt.name)
		assert.Positive(t, n, tt.name)
	}
}

// BenchmarkTrackerAPIReads reports the API reads per payment of the
// default schedule (30-minute payments, 72 h horizon), from the schedule
// itself on a simulated clock. Metrics: reads-hooks (paid at a random
// minute before expiry, webhooks working: the tracker's reads),
// api-reads-hooks (the same with the webhook handler's re-read of the
// paid webhook: every API read the payment costs), reads-lost (the same,
// every webhook lost: no handler read), reads-never (never paid, every
// webhook lost).
func BenchmarkTrackerAPIReads(b *testing.B) {
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: &pgxpool.Pool{}})
	require.NoError(b, err)
	ttl := 30 * time.Minute
	var hooks, lost, never, n int
	for b.Loop() {
		paid := time.Duration(1+n%29) * time.Minute
		hooks += scheduledReads(b, tr, ttl, paid, true)
		lost += scheduledReads(b, tr, ttl, paid, false)
		never += scheduledReads(b, tr, ttl, 0, false)
		n++
	}
	b.ReportMetric(float64(hooks)/float64(n), "reads-hooks")
	b.ReportMetric(float64(hooks+n)/float64(n), "api-reads-hooks") // + the handler's re-read of one webhook per payment
	b.ReportMetric(float64(lost)/float64(n), "reads-lost")
	b.ReportMetric(float64(never)/float64(n), "reads-never")
}

// stmtCounter counts the statements a pool sends (each a round trip),
// the idle claims apart: those that found nothing, and one cut short when
// the test stops the tracker (its context cancelled mid-claim).
type stmtCounter struct{ trips, idle atomic.Int64 }

type stmtKey struct{}

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, stmtKey{}, d.SQL)
}

func (c *stmtCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(stmtKey{}).(string)
	if strings.Contains(sql, "SKIP LOCKED") && d.CommandTag.RowsAffected() == 0 && (d.Err == nil || errors.Is(d.Err, context.Canceled)) {
		c.idle.Add(1)
		return
	}
	c.trips.Add(1)
}

// stmtCountedPool is a pool on srv whose statements c counts, closed when tb
// ends.
func stmtCountedPool(tb testing.TB, srv *pgtest.Server) (*pgxpool.Pool, *stmtCounter) {
	c := &stmtCounter{}
	cfg, err := pgxpool.ParseConfig(srv.DSN())
	require.NoError(tb, err)
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	return pool, c
}

// growingAPI answers every read with the payment paid_partial, a millionth
// more paid than the read before (of the 10 tracked), so every read is a
// change (waiting -> paid_partial, or a paid amount that grew); it counts
// the reads. Its answers leave expiredAt out (the tracked one holds).
type growingAPI struct{ reads atomic.Int64 }

func (a *growingAPI) GetPayment(_ context.Context, id string, _ ...cryptopay.Option) (*cryptopay.Payment, error) {
	n := a.reads.Add(1)
	return &cryptopay.Payment{ID: id, OrderID: id, Status: cryptopay.PaymentPaidPartial,
		PayAmount: decimal.NewFromInt(10), PaidAmount: decimal.NewNullDecimal(decimal.New(n, -6))}, nil
}

// waitingAPI answers every read with the payment still waiting (expiredAt
// left out: the tracked one holds).
type waitingAPI struct{ reads atomic.Int64 }

func (a *waitingAPI) GetPayment(_ context.Context, id string, _ ...cryptopay.Option) (*cryptopay.Payment, error) {
	a.reads.Add(1)
	return &cryptopay.Payment{ID: id, OrderID: id, Status: cryptopay.PaymentWaiting,
		PayAmount: decimal.NewFromInt(10)}, nil
}

// fillTracker tracks n payments (order id = payment id), all due now,
// with status already recorded as waiting (a read that shows waiting is
// then no change).
func fillTracker(tb testing.TB, pool *pgxpool.Pool, tr *pgstore.Tracker, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	_, err := pool.Exec(context.Background(), "INSERT INTO "+tr.Table()+
		" (order_id, payment_id, pay_amount, currency, network, expired_at, state, status, next_at) "+
		"SELECT id, id, 10, 'usdt', 'tron', now() + interval '1 hour', 'open', 'waiting', now() FROM unnest($1::text[]) AS id", ids)
	require.NoError(tb, err)
	return ids
}

// BenchmarkTrackerRoundTrips reports the database round trips per
// recorded change (claim amortised, BEGIN and COMMIT included, the
// merchant's own statements in OnChange excluded: there are none here)
// and per read that changes nothing. Metrics: trips/change, trips/read.
func BenchmarkTrackerRoundTrips(b *testing.B) {
	srv := pgtest.Need(b)
	for _, name := range []string{"change", "nochange"} {
		b.Run(name, func(b *testing.B) {
			pool, c := stmtCountedPool(b, srv)
			tcfg := pgstore.TrackerConfig{Pool: pool, Table: pgtest.Name("tracked"), CreateTable: true,
				OpenEvery: time.Hour, PollInterval: 5 * time.Millisecond, Concurrency: 16}
			var reads func() int64
			if name == "change" {
				api := &growingAPI{}
				pgstore.WithTrackerAPI(&tcfg, api)
				reads = api.reads.Load
			} else {
				api := &waitingAPI{}
				pgstore.WithTrackerAPI(&tcfg, api)
				reads = api.reads.Load
			}
			tr, err := pgstore.NewTracker(context.Background(), tcfg)
			require.NoError(b, err)
			const batch = 256
			for b.Loop() {
				b.StopTimer()
				ids := fillTracker(b, pool, tr, batch)
				_ = ids
				before, start := c.trips.Load(), reads()
				b.StartTimer()
				stop := runTracker(tr)
				for reads()-start < batch {
					time.Sleep(time.Millisecond)
				}
				stop()
				b.StopTimer()
				b.ReportMetric(float64(c.trips.Load()-before)/float64(reads()-start), "trips/"+map[bool]string{true: "change", false: "read"}[name == "change"])
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTrackerOpenPayments reads 1,000 due payments with 1,000 and
// with 100,000 open payments in the table and reports the heap in use
// afterwards: the tracker keeps no state per payment in memory (a claim
// holds at most Concurrency rows), so it stays flat. Metric: heap-MB.
func BenchmarkTrackerOpenPayments(b *testing.B) {
	srv := pgtest.Need(b)
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pool := srv.Pool(b, 16)
			api := &waitingAPI{}
			tcfg := pgstore.TrackerConfig{Pool: pool, Table: pgtest.Name("tracked"), CreateTable: true,
				OpenEvery: time.Hour, PollInterval: 5 * time.Millisecond}
			pgstore.WithTrackerAPI(&tcfg, api)
			tr, err := pgstore.NewTracker(context.Background(), tcfg)
			require.NoError(b, err)
			fillTracker(b, pool, tr, n)
			var heap uint64
			for b.Loop() {
				start := api.reads.Load()
				stop := runTracker(tr)
				for api.reads.Load()-start < 1000 {
					time.Sleep(time.Millisecond)
				}
				stop()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = max(heap, ms.HeapInuse)
				// Make the payments due again for the next round.
				b.StopTimer()
				_, err := pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = now()")
				require.NoError(b, err)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
		})
	}
}

// The late schedule's doubling cannot overflow, whatever the durations:
// every late wait stays within [3/4 LateMin, LateMax], so no huge LateMin
// or LateMax turns into a negative wait (a panic in the jitter) or a zero
// one (a payment read in a tight loop).
func TestTrackerScheduleNoOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		lateMin, lateMax time.Duration
	}{
		{"defaults", pgstore.DefaultTrackerLateMin, pgstore.DefaultTrackerLateMax},
		{"huge LateMin", 1 << 62, math.MaxInt64},
		{"just past half the range", math.MaxInt64/2 + 1, math.MaxInt64},
		{"min equals max", 1 << 40, 1 << 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: &pgxpool.Pool{},
				LateMin: tt.lateMin, LateMax: tt.lateMax, Horizon: math.MaxInt64})
			require.NoError(t, err)
			expired := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := expired.Add(time.Hour)
			for polls := range 70 {
				var state pgstore.TrackState
				var at *time.Time
				require.NotPanics(t, func() {
					state, at, _ = pgstore.TrackerSchedule(tr, now, expired, cryptopay.PaymentExpired, polls)
				}, "after %d late polls", polls)
				require.Equal(t, pgstore.TrackLate, state)
				require.NotNil(t, at)
				wait := at.Sub(now)
				require.GreaterOrEqual(t, wait, tt.lateMin-tt.lateMin/4-1, "after %d late polls", polls)
				require.LessOrEqual(t, wait, tt.lateMax, "after %d late polls", polls)
			}
		})
	}
}

// scriptedAPI answers each read with the next status of its script, with
// the paid amount given, and counts the reads.
type scriptedAPI struct {
	reads  atomic.Int64
	script []cryptopay.Payment
}

func (a *scriptedAPI) GetPayment(_ context.Context, id string, _ ...cryptopay.Option) (*cryptopay.Payment, error) {
	n := a.reads.Add(1)
	p := a.script[min(int(n), len(a.script))-1]
	p.ID, p.OrderID = id, "cost-1"
	return &p, nil
}

// The database round trips of one payment's life, counted: tracked from
// its create answer (waiting), read once still waiting, then read paid.
// The read that finds it still waiting records nothing (the create answer
// is its first state): the claim and one schedule update. The paid read is
// the claim, BEGIN (with synchronous_commit), the record-and-history
// statement and COMMIT. Idle claims (nothing due) are not counted.
func TestTrackerRoundTripsPerPayment(t *testing.T) {
	srv := pgtest.Need(t)
	pool, c := stmtCountedPool(t, srv)
	side := srv.Pool(t, 2) // the test's own looks, not counted
	ten := decimal.RequireFromString("10")
	api := &scriptedAPI{script: []cryptopay.Payment{
		{Status: cryptopay.PaymentWaiting, PayAmount: ten, PaidAmount: decimal.NewNullDecimal(decimal.Zero)},
		{Status: cryptopay.PaymentPaid, PayAmount: ten, PaidAmount: decimal.NewNullDecimal(ten)},
	}}
	// A short lease: a claim cut short when a Run is stopped may still run
	// at the server after the next read was made due, leasing the payment
	// to nobody until the lease ends (by design: leases are how a lost
	// worker's payments come back).
	cfg := pgstore.TrackerConfig{Pool: pool, Table: pgtest.Name("tracked"), CreateTable: true,
		OpenEvery: time.Hour, PollInterval: 5 * time.Millisecond, Lease: 300 * time.Millisecond}
	pgstore.WithTrackerAPI(&cfg, api)
	tr, err := pgstore.NewTracker(context.Background(), cfg)
	require.NoError(t, err)
	id := uuid.NewString()
	require.NoError(t, pgx.BeginFunc(context.Background(), side, func(tx pgx.Tx) error {
		_, err := tr.Track(context.Background(), tx, &cryptopay.Payment{ID: id, OrderID: "cost-1", Status: cryptopay.PaymentWaiting,
			PayAmount: ten, Currency: "usdt", Network: "tron", ExpiredAt: time.Now().Add(time.Hour)})
		return err
	}))
	readOnce := func() int64 {
		_, err := side.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = now()")
		require.NoError(t, err)
		before, reads := c.trips.Load(), api.reads.Load()
		stop := runTracker(tr)
		trackWaitFor(t, "the read", func() bool { return api.reads.Load() > reads })
		waitWritten(t, side, tr.Table(), "cost-1")
		stop()
		return c.trips.Load() - before
	}
	assert.Equal(t, int64(2), readOnce(), "still waiting: the claim and the schedule, no change recorded")
	assert.Equal(t, int64(4), readOnce(), "paid: the claim, BEGIN, the record, COMMIT")
	hist, err := tr.History(context.Background(), "cost-1")
	require.NoError(t, err)
	require.Len(t, hist, 1, "one change in the payment's life")
	assert.Equal(t, cryptopay.PaymentWaiting, hist[0].From)
}
