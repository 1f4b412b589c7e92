package redisstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/redisstore"
	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// roundTrips counts the commands (and pipelines) a client sends: each is
// one network round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkDedupeStoreEvent measures what the store costs per webhook
// event on a real redis-server over loopback: a first delivery (Claim and
// Complete) and a duplicate (Claim answered "seen"). It reports Redis
// round trips per event beside time and allocations.
func BenchmarkDedupeStoreEvent(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	rt := &roundTrips{}
	rdb.AddHook(rt)
	s, err := redisstore.NewDedupeStore(rdb)
	require.NoError(b, err)
	ctx := context.Background()
	// Load the scripts, so the loop measures the steady state.
	_, err = s.Claim(ctx, "warm-up")
	require.NoError(b, err)
	require.NoError(b, s.Complete(ctx, "warm-up"))

	run := 0
	b.Run("first", func(b *testing.B) {
		run++ // keys must be new in every run of -count
		rt.n.Store(0)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			key := "payment/bench-" + strconv.Itoa(run) + "-" + strconv.Itoa(i) + "/paid"
			c, err := s.Claim(ctx, key)
			if err != nil || c != webhook.DedupeClaimed {
				b.Fatal(c, err)
			}
			if err := s.Complete(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/event")
	})
	b.Run("duplicate", func(b *testing.B) {
		rt.n.Store(0)
		b.ReportAllocs()
		for b.Loop() {
			c, err := s.Claim(ctx, "warm-up")
			if err != nil || c != webhook.DedupeSeen {
				b.Fatal(c, err)
			}
		}
		b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/event")
	})
}
