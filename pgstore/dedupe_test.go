package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// fixture is a test's pool and its own table.
type fixture struct {
	srv   *pgtest.Server
	pool  *pgxpool.Pool
	table string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	srv := pgtest.Need(t)
	f := &fixture{srv: srv, pool: srv.Pool(t, 16), table: pgtest.Name("dedupe")}
	st, err := pgstore.NewDedupeStore(f.pool, pgstore.WithTable(f.table))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, st.CreateTable(ctx))
	return f
}

// store returns a new instance (a replica's) on the fixture's table.
func (f *fixture) store(t *testing.T, opts ...pgstore.Option) *pgstore.DedupeStore {
	t.Helper()
	st, err := pgstore.NewDedupeStore(f.pool, append([]pgstore.Option{pgstore.WithTable(f.table)}, opts...)...)
	require.NoError(t, err)
	return st
}

func TestConformance(t *testing.T) {
	f := setup(t)
	// The done TTL leaves ManyKeysConcurrently (hundreds of keys checked
	// after all are settled) time on a loaded machine.
	const lease, ttl = 400 * time.Millisecond, 3 * time.Second
	dedupetest.Run(t, func(t *testing.T) webhook.DedupeStore {
		return f.store(t, pgstore.WithLease(lease), pgstore.WithDoneTTL(ttl))
	}, dedupetest.Lease(lease), dedupetest.DoneTTL(ttl))
}

func TestCleanup(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	short := f.store(t, pgstore.WithLease(50*time.Millisecond), pgstore.WithDoneTTL(50*time.Millisecond), pgstore.WithCleanupEvery(0))
	long := f.store(t)
	claim := func(st *pgstore.DedupeStore, key string) {
		got, err := st.Claim(ctx, key)
		require.NoError(t, err)
		require.Equal(t, webhook.DedupeClaimed, got)
	}
	claim(short, "expired-lease")
	claim(short, "expired-done")
	require.NoError(t, short.Complete(ctx, "expired-done"))
	claim(long, "live-lease")
	claim(long, "live-done")
	require.NoError(t, long.Complete(ctx, "live-done"))
	time.Sleep(100 * time.Millisecond)

	n, err := long.Cleanup(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	var keys []string
	rows, err := f.pool.Query(ctx, "SELECT convert_from(key, 'UTF8') FROM "+f.table+" ORDER BY 1")
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"live-done", "live-lease"}, keys)

	// The holder of a lease deleted by a cleanup still records its
	// outcome: nobody else claimed the key.
	require.NoError(t, short.Complete(ctx, "expired-lease"))
	got, err := long.Claim(ctx, "expired-lease")
	require.NoError(t, err)
	assert.Equal(t, webhook.DedupeSeen, got)
}

// A Complete deletes a batch of expired rows in passing, at most once per
// WithCleanupEvery.
func TestOpportunisticCleanup(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	short := f.store(t, pgstore.WithDoneTTL(20*time.Millisecond), pgstore.WithCleanupEvery(0))
	for i := range 5 {
		k := fmt.Sprintf("old-%d", i)
		_, err := short.Claim(ctx, k)
		require.NoError(t, err)
		require.NoError(t, short.Complete(ctx, k))
	}
	time.Sleep(50 * time.Millisecond)
	rowCount := func() int {
		var n int
		require.NoError(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM "+f.table).Scan(&n))
		return n
	}
	require.Equal(t, 5, rowCount())

	// An instance cleans up only once its interval has passed since it was
	// built (or last cleaned up).
	hourly := f.store(t, pgstore.WithCleanupEvery(time.Hour))
	_, err := hourly.Claim(ctx, "new-0")
	require.NoError(t, err)
	require.NoError(t, hourly.Complete(ctx, "new-0"))
	assert.Equal(t, 6, rowCount(), "no cleanup before the interval has passed")

	st := f.store(t, pgstore.WithCleanupEvery(time.Millisecond))
	time.Sleep(5 * time.Millisecond)
	_, err = st.Claim(ctx, "new-1")
	require.NoError(t, err)
	require.NoError(t, st.Complete(ctx, "new-1"))
	assert.Equal(t, 2, rowCount(), "the expired rows are gone after the next Complete")
}

// While the server restarts, a Claim fails fast (the handler answers 503)
// and a Complete waits for the server to come back, within its context, so
// the outcome of a callback that ran is not lost.
func TestServerRestart(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	st := f.store(t)
	other := f.store(t)
	for _, k := range []string{"a", "b"} {
		got, err := st.Claim(ctx, k)
		require.NoError(t, err)
		require.Equal(t, webhook.DedupeClaimed, got)
	}

	require.NoError(t, f.srv.Stop())
	// The Claim runs before the restart is even scheduled, so it meets the
	// server down however slow the machine.
	_, err := other.Claim(ctx, "c")
	assert.Error(t, err, "a Claim while the server is down")
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		restarted <- f.srv.Start()
	}()
	settle, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	assert.NoError(t, st.Complete(settle, "a"), "a Complete across the restart")
	assert.NoError(t, st.Release(settle, "b"), "a Release across the restart")
	require.NoError(t, <-restarted)

	for k, want := range map[string]webhook.DedupeClaim{"a": webhook.DedupeSeen, "b": webhook.DedupeClaimed, "c": webhook.DedupeClaimed} {
		got, err := other.Claim(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, want, got, "key %s", k)
	}
}

// A Complete or Release that fails (here: its context has ended, as when
// the sender hung up) keeps the claim, so the handler's second attempt
// under a fresh context settles it.
func TestSettleAgainAfterError(t *testing.T) {
	f := setup(t)
	st, other := f.store(t), f.store(t)
	ctx := context.Background()
	dead, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name   string
		settle func(context.Context, string) error
		want   webhook.DedupeClaim
	}{
		{"Complete", st.Complete, webhook.DedupeSeen},
		{"Release", st.Release, webhook.DedupeClaimed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "payment/settle-" + tc.name + "/paid"
			got, err := st.Claim(ctx, k)
			require.NoError(t, err)
			require.Equal(t, webhook.DedupeClaimed, got)
			err = tc.settle(dead, k)
			require.ErrorIs(t, err, context.Canceled)
			require.NotErrorIs(t, err, webhook.ErrDedupeLeaseLost)
			require.NoError(t, tc.settle(ctx, k), "the second attempt")
			got, err = other.Claim(ctx, k)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
