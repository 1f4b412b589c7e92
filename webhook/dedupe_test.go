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
