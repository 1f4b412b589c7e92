package cryptopaytest_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestPaymentIDsWithOrderID(t *testing.T) {
	t.Parallel()
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	// The create answer is lost after the payment was made.
	srv.InjectFault(cryptopaytest.RouteCreatePayment, cryptopaytest.Fault{Process: true, Drop: true})
	params := cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(5), Currency: "usdt", Network: "tron",
		CustomerID: "c", CustomerIP: "203.0.113.7", OrderID: "lost-1"}
	_, err := srv.Client().CreatePayment(context.Background(), params)
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
	ids := srv.PaymentIDsWithOrderID("lost-1")
	require.Len(t, ids, 1)
	st, err := srv.PaymentStatus(ids[0])
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, st)
	assert.Empty(t, srv.PaymentIDsWithOrderID("other"))
}
