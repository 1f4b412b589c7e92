package redisstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest"
	"github.com/cryptopay/cryptopay-go/redisstore"
	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

func newStore(t testing.TB, rdb redis.UniversalClient, opts ...redisstore.Option) *redisstore.DedupeStore {
	t.Helper()
	s, err := redisstore.NewDedupeStore(rdb, opts...)
	require.NoError(t, err)
	return s
}

func TestDedupeStoreConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	// The done TTL leaves ManyKeysConcurrently (hundreds of keys checked
	// after all are settled) time on a loaded machine.
	const lease, ttl = 300 * time.Millisecond, 3 * time.Second
	dedupetest.Run(t, func(t *testing.T) webhook.DedupeStore {
		return newStore(t, rdb, redisstore.WithLease(lease), redisstore.WithDoneTTL(ttl))
	}, dedupetest.Lease(lease), dedupetest.DoneTTL(ttl))
}

func TestNewDedupeStoreOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	for name, tc := range map[string]struct {
		rdb  redis.UniversalClient
		opts []redisstore.Option
		ok   bool
	}{
		"defaults":       {rdb: rdb, ok: true},
		"nil client":     {rdb: nil},
		"short lease":    {rdb: rdb, opts: []redisstore.Option{redisstore.WithLease(time.Millisecond)}},
		"short done TTL": {rdb: rdb, opts: []redisstore.Option{redisstore.WithDoneTTL(0)}},
		"empty prefix":   {rdb: rdb, opts: []redisstore.Option{redisstore.WithKeyPrefix("")}},
		"all set": {rdb: rdb, ok: true, opts: []redisstore.Option{
			redisstore.WithLease(time.Second), redisstore.WithDoneTTL(time.Hour), redisstore.WithKeyPrefix("svc:"), nil}},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := redisstore.NewDedupeStore(tc.rdb, tc.opts...)
			if !tc.ok {
				require.Error(t, err)
				assert.Nil(t, s)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, s)
		})
	}
	s, err := redisstore.NewDedupeStore(rdb)
	require.NoError(t, err)
	assert.Equal(t, redisstore.DefaultLease, s.Lease())
}

// What the store writes: one key under the prefix, with the lease as its
// expiry while claimed and the done TTL once completed; nothing once
// released.
func TestDedupeStoreKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := newStore(t, rdb, redisstore.WithKeyPrefix("svc-a:"), redisstore.WithLease(30*time.Second), redisstore.WithDoneTTL(48*time.Hour))
	const key = "payment/6f1c2b9e-4a2d-4c8e-9a57-2f1d3e4b5c6d/paid"

	claimed, err := s.Claim(ctx, key)
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claimed)
	v, err := rdb.Get(ctx, "svc-a:"+key).Result()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(v, "lease:"), "a claim stores its token, got %q", v)
	ttl := rdb.PTTL(ctx, "svc-a:"+key).Val()
	assert.True(t, ttl > 25*time.Second && ttl <= 30*time.Second, "claim expiry %v", ttl)

	require.NoError(t, s.Complete(ctx, key))
	assert.Equal(t, "done", rdb.Get(ctx, "svc-a:"+key).Val())
	ttl = rdb.PTTL(ctx, "svc-a:"+key).Val()
	assert.True(t, ttl > 47*time.Hour && ttl <= 48*time.Hour, "done expiry %v", ttl)

	// Another prefix is another namespace.
	other := newStore(t, rdb, redisstore.WithKeyPrefix("svc-b:"))
	claimed, err = other.Claim(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, webhook.DedupeClaimed, claimed)
	require.NoError(t, other.Release(ctx, key))
	assert.Zero(t, rdb.Exists(ctx, "svc-b:"+key).Val(), "Release deletes the claim")
}

func TestDedupeStoreLostLeaseErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, b := newStore(t, rdb, redisstore.WithLease(time.Minute)), newStore(t, rdb)
	const key = "payout/po_1/paid"
	claimed, err := a.Claim(ctx, key)
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claimed)

	// Another replica took the key over (as after a lease expiry).
	require.NoError(t, rdb.Set(ctx, redisstore.DefaultKeyPrefix+key, "lease:someone-else", time.Minute).Err())
	require.ErrorIs(t, a.Release(ctx, key), webhook.ErrDedupeLeaseLost)
	assert.Equal(t, "lease:someone-else", rdb.Get(ctx, redisstore.DefaultKeyPrefix+key).Val())

	claimed, err = a.Claim(ctx, "payout/po_2/paid")
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claimed)
	require.NoError(t, rdb.Set(ctx, redisstore.DefaultKeyPrefix+"payout/po_2/paid", "lease:someone-else", time.Minute).Err())
	err = a.Complete(ctx, "payout/po_2/paid")
	require.ErrorIs(t, err, webhook.ErrDedupeLeaseLost)
	assert.Contains(t, err.Error(), "payout/po_2/paid")

	require.ErrorIs(t, b.Complete(ctx, "payout/never/paid"), webhook.ErrDedupeLeaseLost, "never claimed here")
	require.NoError(t, b.Release(ctx, "payout/never/paid"), "releasing what was never claimed is a no-op")
}

// Complete keeps trying while Redis is down, so a restart between the
// callback and the done mark does not let the event run twice.
func TestDedupeStoreCompleteSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.FailFastClient(t)
	var failures failedCommands
	rdb.AddHook(&failures)
	s := newStore(t, rdb)
	ctx := context.Background()
	const key = "payment/6f1c2b9e-4a2d-4c8e-9a57-2f1d3e4b5c6d/paid"
	claimed, err := s.Claim(ctx, key)
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claimed)

	// Redis stays down until the test has seen what it wants (not for a
	// fixed time, which a slow machine could let pass unseen).
	require.NoError(t, srv.Shutdown())
	// A Claim now fails (the handler answers 503)...
	_, err = s.Claim(ctx, "payment/other/paid")
	require.Error(t, err)
	// ...and Complete keeps trying: two of its commands fail, and it has
	// not given up.
	before := failures.n.Load()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	completed := make(chan error, 1)
	go func() { completed <- s.Complete(cctx, key) }()
	require.Eventually(t, func() bool { return failures.n.Load() >= before+2 }, 30*time.Second, time.Millisecond)
	select {
	case err := <-completed:
		t.Fatalf("Complete returned while Redis was down: %v", err)
	default:
	}
	require.NoError(t, srv.Resume())
	require.NoError(t, <-completed)
	claimed, err = newStore(t, srv.Client(t)).Claim(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, webhook.DedupeSeen, claimed)

	// With its context over, Complete gives up and says why.
	claimed, err = s.Claim(ctx, "payment/third/paid")
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claimed)
	srv.Stop()
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	err = s.Complete(short, "payment/third/paid")
	require.Error(t, err)
	assert.NotErrorIs(t, err, webhook.ErrDedupeLeaseLost)
}

// A Complete or Release that fails because its ctx ended keeps the claim,
// so the handler can settle it again with a fresh ctx; dropping the token
// there left the key busy until its lease ran out, and the sender's retry
// then ran the callback a second time.
func TestDedupeStoreSettleAgainAfterCancelledCtx(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := newStore(t, rdb, redisstore.WithLease(time.Minute))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, op := range []struct {
		name   string
		settle func(context.Context, string) error
		want   string // value left under the key; "" = deleted
	}{
		{"complete", s.Complete, "done"},
		{"release", s.Release, ""},
	} {
		key := "payout/p-" + op.name + "/paid"
		claimed, err := s.Claim(ctx, key)
		require.NoError(t, err)
		require.Equal(t, webhook.DedupeClaimed, claimed)
		require.Error(t, op.settle(cancelled, key), op.name)
		require.NoError(t, op.settle(ctx, key), op.name)
		assert.Equal(t, op.want, rdb.Get(ctx, "cryptopay:dedupe:"+key).Val(), op.name)
	}
}

// failedCommands counts the commands of a client that failed.
type failedCommands struct{ n atomic.Int64 }

func (h *failedCommands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failedCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && err != redis.Nil {
			h.n.Add(1)
		}
		return err
	}
}

func (h *failedCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
