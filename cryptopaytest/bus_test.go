package cryptopaytest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestMemoryBus(t *testing.T) {
	var _ cryptopay.WakeupBus = (*cryptopaytest.MemoryBus)(nil)
	for _, tc := range []struct {
		name string
		bus  *cryptopaytest.MemoryBus
	}{
		{"NewMemoryBus", cryptopaytest.NewMemoryBus()},
		{"zero value", &cryptopaytest.MemoryBus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b []cryptopay.Wakeup
			stopA, err := tc.bus.Subscribe(func(w cryptopay.Wakeup) { a = append(a, w) })
			require.NoError(t, err)
			stopB, err := tc.bus.Subscribe(func(w cryptopay.Wakeup) { b = append(b, w) })
			require.NoError(t, err)
			w1 := cryptopay.Wakeup{Kind: "payment", ID: "p1", Source: "x"}
			require.NoError(t, tc.bus.Publish(context.Background(), w1))
			stopA()
			stopA() // twice is fine
			w2 := cryptopay.Wakeup{Kind: "payout", ID: "q2"}
			require.NoError(t, tc.bus.Publish(context.Background(), w2))
			stopB()
			require.NoError(t, tc.bus.Publish(context.Background(), w1))
			assert.Equal(t, []cryptopay.Wakeup{w1}, a, "a stopped after the first hint")
			assert.Equal(t, []cryptopay.Wakeup{w1, w2}, b)
		})
	}
}
