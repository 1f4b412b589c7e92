package cryptopay

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWirePoolHandsOutZeroStructs: a wire struct comes back from the pool
// zeroed, whatever the last response left in it (json leaves an absent
// field as it was).
func TestWirePoolHandsOutZeroStructs(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"payment", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wirePayment) { w.ID, w.PaidAddress = paymentID, "0xfeed"; w.PaidAmount.Valid = true })
		}},
		{"payout", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wirePayout) { w.ID, w.OrderID = "p-1", "order-1" })
		}},
		{"balances", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wireBalances) { *w = append(*w, wireBalance{}) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// checkPoolZeroes takes a struct from a pool of W, checks it is zero,
// dirties it and puts it back, many times: a pool that did not zero what
// it is given back would hand a dirty one out again.
func checkPoolZeroes[W any](t *testing.T, dirty func(*W)) {
	t.Helper()
	var pool wirePool[W]
	var zero W
	for range 100 {
		w := pool.get()
		require.Equal(t, zero, *w, "a struct from the pool is zero")
		dirty(w)
		pool.put(w)
	}
}

// TestNoFieldShowsThroughToTheNextResponse: a field one response carried
// is not in the next call's result when the next response lacks it (the
// pooled wire structs are zeroed between calls).
func TestNoFieldShowsThroughToTheNextResponse(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	var n atomic.Int32
	paid := serveJSON(http.StatusOK, paymentStatus, nil, nil)     // paidAmount, paidAddress
	waiting := serveJSON(http.StatusOK, paymentCreated, nil, nil) // neither
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			paid(w, r)
		} else {
			waiting(w, r)
		}
	})
	ctx := context.Background()
	for range 20 {
		p, err := c.GetPayment(ctx, paymentID)
		require.NoError(t, err)
		require.True(t, p.PaidAmount.Valid)
		require.Equal(t, "0xfeed", p.PaidAddress)

		p, err = c.GetPayment(ctx, paymentID)
		require.NoError(t, err)
		assert.False(t, p.PaidAmount.Valid, "paidAmount of the previous response")
		assert.Empty(t, p.PaidAddress, "paidAddress of the previous response")
		assert.Equal(t, "note", p.AdditionalData)
	}
}
