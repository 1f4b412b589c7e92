package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// sdkAPI passes the queue's three calls to the SDK: create returns the
// answer's request id beside the payout, get reads it back by id, and
// lookup finds it by orderId (and finds none for another orderId).
func TestSDKAPI(t *testing.T) {
	fake := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1000)))
	t.Cleanup(fake.Close)
	a := sdkAPI{c: fake.Client(), settle: time.Millisecond, skew: cryptopay.DefaultReconcileClockSkew}
	ctx := context.Background()
	attempted := time.Now().Add(-time.Minute)

	p, requestID, err := a.create(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: decimal.RequireFromString("10.25"), Currency: "usdt",
		Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: "sdk-api-1",
	})
	require.NoError(t, err)
	assert.NotEmpty(t, requestID, "the answer's request id")
	assert.Equal(t, 1, fake.Requests(cryptopaytest.RouteCreatePayout))

	got, err := a.get(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.ID)
	assert.Equal(t, "sdk-api-1", got.OrderID)

	tests := []struct {
		orderID string
		want    cryptopay.ReconcileVerdict
	}{
		{"sdk-api-1", cryptopay.PayoutExists},
		{"sdk-api-2", cryptopay.PayoutNotCreated},
	}
	for _, tt := range tests {
		t.Run(tt.orderID, func(t *testing.T) {
			res, err := a.lookup(ctx, tt.orderID, attempted)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Verdict)
			if tt.want == cryptopay.PayoutExists {
				require.NotNil(t, res.Payout)
				assert.Equal(t, tt.orderID, res.Payout.OrderID)
			}
		})
	}
}
