package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// crashSettings make a server on which an acknowledged COMMIT is not
// durable unless its transaction says so: synchronous_commit off (as a
// merchant may set it on the database or the role), and a WAL writer that
// sleeps 10 s between rounds, so that a crash right after a commit loses
// it every time instead of now and then.
var crashSettings = map[string]string{"synchronous_commit": "off", "wal_writer_delay": "10s"}

// startCrashServer starts a server of the test's own (a crash of the
// shared one would fail the other tests) with crashSettings.
func startCrashServer(t *testing.T) *pgtest.Server {
	t.Helper()
	pgtest.Need(t)
	srv, err := pgtest.StartWith(crashSettings)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// newQRigOn is newQRig on srv.
func newQRigOn(t testing.TB, srv *pgtest.Server, fakeOpts ...cryptopaytest.ServerOption) *qrig {
	t.Helper()
	fake := cryptopaytest.NewServer(append([]cryptopaytest.ServerOption{
		cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1_000_000_000)),
	}, fakeOpts...)...)
	t.Cleanup(fake.Close)
	r := &qrig{srv: srv, pool: srv.Pool(t, 32), fake: fake, table: pgtest.Name("intents"), effects: pgtest.Name("effects")}
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+r.effects+" (order_id text NOT NULL, state text NOT NULL)")
	require.NoError(t, err)
	return r
}

// Durable before sending: on a server with synchronous_commit off,
// PostgreSQL crashes (SIGKILL of every process, or an immediate shutdown)
// right after the queue committed an attempt, and the create request goes
// out. After recovery the attempt is still on record (sending, 1 attempt),
// so the intent is reconciled, found, and paid once. Without
// synchronous_commit forced on for the attempt's transaction, it came back
// queued with 0 attempts and was paid twice. The same for a final state:
// once OnFinal's transaction is acknowledged (the Observer hears of it),
// a crash does not undo it, so the callback never runs twice.
func TestQueueDurableCommits(t *testing.T) {
	srv := startCrashServer(t)
	for _, tc := range []struct {
		name   string
		crash  func(*pgtest.Server) error
		capped bool // a velocity cap: the attempt commits in its own transaction, not in the claim's batch
		final  bool // crash after the final state's commit, not after the attempt's
		noCall bool // the first worker has no OnFinal: the final state is recorded with its callback due
	}{
		{name: "attempt in a batch, SIGKILL", crash: (*pgtest.Server).Crash},
		{name: "attempt in a batch, immediate shutdown", crash: (*pgtest.Server).StopImmediate},
		{name: "attempt under a velocity cap, SIGKILL", crash: (*pgtest.Server).Crash, capped: true},
		{name: "final state, SIGKILL", crash: (*pgtest.Server).Crash, final: true},
		{name: "final state, immediate shutdown", crash: (*pgtest.Server).StopImmediate, final: true},
		{name: "final state without OnFinal, SIGKILL", crash: (*pgtest.Server).Crash, final: true, noCall: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newQRigOn(t, srv)
			p := payoutParams(1)
			var (
				once     sync.Once
				crashed  = make(chan error, 1)
				paidSeen atomic.Int64 // final transitions the Observer heard of, over both workers
			)
			crash := func() { once.Do(func() { crashed <- tc.crash(srv) }) }
			edit := func(c *pgstore.QueueConfig) {
				if tc.capped {
					c.Guardrails.Velocity = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1000)}
				}
				c.Observer = func(tr pgstore.Transition) {
					if tr.To == pgstore.StatePaid {
						paidSeen.Add(1)
						if tc.final {
							crash()
						}
					}
				}
			}
			q := r.queue(t, edit, func(c *pgstore.QueueConfig) {
				if tc.noCall {
					c.OnFinal = nil
				}
			})
			if !tc.final {
				pgstore.SetQueueHook(q, func(point string) {
					if point == "attempt-committed" {
						crash()
					}
				})
			}
			r.enqueue(t, q, p)
			// The setup (tables, the enqueue) is not under test: on disk
			// before the crash.
			_, err := r.pool.Exec(context.Background(), "CHECKPOINT")
			require.NoError(t, err)
			r.payAll(t)
			require.NoError(t, srv.WaitWALWriterAsleep(context.Background()))
			stop := run(t, q)
			select {
			case err := <-crashed:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never reached the crash point")
			}
			// The create request went out after the attempt's commit (the
			// fake is not the database): wait for it, then end the worker.
			waitUntil(t, "the payout created", func() bool { return r.fake.PayoutsWithOrderID(p.OrderID) == 1 })
			stop()
			require.NoError(t, srv.Start())

			// What survived the crash.
			var in *pgstore.Intent
			waitUntil(t, "the server back", func() bool {
				var err error
				in, err = q.Get(context.Background(), p.OrderID)
				return err == nil
			})
			switch {
			case tc.final && tc.noCall:
				assert.Equal(t, pgstore.StatePaid, in.State, "the acknowledged final state survived the crash")
				assert.True(t, in.CallbackDue, "with its callback due")
			case tc.final:
				assert.Equal(t, pgstore.StatePaid, in.State, "the acknowledged final state survived the crash")
				assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t), "and OnFinal's effect with it")
			default:
				assert.Equal(t, pgstore.StateSending, in.State, "the acknowledged attempt survived the crash")
				assert.Equal(t, 1, in.Attempts)
			}

			// A new worker (with OnFinal) takes over once the lease ends:
			// one payout, one effect, one final transition.
			q2 := r.queue(t, edit)
			run(t, q2)
			waitFor(t, q2, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
			waitUntil(t, "the callback run", func() bool { return r.effectCounts(t)[p.OrderID] >= 1 })
			got, err := q2.Get(context.Background(), p.OrderID)
			require.NoError(t, err)
			t.Logf("after the crash: %s with %d attempt(s); at the end: %s with %d attempt(s), verdict %q; payouts %d, final transitions %d",
				in.State, in.Attempts, got.State, got.Attempts, got.Verdict, r.fake.PayoutsWithOrderID(p.OrderID), paidSeen.Load())
			assert.Equal(t, 1, r.fake.PayoutsWithOrderID(p.OrderID), "paid once")
			assert.Equal(t, 1, got.Attempts, "never sent again")
			assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t), "one final effect")
			assert.Equal(t, int64(1), paidSeen.Load(), "one final transition: OnFinal's commit was never undone")
		})
	}
}

// An operator's final move (Reject, with OnFinal in its transaction) is
// durable too: once Reject returns, a crash does not bring the intent back
// for approval.
func TestQueueDurableOperatorMove(t *testing.T) {
	srv := startCrashServer(t)
	r := newQRigOn(t, srv)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails.ApprovalAbove = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1)}
	})
	p := payoutParams(1)
	r.enqueue(t, q, p)
	stop := run(t, q)
	waitFor(t, q, "held for approval", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateNeedsApproval] == 1 })
	stop()
	_, err := r.pool.Exec(context.Background(), "CHECKPOINT") // the setup, on disk
	require.NoError(t, err)
	require.NoError(t, srv.WaitWALWriterAsleep(context.Background()))
	require.NoError(t, q.Reject(context.Background(), p.OrderID, "ops", "not this customer"))
	require.NoError(t, srv.Crash())
	require.NoError(t, srv.Start())
	var in *pgstore.Intent
	waitUntil(t, "the server back", func() bool {
		var err error
		in, err = q.Get(context.Background(), p.OrderID)
		return err == nil
	})
	assert.Equal(t, pgstore.StateRejected, in.State, "the acknowledged rejection survived the crash")
	assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t), "and OnFinal's effect with it")
	assert.Zero(t, r.fake.PayoutCount())
}

// waitUntil polls cond until it holds, failing after 30 s (a bound on a
// hang, not a measurement).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
