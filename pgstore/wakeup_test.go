package pgstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// stoppingBus ends, when the test ends, the subscriptions the rig's
// Clients made (the rig does not close its Clients).
type stoppingBus struct {
	*pgstore.WakeupBus
	mu    sync.Mutex
	stops []func()
}

func (b *stoppingBus) Subscribe(fn func(cryptopay.Wakeup)) (func(), error) {
	stop, err := b.WakeupBus.Subscribe(fn)
	if err == nil {
		b.mu.Lock()
		b.stops = append(b.stops, stop)
		b.mu.Unlock()
	}
	return stop, err
}

func (b *stoppingBus) stopAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, stop := range b.stops {
		stop()
	}
}

// replicaBuses returns a newBus for the rig: each replica its own pool and
// bus on one channel.
func replicaBuses(tb testing.TB) func(tb testing.TB, replica int) cryptopay.WakeupBus {
	srv := pgtest.Need(tb)
	channel := pgtest.Name("wake")
	return func(tb testing.TB, _ int) cryptopay.WakeupBus {
		b, err := pgstore.NewWakeupBus(srv.Pool(tb, 4), pgstore.WithChannel(channel))
		require.NoError(tb, err)
		sb := &stoppingBus{WakeupBus: b}
		tb.Cleanup(sb.stopAll)
		return sb
	}
}

// A wait on replica A that polls once a minute ends when the webhook lands
// on replica B: the hint crosses over LISTEN/NOTIFY. (The rig fails a
// round that takes 10 s, which polling alone could not beat.)
func TestWakeupAcrossReplicas(t *testing.T) {
	ds := replicatest.WakeupLatencies(t, replicaBuses(t), 5)
	t.Logf("wake-up latencies: %v", ds)
}

// BenchmarkWakeupAcrossReplicas measures the time from a webhook landing
// on replica B to a wait on replica A (polling once a minute) returning
// the paid payment, over LISTEN/NOTIFY. Metrics: median-ms, p90-ms.
func BenchmarkWakeupAcrossReplicas(b *testing.B) {
	rig := replicatest.NewWakeupRig(b, replicaBuses(b))
	var ds []time.Duration
	for b.Loop() {
		d, err := rig.Once()
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
	}
	b.ReportMetric(float64(replicatest.Percentile(ds, 50).Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(replicatest.Percentile(ds, 90).Microseconds())/1000, "p90-ms")
}
