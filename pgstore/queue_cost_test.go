package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// tripCounter is a pgx QueryTracer and BatchTracer that counts the round
// trips a pool makes: a statement, or a pgx batch (sent together, answered
// together; pgx reports each of its statements' ends with no start, and
// those are not counted again). Claims that found nothing (an idle
// worker's poll, one per PollInterval whatever the queue's length) and
// the merchant's own OnFinal statement are counted apart.
type tripCounter struct {
	trips, idle, merchant atomic.Int64
	claims                atomic.Int64 // claims that found intents (in trips too)
}

type traceKey struct{}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, d.SQL)
}

func (c *tripCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, ok := ctx.Value(traceKey{}).(string)
	if !ok {
		return // a statement of a batch: the batch is counted
	}
	switch {
	case strings.Contains(sql, "FOR UPDATE SKIP LOCKED") && (d.CommandTag.RowsAffected() == 0 || d.Err != nil):
		// Found nothing, or was cut off by the worker's stop (its
		// context ended while the poll was on the wire): no intent moved.
		c.idle.Add(1)
	case strings.Contains(sql, "FOR UPDATE SKIP LOCKED"):
		c.claims.Add(1)
		c.trips.Add(1)
	case strings.HasPrefix(sql, "INSERT INTO effects_"):
		c.merchant.Add(1)
	default:
		c.trips.Add(1)
	}
}

// TraceBatchStart, TraceBatchQuery and TraceBatchEnd count a batch (its
// statements sent together) as one round trip.
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {
	c.trips.Add(1)
}

// tracedPool is a pool on the test server whose statements c counts.
func (r *qrig) tracedPool(t testing.TB, c *tripCounter, maxConns int32) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(r.srv.DSN())
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// The happy path costs at most 4 database round trips per payout: the
// claim and the attempt's commit (each shared by a batch), the record of
// the created payout, the claim that follows it (shared) and the final
// transaction (its BEGIN carries the final state; then COMMIT). The
// merchant's OnFinal statement is theirs, and counted apart.
//
// The count does not depend on scheduling: how claims batch under load
// did (a claim of one intent costs as much as a claim of 300, and a
// follow poll of a payout not yet paid adds two statements), and the test
// failed once on a loaded machine. Here the worker has a slot for every
// intent, so one claim takes all that are due; nothing is followed until
// every payout is paid at the fake, and then every intent is made due at
// once (a statement of the test's own, not counted); and the timeouts are
// long enough that no request ends unknown, however slow the machine. The
// worst batching is in BenchmarkQueueThroughput's figure.
func TestQueueRoundTrips(t *testing.T) {
	r := newQRig(t)
	obs := r.queue(t) // reads counts on its own pool
	var trips tripCounter
	pool := r.tracedPool(t, &trips, 20)
	const n = 320
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Pool, c.CreateTable, c.PollInterval = pool, false, 100*time.Millisecond
		c.Concurrency, c.FollowEvery = n, time.Hour
		c.Lease, c.SendTimeout = 5*time.Minute, time.Minute
	})
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = payoutParams(i)
	}
	r.enqueue(t, obs, ps...)

	// Phase 1: send everything; phase 2, once the processor has paid
	// them all, follow them to paid. Each payout is thus read once.
	stop := run(t, q)
	waitFor(t, obs, "all created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == n })
	stop()
	for _, p := range r.fake.Payouts() {
		require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutProcessing))
		require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutPaid))
	}
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.table+" SET next_at = now() - interval '1 second'")
	require.NoError(t, err)
	run(t, q)
	waitFor(t, obs, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == n })

	per := float64(trips.trips.Load()) / n
	t.Logf("round trips: %d for %d payouts = %.3f per payout (%d claims that found intents); plus %d idle polls and %d merchant statements",
		trips.trips.Load(), n, per, trips.claims.Load(), trips.idle.Load(), trips.merchant.Load())
	assert.LessOrEqual(t, per, 4.0)
	assert.Equal(t, int64(2), trips.claims.Load(), "one claim for all the sends, one for all the follows")
	assert.Equal(t, int64(n), trips.merchant.Load(), "OnFinal ran once per payout")
	assert.Equal(t, n, r.fake.PayoutCount(), "no request ended unknown and was sent again")
}

// A worker's memory does not grow with the queue's length: it holds at
// most Concurrency intents, so a claim allocates the same whether 1,000
// or 100,000 intents wait. On the PostgreSQL side each queued intent is
// one row of the same size (BENCHMARKS.md has the figures).
func TestQueueClaimFlatInQueueLength(t *testing.T) {
	allocs, bytes := map[int]float64{}, map[int]int64{}
	for _, queued := range []int{1000, 100000} {
		r := newQRig(t)
		q := r.queue(t)
		fillQueue(t, r, queued)
		allocs[queued] = claimAllocs(t, r, q)
		// The claim reads the due index, not the table: its cost follows
		// what is due, not what is queued.
		rows, err := r.pool.Query(context.Background(), "EXPLAIN "+pgstore.ClaimSQL(q), 16, int64(1), []byte{1}, false)
		require.NoError(t, err)
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		assert.Contains(t, strings.Join(plan, "\n"), "_due_idx", "the claim uses the due index at %d queued", queued)
		var size int64
		require.NoError(t, r.pool.QueryRow(context.Background(), "SELECT pg_total_relation_size($1)", r.table).Scan(&size))
		bytes[queued] = size / int64(queued)
	}
	t.Logf("allocations per claim of 16: %v; PostgreSQL bytes per queued intent (table and indexes): %v", allocs, bytes)
	assert.InDelta(t, allocs[1000], allocs[100000], allocs[1000]*0.05, "allocations per claim do not grow with the queue")
}

// fillQueue inserts n queued intents in one statement (far faster than n
// Enqueues; the rows are the same).
func fillQueue(t testing.TB, r *qrig, n int) {
	_, err := r.pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s (order_id, wallet_address, network_fee_by_user,
amount, currency, network, customer_id, customer_ip, additional_data, webhook_url, state, next_at)
SELECT 'wd-' || lpad(i::text, 7, '0'), 'TXYZwallet', false, 10.25, 'usdt', 'tron', 'cust-1', '203.0.113.7', '', '', 'queued',
now() + interval '1 hour'
FROM generate_series(1, $1) AS i`, r.table), n)
	require.NoError(t, err)
	_, err = r.pool.Exec(context.Background(), "ANALYZE "+r.table)
	require.NoError(t, err)
}

// claimAllocs counts a claim's allocations on a queue whose intents are
// all due in an hour but 16 (made due, claimed and put back each run).
func claimAllocs(t *testing.T, r *qrig, q *pgstore.Queue) float64 {
	ctx := context.Background()
	due := fmt.Sprintf(`UPDATE %s SET next_at = now() - interval '1 second', lease_token = NULL
WHERE order_id IN (SELECT order_id FROM %[1]s ORDER BY order_id LIMIT 16)`, r.table)
	runtime.GC()
	return testing.AllocsPerRun(20, func() {
		_, err := r.pool.Exec(ctx, due)
		require.NoError(t, err)
		got, err := pgstore.Claim(ctx, q, 16)
		require.NoError(t, err)
		require.Equal(t, 16, got)
	})
}

// processor plays a processor that pays each payout as soon as the queue
// has recorded it created: the workers' Observer hands it the payout id
// (never blocking: the channel holds every intent), and it pays at the
// fake, touching neither the queue's database nor the workers' CPU
// beyond that. It also counts the intents paid, from the same Observer,
// so the benchmark waits without reading the table.
type processor struct {
	fake    *cryptopaytest.Server
	created chan string
	paid    atomic.Int64
}

func newProcessor(b *testing.B, fake *cryptopaytest.Server, n int) *processor {
	p := &processor{fake: fake, created: make(chan string, n)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := range p.created {
			_ = fake.SetPayoutStatus(id, cryptopay.PayoutProcessing)
			_ = fake.SetPayoutStatus(id, cryptopay.PayoutPaid)
		}
	})
	b.Cleanup(func() { close(p.created); wg.Wait() })
	return p
}

// observe is the workers' Observer.
func (p *processor) observe(tr pgstore.Transition) {
	switch tr.To {
	case pgstore.StateCreated:
		p.created <- tr.PayoutID
	case pgstore.StatePaid:
		p.paid.Add(1)
	}
}

// BenchmarkQueueThroughput is intents per second end to end (enqueued in
// one transaction to paid, the processor paying each payout as soon as its
// creation is recorded, the workers reading a created payout again after
// 20 ms) with 3 workers, each with its own pool, against the fake. It
// also reports the workers' database round trips per intent (the
// merchant's OnFinal statement and claims that found nothing apart), a
// count that does not depend on the machine's load.
func BenchmarkQueueThroughput(b *testing.B) {
	r := newQRig(b)
	obs, err := pgstore.NewQueue(context.Background(), r.config(r.fake.Client()))
	require.NoError(b, err)
	proc := newProcessor(b, r.fake, b.N)
	var trips tripCounter
	var queues []*pgstore.Queue
	for range 3 {
		cfg := r.config(r.fake.Client())
		cfg.Pool, cfg.CreateTable, cfg.Concurrency = r.tracedPool(b, &trips, 24), false, 32
		cfg.FollowEvery, cfg.Observer = 20*time.Millisecond, proc.observe
		q, err := pgstore.NewQueue(context.Background(), cfg)
		require.NoError(b, err)
		queues = append(queues, q)
	}
	ps := make([]cryptopay.CreatePayoutParams, b.N)
	for i := range ps {
		ps[i] = payoutParams(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.ResetTimer()
	require.NoError(b, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := obs.EnqueueMany(ctx, tx, ps)
		return err
	}))
	for _, q := range queues {
		wg.Go(func() { _ = q.Run(ctx) })
	}
	// A bound on a stall (no intent paid for a minute), not a timing.
	last, lastAt := int64(-1), time.Now()
	for n := proc.paid.Load(); n < int64(b.N); n = proc.paid.Load() {
		if n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > time.Minute {
			c, _ := obs.Counts(ctx)
			b.Fatalf("no progress for a minute: %v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	c, err := obs.Counts(context.Background())
	require.NoError(b, err)
	require.Equal(b, map[pgstore.IntentState]int{pgstore.StatePaid: b.N}, c)
	require.Equal(b, b.N, r.fake.PayoutCount(), "one payout per intent")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "intents/s")
	b.ReportMetric(float64(trips.trips.Load())/float64(b.N), "trips/intent")
	b.ReportMetric(float64(trips.idle.Load())/float64(b.N), "idle-polls/intent")
}
