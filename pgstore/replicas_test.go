package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/replicatest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Three replicas, each with its own pool and store on one table, behind a
// round-robin forwarder: every event reaches a callback exactly once,
// across a PostgreSQL restart mid-run and a replica killed mid-callback.
func TestReplicas(t *testing.T) {
	f := setup(t)
	const lease = 1500 * time.Millisecond
	replicatest.Run(t, replicatest.Config{
		NewStore: func(t *testing.T, _ int) cryptopay.DedupeStore {
			st, err := pgstore.NewDedupeStore(f.srv.Pool(t, 8), pgstore.WithTable(f.table), pgstore.WithLease(lease))
			require.NoError(t, err)
			return st
		},
		Events: 2000,
		Restart: func() error {
			if err := f.srv.Stop(); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond) // handlers answer 503 meanwhile
			return f.srv.Start()
		},
		Lease: lease,
	})
}
