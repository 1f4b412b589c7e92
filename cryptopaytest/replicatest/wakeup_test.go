package replicatest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"
)

// The rig itself, on a bus without a server: every wait on A ends by a
// wake-up (it polls once a minute and would otherwise miss the 10 s limit).
func TestWakeupRigOnMemoryBus(t *testing.T) {
	bus := cryptopaytest.NewMemoryBus()
	ds := replicatest.WakeupLatencies(t, func(testing.TB, int) cryptopay.WakeupBus { return bus }, 5)
	assert.Len(t, ds, 5)
	t.Logf("median %v", replicatest.Percentile(ds, 50))
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		p    float64
		want int
	}{
		{nil, 50, 0},
		{[]int{7}, 50, 7},
		{[]int{5, 1, 3}, 50, 3},
		{[]int{4, 1, 3, 2}, 50, 2},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 91, 10}, // rank 9.1: the 10th, the least with 91% at or below it
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1, 1},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 100, 10},
	} {
		var ds []time.Duration
		for _, v := range tc.in {
			ds = append(ds, time.Duration(v))
		}
		assert.Equal(t, time.Duration(tc.want), replicatest.Percentile(ds, tc.p), "%v p%v", tc.in, tc.p)
	}
}

// The median and the slowest of a rig's latencies, nearest rank.
func ExamplePercentile() {
	ds := []time.Duration{40 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 20 * time.Millisecond}
	fmt.Println(replicatest.Percentile(ds, 50), replicatest.Percentile(ds, 100))
	// Output: 20ms 40ms
}
