package redisstore_test

import (
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"
	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"
)

func redisBuses(srv *redistest.Server) func(testing.TB, int) cryptopay.WakeupBus {
	return func(tb testing.TB, _ int) cryptopay.WakeupBus { return newBus(tb, srv.Client(tb)) }
}

// A wait on replica A that polls once a minute ends because replica B,
// which received the webhook, published a hint on Redis: each of these
// waits would otherwise take a minute and fail the 10 s limit.
func TestCrossReplicaWakeup(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ds := replicatest.WakeupLatencies(t, redisBuses(srv), 10)
	t.Logf("webhook on B -> wait on A returned: median %v, max %v", replicatest.Percentile(ds, 50), replicatest.Percentile(ds, 100))
}

// BenchmarkCrossReplicaWakeup reports the median and 90th percentile of
// the time from a webhook landing on replica B to a wait on replica A
// (polling once a minute) returning, over Redis pub/sub on loopback.
func BenchmarkCrossReplicaWakeup(b *testing.B) {
	srv := redistest.Start(b)
	rig := replicatest.NewWakeupRig(b, redisBuses(srv))
	var all []time.Duration
	for b.Loop() {
		d, err := rig.Once()
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, d)
	}
	b.ReportMetric(float64(replicatest.Percentile(all, 50).Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(replicatest.Percentile(all, 90).Microseconds())/1000, "ms-p90")
}
