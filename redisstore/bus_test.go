package redisstore_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/redisstore"
	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"
)

func newBus(t testing.TB, rdb redis.UniversalClient, opts ...redisstore.BusOption) *redisstore.WakeupBus {
	t.Helper()
	b, err := redisstore.NewWakeupBus(rdb, opts...)
	require.NoError(t, err)
	return b
}

// collect subscribes and returns the hints received so far.
func collect(t *testing.T, b *redisstore.WakeupBus) (got func() []cryptopay.Wakeup, stop func()) {
	t.Helper()
	var (
		mu   sync.Mutex
		list []cryptopay.Wakeup
	)
	stop, err := b.Subscribe(func(w cryptopay.Wakeup) {
		mu.Lock()
		list = append(list, w)
		mu.Unlock()
	})
	require.NoError(t, err)
	t.Cleanup(stop)
	return func() []cryptopay.Wakeup {
		mu.Lock()
		defer mu.Unlock()
		return append([]cryptopay.Wakeup(nil), list...)
	}, stop
}

func TestWakeupBusAcrossClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, b := newBus(t, srv.Client(t)), newBus(t, srv.Client(t))
	gotA, _ := collect(t, a)
	gotB, _ := collect(t, b)

	want := []cryptopay.Wakeup{
		{Kind: "payment", ID: "6f1c2b9e-4a2d-4c8e-9a57-2f1d3e4b5c6d", Source: "replica-a"},
		{Kind: "payout", ID: "po_123/odd id\u00e9", Source: "replica-a"},
	}
	for _, w := range want {
		require.NoError(t, a.Publish(context.Background(), w))
	}
	for name, got := range map[string]func() []cryptopay.Wakeup{"publisher": gotA, "other replica": gotB} {
		require.Eventually(t, func() bool { return len(got()) == len(want) }, 30*time.Second, 5*time.Millisecond, name)
		assert.Equal(t, want, got(), "%s receives every hint, in order, intact", name)
	}
}

func TestWakeupBusDropsMalformedHints(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := newBus(t, rdb, redisstore.WithChannel("test:hints"))
	got, _ := collect(t, b)
	for _, raw := range []string{
		"not json",
		`{"kind":"refund","id":"x"}`,
		`{"kind":"payment","id":""}`,
		`{"kind":"payment","id":"` + strings.Repeat("a", 2000) + `"}`,
		`[]`,
	} {
		require.NoError(t, rdb.Publish(context.Background(), "test:hints", raw).Err())
	}
	good := cryptopay.Wakeup{Kind: "payout", ID: "po_1"}
	require.NoError(t, b.Publish(context.Background(), good))
	require.Eventually(t, func() bool { return len(got()) > 0 }, 30*time.Second, 5*time.Millisecond)
	// Messages on one channel arrive in order: had a bad one passed, it
	// would be first.
	assert.Equal(t, []cryptopay.Wakeup{good}, got())
}

func TestWakeupBusStopWaitsForCallback(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := newBus(t, srv.Client(t))
	entered, release := make(chan struct{}), make(chan struct{})
	var exited atomic.Bool
	var calls atomic.Int32
	stop, err := b.Subscribe(func(cryptopay.Wakeup) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
			exited.Store(true)
		}
	})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background(), cryptopay.Wakeup{Kind: "payment", ID: "p1"}))
	<-entered

	stopped := make(chan bool)
	go func() {
		stop()
		stopped <- exited.Load()
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while the callback was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	assert.True(t, <-stopped, "stop returned before the callback did")
	stop() // a second call is harmless

	// Nothing reaches fn after stop.
	before := calls.Load()
	probe, _ := collect(t, newBus(t, srv.Client(t)))
	require.NoError(t, b.Publish(context.Background(), cryptopay.Wakeup{Kind: "payment", ID: "p2"}))
	require.Eventually(t, func() bool { return len(probe()) == 1 }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, before, calls.Load())
}

func TestWakeupBusResubscribesAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sub := newBus(t, srv.Client(t))
	got, _ := collect(t, sub)
	require.NoError(t, srv.Restart(100*time.Millisecond))

	pub := newBus(t, srv.Client(t))
	w := cryptopay.Wakeup{Kind: "payment", ID: "after-restart"}
	// Hints published before the subscriber is back are lost (best
	// effort); keep publishing until one arrives.
	require.Eventually(t, func() bool {
		_ = pub.Publish(context.Background(), w)
		return len(got()) > 0
	}, 15*time.Second, 50*time.Millisecond, "the subscriber never came back after a Redis restart")
	assert.Equal(t, w, got()[0])
}

func TestWakeupBusErrors(t *testing.T) {
	t.Parallel()
	_, err := redisstore.NewWakeupBus(nil)
	require.Error(t, err)
	srv := redistest.Start(t)
	_, err = redisstore.NewWakeupBus(srv.Client(t), redisstore.WithChannel(""))
	require.Error(t, err)
	_, err = newBus(t, srv.Client(t)).Subscribe(nil)
	require.Error(t, err)

	// Nothing listens on a closed port: Subscribe and Publish report it.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = down.Close() })
	b := newBus(t, down)
	_, err = b.Subscribe(func(cryptopay.Wakeup) {})
	require.Error(t, err)
	require.Error(t, b.Publish(context.Background(), cryptopay.Wakeup{Kind: "payment", ID: "x"}))
}

// Subscribe and stop leave no goroutine behind (go-redis's own readers
// end shortly after the subscription is closed).
func TestWakeupBusNoGoroutineLeak(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	require.NoError(t, rdb.Ping(context.Background()).Err())
	b := newBus(t, rdb)
	base := runtime.NumGoroutine()
	for range 10 {
		stop, err := b.Subscribe(func(cryptopay.Wakeup) {})
		require.NoError(t, err)
		stop()
	}
	// Polled here, not with assert.Eventually, whose own goroutines count.
	for deadline := time.Now().Add(30 * time.Second); runtime.NumGoroutine() > base; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
	}
}
