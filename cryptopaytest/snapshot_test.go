package cryptopaytest_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestSnapshots(t *testing.T) {
	srv := newServer(t, cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"}),
		cryptopaytest.WithBalance("usdt", "tron", decimal.RequireFromString("100")))
	client := srv.Client()
	ctx := context.Background()

	p1, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString("0.1"), PlatformFeeByUser: true,
		Currency: "usdt", Network: "tron", CustomerID: "c1", CustomerIP: "192.0.2.1", OrderID: "order-1"})
	require.NoError(t, err)
	p2, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString("5"),
		Currency: "usdt", Network: "tron", CustomerID: "c2", CustomerIP: "192.0.2.1", OrderID: "order-2"})
	require.NoError(t, err)
	require.NoError(t, srv.Pay(p2.ID, decimal.RequireFromString("2")))
	po, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{WalletAddress: "TL6Kos1JVqMZbwjHdJwwHsvKbUfuuL5zig", Amount: decimal.RequireFromString("10"),
		Currency: "usdt", Network: "tron", CustomerID: "c3", CustomerIP: "192.0.2.1", OrderID: "order-3"})
	require.NoError(t, err)

	pays := srv.Payments()
	require.Len(t, pays, 2)
	byID := map[string]cryptopaytest.PaymentSnapshot{pays[0].ID: pays[0], pays[1].ID: pays[1]}
	first := byID[p1.ID]
	assert.Equal(t, "0.101", first.PayAmount.String(), "exact decimal with the 1% fee")
	assert.Equal(t, p1.PayQRCodeURI, first.PayQRCodeURI)
	assert.False(t, first.PaidAmount.Valid, "not paid yet")
	second := byID[p2.ID]
	assert.Equal(t, cryptopay.PaymentPaidPartial, second.Status)
	assert.Equal(t, "2", second.PaidAmount.Decimal.String())
	assert.True(t, second.MerchantAmount.Valid)
	assert.False(t, pays[1].CreatedAt.Before(pays[0].CreatedAt), "oldest first")

	one, err := srv.Payment(p1.ID)
	require.NoError(t, err)
	assert.Equal(t, first, one)
	_, err = srv.Payment("00000000-0000-0000-0000-000000000000")
	assert.ErrorIs(t, err, cryptopaytest.ErrNotFound)

	outs := srv.Payouts()
	require.Len(t, outs, 1)
	assert.Equal(t, po.ID, outs[0].ID)
	assert.Equal(t, cryptopay.PayoutCreated, outs[0].Status)
	assert.False(t, outs[0].PaidAmount.Valid)
	require.NoError(t, srv.SetPayoutStatus(po.ID, cryptopay.PayoutProcessing))
	require.NoError(t, srv.SetPayoutStatus(po.ID, cryptopay.PayoutPaid))
	outs = srv.Payouts()
	assert.Equal(t, "10", outs[0].PaidAmount.Decimal.String(), "the merchant bears the network fee by default")
	assert.Equal(t, "10.05", outs[0].MerchantAmount.Decimal.String())

	bal := srv.Balances()
	require.Len(t, bal, 1)
	assert.Equal(t, "usdt", bal[0].Currency)
	assert.True(t, bal[0].Amount.Equal(srv.Balance("usdt", "tron")))

	outs[0].Status = cryptopay.PayoutFailed
	st, err := srv.PayoutStatus(po.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutPaid, st, "a snapshot is a copy")
}
