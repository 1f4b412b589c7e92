package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// replicaConfig is three replicas, each with its own pool, store (on one
// table) and bus (on one channel).
func replicaConfig(t *testing.T, f *fixture, lease time.Duration) replicatest.Config {
	channel := pgtest.Name("wake")
	return replicatest.Config{
		NewStore: func(t *testing.T, _ int) webhook.DedupeStore {
			st, err := pgstore.NewDedupeStore(f.srv.Pool(t, 8), pgstore.WithTable(f.table), pgstore.WithLease(lease))
			require.NoError(t, err)
			return st
		},
		// Each replica's Client publishes a hint per event on its own bus
		// (which must ride out the restart too).
		ClientOptions: func(t *testing.T, _ int) []cryptopay.Option {
			bus, err := pgstore.NewWakeupBus(f.srv.Pool(t, 4), pgstore.WithChannel(channel))
			require.NoError(t, err)
			return []cryptopay.Option{cryptopay.WithWakeupBus(bus)}
		},
		Lease: lease,
	}
}

// Three replicas behind a round-robin forwarder, 2000 events each also
// sent to all three at once, and PostgreSQL stopped and started again a
// third of the way through: every event reaches a callback exactly once,
// and none is lost. The lease is long, so that it outlasts the outage
// however slow the machine (a lease that lapses while Complete cannot
// reach the server is the documented double-run case).
func TestReplicasExactlyOnce(t *testing.T) {
	f := setup(t)
	cfg := replicaConfig(t, f, 30*time.Second)
	cfg.Events = 2000
	cfg.Restart = func() error {
		start := time.Now()
		if err := f.srv.Stop(); err != nil {
			return err
		}
		stopped := time.Now()
		time.Sleep(300 * time.Millisecond) // handlers answer 503 meanwhile
		err := f.srv.Start()
		t.Logf("restart: stop %v, down %v in all", stopped.Sub(start), time.Since(stopped))
		return err
	}
	st := replicatest.RunDelivery(t, cfg)
	t.Logf("delivery run: %+v", st)
}

// A replica killed inside a callback (it never returns, never releases)
// loses no event: its lease expires and another replica delivers it, once.
// The lease is short, to keep the wait short, but well above what one
// delivery takes on a loaded machine under the race detector.
func TestReplicasKilled(t *testing.T) {
	f := setup(t)
	replicatest.RunKilledReplica(t, replicaConfig(t, f, 3*time.Second))
}
