package pgstore_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// inbox collects the hints a subscriber receives.
type inbox struct {
	mu  sync.Mutex
	got []cryptopay.Wakeup
	ch  chan cryptopay.Wakeup
}

func newInbox() *inbox { return &inbox{ch: make(chan cryptopay.Wakeup, 100)} }

func (b *inbox) fn(w cryptopay.Wakeup) {
	b.mu.Lock()
	b.got = append(b.got, w)
	b.mu.Unlock()
	b.ch <- w
}

// next waits for the next hint.
func (b *inbox) next(t *testing.T) cryptopay.Wakeup {
	t.Helper()
	select {
	case w := <-b.ch:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no hint within 10 s")
	}
	return cryptopay.Wakeup{}
}

func newBus(t *testing.T, pool *pgxpool.Pool, channel string) *pgstore.WakeupBus {
	t.Helper()
	b, err := pgstore.NewWakeupBus(pool, pgstore.WithChannel(channel))
	require.NoError(t, err)
	return b
}

func subscribe(t *testing.T, b *pgstore.WakeupBus) (*inbox, func()) {
	t.Helper()
	in := newInbox()
	stop, err := b.Subscribe(in.fn)
	require.NoError(t, err)
	t.Cleanup(stop)
	return in, stop
}

// A hint published on one replica's bus reaches every subscriber on the
// channel, the publisher's own included, and no other channel.
func TestBusFanOut(t *testing.T) {
	srv := pgtest.Need(t)
	ch := pgtest.Name("wake")
	a, b := newBus(t, srv.Pool(t, 2), ch), newBus(t, srv.Pool(t, 2), ch)
	elsewhere := newBus(t, srv.Pool(t, 2), pgtest.Name("other"))
	inA, _ := subscribe(t, a)
	inB, _ := subscribe(t, b)
	inOther, _ := subscribe(t, elsewhere)

	w := cryptopay.Wakeup{Kind: "payment", ID: "0b6f3c1e-6f5e-4c39-9f0e-5c1d1d1d1d1d", Source: "replica-a"}
	require.NoError(t, a.Publish(context.Background(), w))
	assert.Equal(t, w, inA.next(t))
	assert.Equal(t, w, inB.next(t))
	w2 := cryptopay.Wakeup{Kind: "payout", ID: "po_1"}
	require.NoError(t, b.Publish(context.Background(), w2))
	assert.Equal(t, w2, inA.next(t))
	assert.Equal(t, w2, inB.next(t))
	// The other channel's subscriber saw nothing: a hint sent there now
	// is the first it gets.
	require.NoError(t, elsewhere.Publish(context.Background(), w))
	assert.Equal(t, w, inOther.next(t))
	inOther.mu.Lock()
	assert.Len(t, inOther.got, 1)
	inOther.mu.Unlock()
}

// Payloads that are not hints are skipped, not passed on.
func TestBusSkipsForeignPayloads(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ch := pgtest.Name("wake")
	b := newBus(t, pool, ch)
	in, _ := subscribe(t, b)
	for _, p := range []string{"", "not json", "{}", `{"kind":"payment"}`, `{"kind":"refund","id":"x"}`, `[1,2]`, `{"kind":"payment","id":7}`} {
		_, err := pool.Exec(context.Background(), "SELECT pg_notify($1, $2)", ch, p)
		require.NoError(t, err)
	}
	good := cryptopay.Wakeup{Kind: "payout", ID: "po_2"}
	require.NoError(t, b.Publish(context.Background(), good))
	assert.Equal(t, good, in.next(t), "the first hint passed on is the valid one")
}

func TestBusPublishErrors(t *testing.T) {
	srv := pgtest.Need(t)
	b := newBus(t, srv.Pool(t, 1), pgtest.Name("wake"))
	err := b.Publish(context.Background(), cryptopay.Wakeup{Kind: "payout", ID: strings.Repeat("x", 8000)})
	assert.ErrorContains(t, err, "NOTIFY limit")
	_, err = b.Subscribe(nil)
	assert.ErrorIs(t, err, pgstore.ErrInvalidOption)

	// A database that cannot be reached: Publish and Subscribe fail.
	cfg, err := pgxpool.ParseConfig("host=127.0.0.1 port=1 user=postgres sslmode=disable connect_timeout=2")
	require.NoError(t, err)
	dead, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer dead.Close()
	db, err := pgstore.NewWakeupBus(dead)
	require.NoError(t, err)
	assert.Error(t, db.Publish(context.Background(), cryptopay.Wakeup{Kind: "payout", ID: "x"}))
	_, err = db.Subscribe(func(cryptopay.Wakeup) {})
	assert.Error(t, err)
}

func TestBusOptions(t *testing.T) {
	pool := pgtest.Need(t).Pool(t, 1)
	for _, ch := range []string{"", "Upper", "a-b", "1a", `x"y`, strings.Repeat("a", 64)} {
		_, err := pgstore.NewWakeupBus(pool, pgstore.WithChannel(ch))
		assert.ErrorIs(t, err, pgstore.ErrInvalidOption, "channel %q", ch)
	}
	_, err := pgstore.NewWakeupBus(pool, nil)
	assert.ErrorIs(t, err, pgstore.ErrInvalidOption)
	_, err = pgstore.NewWakeupBus(nil)
	assert.ErrorIs(t, err, pgstore.ErrInvalidOption)
	b, err := pgstore.NewWakeupBus(pool)
	require.NoError(t, err)
	assert.Equal(t, pgstore.DefaultChannel, b.Channel())
}

// stop waits for a running fn, closes the listening connection, leaves no
// goroutine behind, and may be called twice.
func TestBusStop(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ch := pgtest.Name("wake")
	b := newBus(t, pool, ch)
	listeners := func() int {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE query = $1", `LISTEN "`+ch+`"`).Scan(&n))
		return n
	}
	require.Zero(t, listeners()) // also warms the pool up
	before := runtime.NumGoroutine()
	entered, release := make(chan struct{}), make(chan struct{})
	var returned sync.WaitGroup
	returned.Add(1)
	stop, err := b.Subscribe(func(cryptopay.Wakeup) {
		close(entered)
		<-release
		returned.Done()
	})
	require.NoError(t, err)
	assert.Equal(t, 1, listeners(), "one dedicated listening connection")
	require.NoError(t, b.Publish(context.Background(), cryptopay.Wakeup{Kind: "payout", ID: "po_3"}))
	<-entered

	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while fn was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	returned.Wait()
	stop() // twice is fine
	assert.Eventually(t, func() bool { return listeners() == 0 }, 30*time.Second, 10*time.Millisecond, "the listening connection is closed")
	// Count by hand: assert.Eventually runs its condition on a goroutine
	// of its own.
	now := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); now > before && time.Now().Before(deadline); now = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if now > before {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after:\n%s", before, now, buf[:runtime.Stack(buf, true)])
	}
}

// The listener survives its connection being killed and the server being
// restarted: it reconnects, listens again, and hints flow again.
func TestBusReconnects(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ch := pgtest.Name("wake")
	b := newBus(t, pool, ch)
	in, _ := subscribe(t, b)
	ctx := context.Background()

	// until publishes w until it arrives: hints sent while the listener
	// reconnects are lost, by design.
	until := func(w cryptopay.Wakeup) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			_ = b.Publish(ctx, w)
			select {
			case got := <-in.ch:
				if got == w {
					return
				}
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatalf("hint %v never arrived", w)
	}

	until(cryptopay.Wakeup{Kind: "payout", ID: "before"})
	_, err := pool.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", `LISTEN "`+ch+`"`)
	require.NoError(t, err)
	until(cryptopay.Wakeup{Kind: "payout", ID: "after-kill"})

	require.NoError(t, srv.Restart())
	until(cryptopay.Wakeup{Kind: "payout", ID: "after-restart"})
}
