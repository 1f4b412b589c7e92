package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/replicatest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// Three replicas, each with its own pool and store on one table, behind a
// round-robin forwarder: every event reaches a callback exactly once,
// across a PostgreSQL restart mid-run and a replica killed mid-callback.
func TestReplicas(t *testing.T) {
	f := setup(t)
	const lease = 1500 * time.Millisecond
	channel := pgtest.Name("wake")
	replicatest.Run(t, replicatest.Config{
		NewStore: func(t *testing.T, _ int) cryptopay.DedupeStore {
			st, err := pgstore.NewDedupeStore(f.srv.Pool(t, 8), pgstore.WithTable(f.table), pgstore.WithLease(lease))
			require.NoError(t, err)
			return st
		},
		// Each replica's Client publishes a hint per event on its own bus
		// (and must ride out the restart too).
		ClientOptions: func(t *testing.T, _ int) []cryptopay.Option {
			bus, err := pgstore.NewWakeupBus(f.srv.Pool(t, 4), pgstore.WithChannel(channel))
			require.NoError(t, err)
			return []cryptopay.Option{cryptopay.WithWakeupBus(bus)}
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
