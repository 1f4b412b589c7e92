package webhook

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryDedupeStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewMemoryDedupeStore(3, time.Hour)
	s.now = func() time.Time { return now }

	claim := func(k string) DedupeClaim {
		c, err := s.Claim(ctx, k)
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, DedupeClaimed, claim("a"))
	assert.Equal(t, DedupeInProgress, claim("a"))
	require.NoError(t, s.Release(ctx, "a"))
	assert.Equal(t, DedupeClaimed, claim("a"), "released: claimable again")
	require.NoError(t, s.Complete(ctx, "a"))
	assert.Equal(t, DedupeSeen, claim("a"))
	assert.Equal(t, 1, s.Len())

	for _, k := range []string{"b", "c", "d"} {
		assert.Equal(t, DedupeClaimed, claim(k))
		require.NoError(t, s.Complete(ctx, k))
	}
	assert.Equal(t, 3, s.Len(), "bounded")
	assert.Equal(t, DedupeClaimed, claim("a"), "the oldest was evicted")
	require.NoError(t, s.Release(ctx, "a"))

	now = now.Add(59 * time.Minute)
	assert.Equal(t, DedupeSeen, claim("d"))
	now = now.Add(time.Minute)
	assert.Equal(t, 0, s.Len(), "expired after the TTL")
	assert.Equal(t, DedupeClaimed, claim("d"))

	d := NewMemoryDedupeStore(0, 0)
	assert.Equal(t, DefaultDedupeEntries, d.max)
	assert.Equal(t, DefaultDedupeTTL, d.ttl)
}

// TestMemoryDedupeStoreFields: the zero value is ready with the defaults,
// the fields size the store, and they are read once, at the first use.
func TestMemoryDedupeStoreFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		store    *MemoryDedupeStore
		wantMax  int
		wantTTL  time.Duration
		evicts   bool // a third completed key evicts the first
		expireAt time.Duration
	}{
		{"zero value", &MemoryDedupeStore{}, DefaultDedupeEntries, DefaultDedupeTTL, false, DefaultDedupeTTL},
		{"negative fields", &MemoryDedupeStore{MaxEntries: -1, TTL: -time.Second}, DefaultDedupeEntries, DefaultDedupeTTL, false, DefaultDedupeTTL},
		{"sized", &MemoryDedupeStore{MaxEntries: 2, TTL: time.Hour}, 2, time.Hour, true, time.Hour},
		{"deprecated constructor", NewMemoryDedupeStore(2, time.Minute), 2, time.Minute, true, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := tt.store
			s.now = func() time.Time { return now }
			for _, k := range []string{"a", "b", "c"} {
				c, err := s.Claim(ctx, k)
				require.NoError(t, err)
				require.Equal(t, DedupeClaimed, c, k)
				require.NoError(t, s.Complete(ctx, k))
			}
			s.MaxEntries, s.TTL = 1, time.Nanosecond // read once: ignored now
			assert.Equal(t, tt.wantMax, s.max)
			assert.Equal(t, tt.wantTTL, s.ttl)
			c, err := s.Claim(ctx, "a")
			require.NoError(t, err)
			if tt.evicts {
				assert.Equal(t, DedupeClaimed, c, "the oldest key was evicted")
				require.NoError(t, s.Release(ctx, "a"))
			} else {
				assert.Equal(t, DedupeSeen, c)
			}
			now = now.Add(tt.expireAt - time.Nanosecond)
			c, err = s.Claim(ctx, "c")
			require.NoError(t, err)
			assert.Equal(t, DedupeSeen, c, "remembered until the TTL")
			now = now.Add(time.Nanosecond)
			assert.Equal(t, 0, s.Len(), "forgotten at the TTL")
		})
	}
}

func TestMemoryDedupeStoreRecompleteAndResize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewMemoryDedupeStore(3, time.Hour)
	s.now = func() time.Time { return now }
	for _, k := range []string{"a", "b", "a"} { // a completed again: its first entry is dead
		require.NoError(t, s.Complete(ctx, k))
		now = now.Add(time.Minute)
	}
	assert.Equal(t, 2, s.Len())
	require.NoError(t, s.Complete(ctx, "c"))
	require.NoError(t, s.Complete(ctx, "d"))
	assert.Equal(t, 3, s.Len(), "b went first: a's newer completion keeps it")
	c, err := s.Claim(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, DedupeSeen, c)
	c, err = s.Claim(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, DedupeClaimed, c)

	// A burst grows the ring; once it expires, the ring shrinks back.
	big := NewMemoryDedupeStore(10_000, time.Hour)
	big.now = func() time.Time { return now }
	for i := range 10_000 {
		require.NoError(t, big.Complete(ctx, fmt.Sprint("k", i)))
	}
	grown := len(big.ring)
	now = now.Add(2 * time.Hour)
	assert.Zero(t, big.Len())
	assert.Less(t, len(big.ring), grown/4)
	require.NoError(t, big.Complete(ctx, "again"))
	c, err = big.Claim(ctx, "again")
	require.NoError(t, err)
	assert.Equal(t, DedupeSeen, c)
}

// TestMemoryDedupeStoreSize measures the heap a store of 100,000 completed
// keys takes, filled once and after churn (three times as many keys through
// a store bounded at 100,000). The doc comment of MemoryDedupeStore quotes
// these figures; the target is at most 150 bytes per key.
func TestMemoryDedupeStoreSize(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 300,000 keys")
	}
	if raceDetector {
		t.Skip("a heap measurement: CI runs it without -race")
	}
	const n = 100_000
	ctx := context.Background()
	keys := make([]string, 3*n)
	for i := range keys {
		keys[i] = fmt.Sprintf("payment/%08x-0000-4000-8000-%012x/paid", i, i)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		// Twice: the first collection only moves what sync.Pools hold (an
		// earlier test's connection buffers) to their victim caches.
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	s := NewMemoryDedupeStore(n, time.Hour)
	for _, k := range keys[:n] {
		_, _ = s.Claim(ctx, k)
		require.NoError(t, s.Complete(ctx, k))
	}
	filled := float64(heap()-before) / n
	for _, k := range keys[n:] {
		_, _ = s.Claim(ctx, k)
		require.NoError(t, s.Complete(ctx, k))
	}
	churned := float64(heap()-before) / n
	require.Equal(t, n, s.Len())
	t.Logf("bytes per key: %.0f filled, %.0f after churn", filled, churned)
	assert.LessOrEqual(t, filled, 150.0)
	assert.LessOrEqual(t, churned, 150.0)
	runtime.KeepAlive(keys)
}
