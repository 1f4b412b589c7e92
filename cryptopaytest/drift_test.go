package cryptopaytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// listed returns the payout list as the SDK reads it, whole.
func listed(t *testing.T, s *cryptopaytest.Server) []cryptopay.PayoutListItem {
	t.Helper()
	var out []cryptopay.PayoutListItem
	for it, err := range s.Client().AllPayouts(ctx(t), cryptopay.ListPayoutsParams{}) {
		require.NoError(t, err)
		out = append(out, it)
	}
	return out
}

// TestDrifts: each injected drift shows at the API exactly, and moves the
// balance only where it says it does.
func TestDrifts(t *testing.T) {
	s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("1000")))
	c := s.Client()
	po, err := c.CreatePayout(ctx(t), payoutParams("po-drift"))
	require.NoError(t, err)
	before := s.Balance("usdt", "tron")

	dup, err := s.DuplicatePayout(po.ID)
	require.NoError(t, err)
	assert.NotEqual(t, po.ID, dup)
	assert.Equal(t, 2, s.PayoutsWithOrderID("po-drift"))
	items := listed(t, s)
	require.Len(t, items, 2)
	assert.True(t, items[1].CreatedAt.After(items[0].CreatedAt), "the list tells them apart")
	assert.Equal(t, "20.1", before.Sub(s.Balance("usdt", "tron")).String(), "a create's 20 + 0.5 % network fee")

	require.NoError(t, s.SetPayoutAmount(dup, dec("25.5")))
	got, err := c.GetPayout(ctx(t), dup)
	require.NoError(t, err)
	assert.Equal(t, "25.5", got.Amount.String())
	assert.Equal(t, "959.8", s.Balance("usdt", "tron").String(), "the balance is left as it was")
	assert.ErrorIs(t, s.SetPayoutAmount(dup, dec("0")), cryptopaytest.ErrInvalid)

	require.NoError(t, s.LosePayout(dup))
	_, err = c.GetPayout(ctx(t), dup)
	assert.ErrorIs(t, err, cryptopay.ErrNotFound)
	assert.Len(t, listed(t, s), 1)
	assert.ErrorIs(t, s.LosePayout(dup), cryptopaytest.ErrNotFound)

	s.DebitBalance("usdt", "tron", dec("0.25"))
	assert.Equal(t, "959.55", s.Balance("usdt", "tron").String())

	pay, err := c.CreatePayment(ctx(t), cryptopay.CreatePaymentParams{Amount: dec("10"), Currency: "usdt", Network: "tron",
		CustomerID: "c", CustomerIP: "203.0.113.7", OrderID: "pay-drift"})
	require.NoError(t, err)
	require.NoError(t, s.Pay(pay.ID, dec("10")))
	require.NoError(t, s.SetPaidAmount(pay.ID, dec("7")))
	read, err := c.GetPayment(ctx(t), pay.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentPaid, read.Status, "no status change")
	assert.Equal(t, "7", read.PaidAmount.Decimal.String())
	assert.Equal(t, "6.9", read.MerchantAmount.Decimal.String())
	assert.Equal(t, "966.45", s.Balance("usdt", "tron").String(), "the balance follows merchantAmount")
	assert.ErrorIs(t, s.SetPaidAmount(pay.ID, dec("-1")), cryptopaytest.ErrInvalid)
	_, err = s.DuplicatePayout("nope")
	assert.ErrorIs(t, err, cryptopaytest.ErrNotFound)
}

// TestDriftControlAPI: each drift through the control API, as a program
// driving cmd/cryptopay-fakeserver makes it.
func TestDriftControlAPI(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI(), cryptopaytest.WithBalance("usdt", "tron", dec("1000")))
	po, err := s.Client().CreatePayout(ctx(t), payoutParams("po-ctl-drift"))
	require.NoError(t, err)

	r := ctl(t, s, "POST", "/payouts/"+po.ID+"/duplicate", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	dup, _ := r.obj(t)["payoutId"].(string)
	assert.Equal(t, []string{po.ID, dup}, s.PayoutIDsWithOrderID("po-ctl-drift"))

	r = ctl(t, s, "POST", "/payouts/"+dup+"/amount", `{"amount":"20.01"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "20.01", num(t, r.obj(t), "amount").String())
	assert.Equal(t, 400, ctl(t, s, "POST", "/payouts/"+dup+"/amount", `{"amount":"-1"}`).Status)

	assert.Equal(t, 204, ctl(t, s, "POST", "/payouts/"+dup+"/lose", "").Status)
	assert.Equal(t, 404, ctl(t, s, "POST", "/payouts/"+dup+"/lose", "").Status)

	r = ctl(t, s, "POST", "/balances/debit", `{"currency":"usdt","network":"tron","amount":"0.8"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "959", s.Balance("usdt", "tron").String(), "1000 - 2 x 20.1 - 0.8")

	pay, err := s.Client().CreatePayment(ctx(t), cryptopay.CreatePaymentParams{Amount: dec("10"), Currency: "usdt", Network: "tron",
		CustomerID: "c", CustomerIP: "203.0.113.7", OrderID: "pay-ctl-drift"})
	require.NoError(t, err)
	r = ctl(t, s, "POST", "/payments/"+pay.ID+"/paid-amount", `{"amount":"3"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "3", num(t, r.obj(t), "paidAmount").String())
	assert.Equal(t, "waiting", r.obj(t)["status"], "no status change")
}
