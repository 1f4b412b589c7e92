package cryptopaytest_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestFakeAddressesPassTheChecks: every default pair's pay address and
// paid-from address pass the SDK's address check for its network, and
// the checked networks among them are all the fake serves.
func TestFakeAddressesPassTheChecks(t *testing.T) {
	srv := newServer(t)
	c := srv.Client()
	var checker address.Checker
	checked := 0
	for i, pair := range cryptopaytest.DefaultCurrencies() {
		p, err := c.CreatePayment(t.Context(), cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(1), Currency: pair.Currency,
			Network: pair.Network, CustomerID: "c", CustomerIP: "192.0.2.1", OrderID: "addr-" + string(rune('a'+i))})
		require.NoError(t, err)
		require.NoError(t, srv.Pay(p.ID, p.PayAmount))
		got, err := c.GetPayment(t.Context(), p.ID)
		require.NoError(t, err)
		for _, a := range []string{p.PayAddress, got.PaidAddress} {
			require.NotEmpty(t, a)
			assert.NoError(t, checker.Check(pair.Network, a), "%s/%s %s", pair.Currency, pair.Network, a)
		}
		assert.NotEqual(t, p.PayAddress, got.PaidAddress)
		if checker.Checks(pair.Network) {
			checked++
		}
	}
	assert.Equal(t, len(cryptopaytest.DefaultCurrencies()), checked, "every default network is checked")

	// Seeded payouts' list items carry a valid paidAddress too.
	require.NoError(t, srv.SeedPayouts(3, "seed-", time.Second))
	page, err := c.ListPayouts(t.Context(), cryptopay.ListPayoutsParams{Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, page.Payouts)
	for _, it := range page.Payouts {
		assert.NoError(t, checker.Check("tron", it.PaidAddress), it.PaidAddress)
	}
}
