package redisstore_test

import (
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"
	"github.com/cryptopay/cryptopay-go/redisstore"
	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Three replicas, each with its own Redis client and store instance, on one
// redis-server: 2,000 events, each also delivered to all three at once,
// with a restart of Redis a third of the way through; then a replica dies
// inside a callback and its lease must expire into another's delivery.
//
// The clients neither retry nor redial (go-redis would otherwise hide a
// short outage by redialling for up to two seconds), so the handlers
// really see the restart and answer 503, and Complete's own retries are
// what carry the done marks across it.
func TestReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// The lease outlasts the restart (and then some, on a loaded machine):
	// a claim that lapsed while Redis was down could run twice, which is
	// the store's documented limit, not what this test is after.
	const lease = 3 * time.Second
	replicatest.Run(t, replicatest.Config{
		NewStore: func(t *testing.T, _ int) webhook.DedupeStore {
			return newStore(t, srv.FailFastClient(t), redisstore.WithLease(lease))
		},
		// Each replica's Client is on the bus too, as in production: its
		// handler publishes a hint after every re-read, also while Redis
		// is down (a failed publish is logged and dropped).
		ClientOptions: func(t *testing.T, _ int) []cryptopay.Option {
			return []cryptopay.Option{cryptopay.WithWakeupBus(newBus(t, srv.FailFastClient(t)))}
		},
		Restart: func() error {
			start := time.Now()
			err := srv.Restart(200 * time.Millisecond)
			t.Logf("Redis was restarted in %v", time.Since(start))
			return err
		},
		Lease: lease,
	})
}
