package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
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
	const lease, ttl = 400 * time.Millisecond, time.Second
	dedupetest.Run(t, func(t *testing.T) cryptopay.DedupeStore {
		return f.store(t, pgstore.WithLease(lease), pgstore.WithDoneTTL(ttl))
	}, dedupetest.Lease(lease), dedupetest.DoneTTL(ttl))
}
