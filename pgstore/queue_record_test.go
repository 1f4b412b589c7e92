package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// setCounter counts the set statements a pool sends.
type setCounter struct{ sets atomic.Int64 }

func (c *setCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "v_token") {
		c.sets.Add(1)
	}
	return ctx
}

func (c *setCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// recordRig is a queue with n intents enqueued and claimed by this worker,
// on a pool whose set statements are counted.
func recordRig(t *testing.T, n int) (*Queue, []claimed, *setCounter) {
	t.Helper()
	srv := pgtest.Need(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(srv.DSN())
	require.NoError(t, err)
	var sets setCounter
	cfg.ConnConfig.Tracer = &sets
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q, err := NewQueue(ctx, QueueConfig{Pool: pool, Table: pgtest.Name("intents"), CreateTable: true})
	require.NoError(t, err)
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = cryptopay.CreatePayoutParams{WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: decimal.RequireFromString("10.25"),
			Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: fmt.Sprintf("wd-%02d", i)}
	}
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := q.EnqueueMany(ctx, tx, ps)
		return err
	}))
	held, err := q.claim(ctx, n)
	require.NoError(t, err)
	require.Len(t, held, n)
	return q, held, &sets
}

// created is the change recording a created payout, as the worker
// records a create request's answer.
func createdChange(i int) change {
	return change{to: StateCreated, payoutID: fmt.Sprintf("payout-%02d", i), payoutStatus: "processing", after: time.Hour}
}

// The records that come while a statement is on the wire go together in
// the next one: one intent's record is held by a row lock, the records of
// the other five wait for it, then go in one statement; each committed
// once, with its history row.
func TestRecordsWaitingGoInOneStatement(t *testing.T) {
	const n = 6
	q, held, sets := recordRig(t, n)
	ctx := context.Background()
	lock, err := q.cfg.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, "SELECT 1 FROM "+q.Table()+" WHERE order_id = $1 FOR UPDATE", held[0].Params.OrderID)
	require.NoError(t, err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = q.set(ctx, held[0], createdChange(0), false) })
	waitFor(t, func() bool { return len(q.rec.turn) == 1 && q.pendingRecords() == 0 }) // on the wire, blocked
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = q.set(ctx, held[i], createdChange(i), false) })
	}
	waitFor(t, func() bool { return q.pendingRecords() == n-1 })
	require.NoError(t, lock.Rollback(ctx))
	wg.Wait()

	for i := range n {
		require.NoError(t, errs[i], "record %d", i)
		hist, err := q.History(ctx, held[i].Params.OrderID)
		require.NoError(t, err)
		require.Len(t, hist, 2, "the enqueue and the record")
		assert.Equal(t, fmt.Sprintf("payout-%02d", i), hist[1].PayoutID)
	}
	assert.Equal(t, int64(2), sets.sets.Load(), "the held record, then the five that waited")
	counts, err := q.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[IntentState]int{StateCreated: n}, counts)
}

// In a batch, each row is changed only by its own lease holder: a row
// whose lease passed on is told so, the others commit. A row the server
// refuses fails the statement, which changed nothing; the batch is then
// sent row by row, so the refusal is that row's only.
func TestRecordBatchRowByRow(t *testing.T) {
	q, held, sets := recordRig(t, 3)
	ctx := context.Background()
	held[1].token = newToken() // its lease passed to another worker
	rows := make([]*setRow, 3)
	for i, c := range held {
		ch := createdChange(i)
		if i == 2 {
			ch.errText = "not UTF-8: \xff" // refused by the server
		}
		rows[i] = &setRow{orderID: c.Params.OrderID, token: c.token, to: string(ch.to), errText: ch.errText,
			afterMicros: ch.after.Microseconds(), payoutID: ch.payoutID, from: string(c.State), logged: true, done: make(chan error, 1)}
	}
	q.sendSets(ctx, rows)
	assert.NoError(t, <-rows[0].done)
	assert.ErrorIs(t, <-rows[1].done, errLostLease)
	var pgErr *pgconn.PgError
	assert.ErrorAs(t, <-rows[2].done, &pgErr)
	assert.Equal(t, int64(4), sets.sets.Load(), "the batch, then each row alone")
	for i, want := range []int{2, 1, 1} {
		hist, err := q.History(ctx, held[i].Params.OrderID)
		require.NoError(t, err)
		assert.Len(t, hist, want, "intent %d: its enqueue, and its record if committed", i)
	}
}

// pendingRecords is how many records wait for the next batch.
func (q *Queue) pendingRecords() int {
	q.rec.mu.Lock()
	defer q.rec.mu.Unlock()
	return len(q.rec.pending)
}

// waitFor waits until cond holds (a condition, not a time: a minute
// without it fails).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		require.Less(t, time.Since(start), time.Minute, "condition never held")
	}
}
