package pgstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// takeFree holds every slot free at the call, after the one already held.
func TestTakeFree(t *testing.T) {
	for _, tc := range []struct{ capacity, busy, want int }{
		{1, 1, 1}, {4, 1, 4}, {4, 3, 2}, {4, 4, 1}, {8, 2, 7},
	} {
		slots := make(chan struct{}, tc.capacity)
		for range tc.busy { // the caller's own slot and those in flight
			slots <- struct{}{}
		}
		assert.Equal(t, tc.want, takeFree(context.Background(), slots), "%+v", tc)
		assert.Equal(t, tc.capacity, len(slots), "every free slot is taken")
	}
}

// claimLoop steps every item it claims once, frees the slots a short
// claim did not use, and returns ctx's error after the steps in hand.
func TestClaimLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	due := make(chan int, 10)
	for i := range 10 {
		due <- i
	}
	var claims, stepped atomic.Int64
	wake := make(chan struct{})
	claim := func(_ context.Context, n int) []int {
		claims.Add(1)
		var out []int
		for len(out) < n {
			select {
			case i := <-due:
				out = append(out, i)
			default:
				return out
			}
		}
		return out
	}
	step := func(context.Context, int) {
		if stepped.Add(1) == 10 {
			cancel()
		}
	}
	err := claimLoop(ctx, 4, time.Hour, wake, takeFree, claim, step)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(10), stepped.Load(), "each claimed item stepped once")
	assert.Empty(t, due)
	assert.GreaterOrEqual(t, claims.Load(), int64(3), "at most 4 items a claim")
}
