package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// qrig is a queue test's world: PostgreSQL, the fake API, the queue's
// table and the merchant's effects table (one row per OnFinal commit).
type qrig struct {
	srv     *pgtest.Server
	pool    *pgxpool.Pool
	fake    *cryptopaytest.Server
	table   string
	effects string
}

func newQRig(t testing.TB, fakeOpts ...cryptopaytest.ServerOption) *qrig {
	t.Helper()
	srv := pgtest.Need(t)
	fake := cryptopaytest.NewServer(append([]cryptopaytest.ServerOption{
		cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1_000_000_000)),
	}, fakeOpts...)...)
	t.Cleanup(fake.Close)
	r := &qrig{srv: srv, pool: srv.Pool(t, 32), fake: fake, table: pgtest.Name("intents"), effects: pgtest.Name("effects")}
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+r.effects+" (order_id text NOT NULL, state text NOT NULL)")
	require.NoError(t, err)
	return r
}

// config is a queue configuration with test timings: short leases,
// fast polls, a settle time above the fake's list lag.
func (r *qrig) config(client *cryptopay.Client) pgstore.QueueConfig {
	return pgstore.QueueConfig{
		Pool: r.pool, Client: client, Table: r.table, CreateTable: true,
		Lease: 4 * time.Second, SendTimeout: time.Second, PollInterval: 20 * time.Millisecond,
		FollowEvery: 30 * time.Millisecond, BackoffMin: 30 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
		ReconcileSettleTime: 300 * time.Millisecond, ReconcileClockSkew: time.Second,
		OnFinal: r.onFinal,
	}
}

// onFinal is the merchant's effect: one row per final state, in the
// queue's transaction.
func (r *qrig) onFinal(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+r.effects+" VALUES ($1, $2)", in.Params.OrderID, string(in.State))
	return err
}

func (r *qrig) queue(t *testing.T, edit ...func(*pgstore.QueueConfig)) *pgstore.Queue {
	t.Helper()
	cfg := r.config(r.fake.Client())
	for _, e := range edit {
		e(&cfg)
	}
	q, err := pgstore.NewQueue(context.Background(), cfg)
	require.NoError(t, err)
	return q
}

func payoutParams(i int) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: decimal.RequireFromString("10.25"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: fmt.Sprintf("wd-%06d", i),
	}
}

// enqueue enqueues ps in one transaction, as a merchant would.
func (r *qrig) enqueue(t *testing.T, q *pgstore.Queue, ps ...cryptopay.CreatePayoutParams) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := q.EnqueueMany(ctx, tx, ps)
		return err
	}))
}

// heldQueue is a queue that holds every usdt intent above 5 for approval.
func (r *qrig) heldQueue(t *testing.T) *pgstore.Queue {
	return r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails.ApprovalAbove = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(5)}
	})
}

// enqueueBy enqueues ps in one transaction in actor's name.
func (r *qrig) enqueueBy(t *testing.T, q *pgstore.Queue, actor string, ps ...cryptopay.CreatePayoutParams) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := q.EnqueueBy(ctx, tx, actor, ps)
		return err
	}))
}

// run works q (a Queue or a Tracker) until the test ends (or stop is
// called).
func run(t *testing.T, q interface{ Run(context.Context) error }) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.Run(ctx) })
	stop = sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(stop)
	return stop
}

// payAll moves every created payout at the fake to paid until the test
// ends: the processor's side of the story.
func (r *qrig) payAll(t testing.TB) { r.payEvery(t, 20*time.Millisecond) }

// payEvery is payAll looking every period.
func (r *qrig) payEvery(t testing.TB, period time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, p := range r.fake.Payouts() {
				if p.Status == cryptopay.PayoutCreated {
					_ = r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutProcessing)
					_ = r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutPaid)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(period):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitFor polls the queue's counts until cond holds (or fails after a
// generous deadline: a bound on a hang, not a measurement).
func waitFor(t *testing.T, q *pgstore.Queue, what string, cond func(map[pgstore.IntentState]int) bool) map[pgstore.IntentState]int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		counts, err := q.Counts(context.Background())
		if err == nil && cond(counts) {
			return counts
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: counts %v, err %v", what, counts, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// effects counts the merchant's effect rows per orderId.
func (r *qrig) effectCounts(t *testing.T) map[string]int {
	rows, err := r.pool.Query(context.Background(), "SELECT order_id, count(*)::int FROM "+r.effects+" GROUP BY order_id")
	require.NoError(t, err)
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	require.NoError(t, err)
	return out
}

// payoutsPerOrder counts the fake's payouts per orderId.
func (r *qrig) payoutsPerOrder() map[string]int {
	out := map[string]int{}
	for _, p := range r.fake.Payouts() {
		out[p.OrderID]++
	}
	return out
}

// Enqueued with the merchant's own write, sent once, followed to paid: one
// payout per orderId, one effect per intent, committed with the record.
func TestQueueHappyPath(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	const n = 40
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = payoutParams(i)
	}
	r.enqueue(t, q, ps...)
	r.payAll(t)
	run(t, q)
	counts := waitFor(t, q, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == n })
	assert.Equal(t, map[pgstore.IntentState]int{pgstore.StatePaid: n}, counts)
	per := r.payoutsPerOrder()
	eff := r.effectCounts(t)
	for _, p := range ps {
		assert.Equal(t, 1, per[p.OrderID], p.OrderID)
		assert.Equal(t, 1, eff[p.OrderID], p.OrderID)
	}
	in, err := q.Get(context.Background(), ps[0].OrderID)
	require.NoError(t, err)
	assert.Equal(t, 1, in.Attempts)
	assert.NotEmpty(t, in.PayoutID)
	assert.Equal(t, cryptopay.PayoutPaid, in.PayoutStatus)
	assert.True(t, in.Params.Amount.Equal(decimal.RequireFromString("10.25")), "numeric round trip: %s", in.Params.Amount)
	assert.Empty(t, in.LastError)
}

// Enqueue is keyed by orderId: identical again is a no-op, different is a
// typed error that changes nothing, and a rolled-back transaction queues
// nothing.
// inTx runs f in a transaction on pool, committed if f succeeds.
func inTx[T any](pool *pgxpool.Pool, f func(tx pgx.Tx) (T, error)) (T, error) {
	var out T
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = f(tx)
		return err
	})
	return out, err
}
