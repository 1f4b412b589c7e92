package pgstore_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// engine is what the schema test needs of a Queue or a Tracker.
type engine interface {
	CheckSchema(ctx context.Context) error
	CreateTable(ctx context.Context) error
	Table() string
}

// A Queue or Tracker built without CreateTable on a database that lacks
// its tables, or has them from an older version without its columns, says
// so at its first use with a *SchemaError naming the table, the database
// and both fixes; the caller's transaction is not aborted by the check;
// calling CreateTable after the constructor (as the guides did) still
// works, and upgrades an old table. Before, the constructor returned nil
// and the first statement failed with `relation "..." does not exist`.
func TestSchemaChecked(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 4)
	ctx := context.Background()
	builders := map[string]func(table string) (engine, func() error){
		"queue": func(table string) (engine, func() error) {
			q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return q, func() error {
				_, err := q.List(ctx, pgstore.ListFilter{})
				return err
			}
		},
		"tracker": func(table string) (engine, func() error) {
			tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return tr, func() error {
				_, err := tr.List(ctx, pgstore.TrackFilter{})
				return err
			}
		},
	}
	for name, build := range builders {
		t.Run(name+" missing", func(t *testing.T) {
			e, use := build(pgtest.Name(name))
			err := use()
			var se *pgstore.SchemaError
			require.ErrorAs(t, err, &se)
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			assert.Equal(t, e.Table(), se.Table)
			assert.Empty(t, se.Missing, "the table itself is missing")
			assert.Equal(t, "postgres", se.Database)
			assert.Equal(t, "127.0.0.1", se.Host)
			for _, want := range []string{e.Table(), "does not exist", `database "postgres"`, "CreateTable", "DDL()"} {
				assert.Contains(t, err.Error(), want)
			}
			require.NoError(t, e.CreateTable(ctx), "New, then CreateTable")
			assert.NoError(t, use())
		})
		t.Run(name+" from an older version", func(t *testing.T) {
			table := pgtest.Name(name)
			e, _ := build(table)
			require.NoError(t, e.CreateTable(ctx))
			_, err := pool.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN fail_count, DROP COLUMN fail_text")
			require.NoError(t, err)
			e, use := build(table)
			var se *pgstore.SchemaError
			require.ErrorAs(t, use(), &se)
			assert.Equal(t, []string{"fail_text", "fail_count"}, se.Missing)
			assert.Contains(t, se.Error(), "lacks the columns fail_text, fail_count")
			require.NoError(t, e.CreateTable(ctx), "CreateTable upgrades it")
			assert.NoError(t, e.CheckSchema(ctx))
			assert.NoError(t, use())

			// A column of the CREATE TABLE is checked too.
			_, err = pool.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN note")
			require.NoError(t, err)
			_, use = build(table)
			require.ErrorAs(t, use(), &se)
			assert.Equal(t, []string{"note"}, se.Missing)
		})
	}
	t.Run("in the caller's transaction", func(t *testing.T) {
		q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: pgtest.Name("queue")})
		require.NoError(t, err)
		tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: pgtest.Name("tracker")})
		require.NoError(t, err)
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := q.Enqueue(ctx, tx, payoutParams(1))
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			_, err = tr.TrackOrder(ctx, tx, "ord-1")
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			var one int
			return tx.QueryRow(ctx, "SELECT 1").Scan(&one) // the transaction still works
		})
		assert.NoError(t, err)
		assert.False(t, errors.Is(err, pgstore.ErrSchema))
	})
}

// A worker started while PostgreSQL is down (restarting after a crash, or
// not up yet) waits for it at the schema check: it logs the failure and
// asks again, then works once the server is back, as it does for an
// outage after it started. Before, Run returned the connection error at
// once; a caller that restarts nothing was left without a worker.
func TestRunWaitsForTheDatabase(t *testing.T) {
	srv := startCrashServer(t)
	fake := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1000)))
	t.Cleanup(fake.Close)
	pool := srv.Pool(t, 8)
	ctx := context.Background()
	tests := []struct {
		name string
		// build makes the engine (its tables too) with logger; works
		// gives it one item and waits until Run finished it.
		build func(t *testing.T, logger *slog.Logger) (run func(context.Context) error, works func(t *testing.T))
	}{
		{name: "queue", build: func(t *testing.T, logger *slog.Logger) (func(context.Context) error, func(*testing.T)) {
			q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Client: fake.Client(), Table: pgtest.Name("queue"),
				CreateTable: true, PollInterval: 20 * time.Millisecond, Logger: logger})
			require.NoError(t, err)
			return q.Run, func(t *testing.T) {
				require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := q.Enqueue(ctx, tx, payoutParams(1))
					return err
				}))
				waitFor(t, q, "the payout created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 1 })
			}
		}},
		{name: "tracker", build: func(t *testing.T, logger *slog.Logger) (func(context.Context) error, func(*testing.T)) {
			tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: fake.Client(), Table: pgtest.Name("tracker"),
				CreateTable: true, PollInterval: 20 * time.Millisecond, OpenEvery: 50 * time.Millisecond, Logger: logger})
			require.NoError(t, err)
			return tr.Run, func(t *testing.T) {
				p, err := fake.Client().CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(5),
					Currency: "usdt", Network: "tron", OrderID: pgtest.Name("ord"), CustomerID: "cust-1", CustomerIP: "203.0.113.7"})
				require.NoError(t, err)
				require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := tr.Track(ctx, tx, p)
					return err
				}))
				require.NoError(t, fake.SetPaymentStatus(p.ID, cryptopay.PaymentPaid))
				waitUntil(t, "the payment read as paid", func() bool {
					tp, err := tr.Get(ctx, p.OrderID)
					return err == nil && tp.Status == cryptopay.PaymentPaid
				})
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logLines
			run, works := tt.build(t, logs.logger())
			require.NoError(t, srv.Stop())
			t.Cleanup(func() {
				if srv.PID() == 0 {
					_ = srv.Start() // for the next case, if this one failed while it was down
				}
			})
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			ended := make(chan error, 1)
			go func() { ended <- run(runCtx) }()
			waitUntil(t, "Run to log the failed check, or to return", func() bool {
				return logs.count("checking the tables") > 0 || len(ended) > 0
			})
			select {
			case err := <-ended:
				require.FailNow(t, "Run returned while the database was down", "%v", err)
			default:
			}
			require.NoError(t, srv.Start())
			works(t)
			cancel()
			assert.ErrorIs(t, <-ended, context.Canceled)
		})
	}
}

// Replicas that start together each run CreateTable on the same tables.
// Each round, four connections call it at once on a fresh table, then
// again on that table with its newest column dropped (the ALTERs and the
// indexes run again); no call may fail. Before, a fresh table failed one
// call in most rounds (both sessions insert the same catalog row: a
// unique violation), and with an ALTER after the CREATE INDEX statements
// (the tracker's order before merchant_amount moved) they deadlocked.
func TestCreateTableConcurrently(t *testing.T) {
	const callers, rounds = 4, 8
	pool := pgtest.Need(t).Pool(t, callers)
	ctx := context.Background()
	builders := map[string]struct {
		create  func(table string) func(context.Context) error
		upgrade string // drops a column CreateTable adds back ("" for none)
	}{
		"queue": {func(table string) func(context.Context) error {
			q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return q.CreateTable
		}, "fail_count"},
		"tracker": {func(table string) func(context.Context) error {
			tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return tr.CreateTable
		}, "fail_count"},
		"dedupe store": {func(table string) func(context.Context) error {
			s, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(table))
			require.NoError(t, err)
			return s.CreateTable
		}, ""},
		"books": {func(table string) func(context.Context) error {
			return func(ctx context.Context) error { return pgstore.CreateBooksTable(ctx, pool, table) }
		}, "opening"},
	}
	for name, b := range builders {
		t.Run(name, func(t *testing.T) {
			failed := map[string]int{} // by SQLSTATE
			for range rounds {
				table := pgtest.Name("ddl")
				create := b.create(table)
				countFailures(failed, concurrently(callers, create))
				if b.upgrade != "" {
					_, err := pool.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN "+b.upgrade)
					require.NoError(t, err)
					countFailures(failed, concurrently(callers, create))
				}
			}
			assert.Empty(t, failed, "failed CreateTable calls by SQLSTATE")
		})
	}
}

// concurrently calls f from n goroutines released together and returns
// their errors.
func concurrently(n int, f func(context.Context) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(context.Background())
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// countFailures adds errs to failed, by SQLSTATE.
func countFailures(failed map[string]int, errs []error) {
	for _, err := range errs {
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe):
			failed[pe.Code]++
		case err != nil:
			failed[err.Error()]++
		}
	}
}
