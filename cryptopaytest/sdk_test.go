package cryptopaytest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func paymentParams() cryptopay.CreatePaymentParams {
	return cryptopay.CreatePaymentParams{
		Amount:            dec("10"),
		PlatformFeeByUser: true,
		Currency:          "usdt",
		Network:           "tron",
		CustomerID:        "cust-1",
		CustomerIP:        "203.0.113.7",
		OrderID:           "order-1",
		AdditionalData:    "note",
		WebhookURL:        "http://127.0.0.1:9/hook",
	}
}

func payoutParams(orderID string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{
		WalletAddress:    "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G",
		NetworkFeeByUser: false,
		Amount:           dec("20"),
		Currency:         "usdt",
		Network:          "tron",
		CustomerID:       "cust-1",
		CustomerIP:       "203.0.113.7",
		OrderID:          orderID,
		AdditionalData:   "po note",
	}
}

// TestSDKPayment drives a payment through the SDK and checks every field
// against what the server holds, so a wrong JSON tag on either side fails.
func TestSDKPayment(t *testing.T) {
	s := newServer(t, cryptopaytest.WithWebhookRetry(1, 0))
	c := s.Client()
	p, err := c.CreatePayment(ctx(t), paymentParams())
	require.NoError(t, err)
	raw := call(t, s, "GET", "/v1/payment/"+p.ID+"/status", "").obj(t)

	assert.Equal(t, raw["paymentId"], p.ID)
	assert.Equal(t, cryptopay.PaymentWaiting, p.Status)
	assert.True(t, p.PayAmount.Equal(dec("10.1")))
	assert.Equal(t, raw["payAddress"], p.PayAddress)
	assert.Equal(t, raw["payQrCodeUri"], p.PayQRCodeURI)
	assert.Equal(t, "usdt", p.Currency)
	assert.Equal(t, "tron", p.Network)
	assert.Equal(t, "cust-1", p.CustomerID)
	assert.Equal(t, "203.0.113.7", p.CustomerIP)
	assert.Equal(t, "order-1", p.OrderID)
	assert.Equal(t, "note", p.AdditionalData)
	assert.True(t, p.PlatformFeeByUser)
	assert.Equal(t, "http://127.0.0.1:9/hook", p.WebhookURL)
	assert.False(t, p.CreatedAt.IsZero())
	assert.Equal(t, s.Now().Truncate(time.Hour), p.CreatedAt.Truncate(time.Hour))
	assert.Equal(t, cryptopaytest.DefaultPaymentTTL, p.ExpiredAt.Sub(p.CreatedAt))
	assert.False(t, p.PaidAmount.Valid, "creation response has no paidAmount")

	got, err := c.GetPayment(ctx(t), p.ID)
	require.NoError(t, err)
	assert.True(t, got.PaidAmount.Valid && got.PaidAmount.Decimal.IsZero(), "0 before payment")
	assert.True(t, got.MerchantAmount.Valid && got.MerchantAmount.Decimal.IsZero())

	require.NoError(t, s.Pay(p.ID, dec("5")))
	got, err = c.GetPayment(ctx(t), p.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentPaidPartial, got.Status)
	require.True(t, got.PaidAmount.Valid)
	assert.True(t, got.PaidAmount.Decimal.Equal(dec("5")))
	assert.True(t, got.MerchantAmount.Decimal.Equal(dec("4.9")), "5 paid minus the 0.1 fee")
	raw = call(t, s, "GET", "/v1/payment/"+p.ID+"/status", "").obj(t)
	assert.Equal(t, raw["paidAddress"], got.PaidAddress)
	assert.NotEqual(t, got.PayAddress, got.PaidAddress)
	assert.True(t, got.UpdatedAt.After(got.CreatedAt) || got.UpdatedAt.Equal(got.CreatedAt))
}

func TestSDKPayout(t *testing.T) {
	s := newServer(t)
	c := s.Client()
	p, err := c.CreatePayout(ctx(t), payoutParams("po-sdk"))
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutCreated, p.Status)
	assert.True(t, p.Amount.Equal(dec("20")))
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", p.WalletAddress)
	assert.False(t, p.NetworkFeeByUser)
	assert.Equal(t, "usdt", p.Currency)
	assert.Equal(t, "tron", p.Network)
	assert.Equal(t, "cust-1", p.CustomerID)
	assert.Equal(t, "203.0.113.7", p.CustomerIP)
	assert.Equal(t, "po-sdk", p.OrderID)
	assert.Equal(t, "po note", p.AdditionalData)
	assert.False(t, p.CreatedAt.IsZero())
	assert.False(t, p.PaidAmount.Valid)
	assert.True(t, s.Balance("usdt", "tron").Equal(dec("979.9")), "20 + 0.5%% network fee borne by the merchant")

	for _, st := range []cryptopay.PayoutStatus{cryptopay.PayoutReview, cryptopay.PayoutProcessing, cryptopay.PayoutConfirming, cryptopay.PayoutPaid} {
		require.NoError(t, s.SetPayoutStatus(p.ID, st))
		got, err := c.GetPayout(ctx(t), p.ID)
		require.NoError(t, err)
		assert.Equal(t, st, got.Status)
	}
	got, err := c.GetPayout(ctx(t), p.ID)
	require.NoError(t, err)
	require.True(t, got.PaidAmount.Valid)
	assert.True(t, got.PaidAmount.Decimal.Equal(dec("20")))
	assert.True(t, got.MerchantAmount.Decimal.Equal(dec("20.1")))
}

func TestSDKListAndFind(t *testing.T) {
	s := newServer(t)
	c := s.Client()
	for i := range 7 {
		_, err := c.CreatePayout(ctx(t), payoutParams(fmt.Sprintf("po-%d", i)))
		require.NoError(t, err)
	}
	page, err := c.ListPayouts(ctx(t), cryptopay.ListPayoutsParams{Limit: 3, Offset: 2})
	require.NoError(t, err)
	assert.Equal(t, 7, page.Count)
	require.Len(t, page.Payouts, 3)
	it := page.Payouts[0]
	assert.Equal(t, "po-2", it.OrderID)
	assert.Equal(t, cryptopay.PayoutCreated, it.Status)
	assert.True(t, it.Amount.Equal(dec("20")))
	assert.Equal(t, "usdt", it.Currency)
	assert.Equal(t, "tron", it.Network)
	assert.Equal(t, "cust-1", it.CustomerID)
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", it.WalletAddress)
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", it.PaidAddress)
	assert.Equal(t, "customer cust-1", it.WalletLabel)
	assert.False(t, it.CreatedAt.IsZero())
	assert.True(t, it.MerchantAmount.Valid && it.MerchantAmount.Decimal.IsZero(), "0 before the payout is paid")

	var all []string
	for it, err := range c.AllPayouts(ctx(t), cryptopay.ListPayoutsParams{Limit: 2}) {
		require.NoError(t, err)
		all = append(all, it.OrderID)
	}
	assert.Equal(t, []string{"po-0", "po-1", "po-2", "po-3", "po-4", "po-5", "po-6"}, all)

	item, found, err := findPayout(c, ctx(t), "po-5")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "po-5", item.OrderID)
	_, found, err = findPayout(c, ctx(t), "po-none")
	require.NoError(t, err)
	assert.False(t, found)
}

func TestSDKBalancesAndCurrencies(t *testing.T) {
	s := newServer(t, cryptopaytest.WithBalance("btc", "bitcoin", dec("0.12345678")))
	c := s.Client()
	bal, err := c.GetBalances(ctx(t))
	require.NoError(t, err)
	require.Len(t, bal, len(cryptopaytest.DefaultCurrencies()))
	assert.Equal(t, "btc", bal[0].Currency)
	assert.Equal(t, "bitcoin", bal[0].Network)
	assert.True(t, bal[0].Amount.Equal(dec("0.12345678")))

	cur, err := c.ListCurrencies(ctx(t))
	require.NoError(t, err)
	require.Len(t, cur, len(cryptopaytest.DefaultCurrencies()))
	for i, want := range cryptopaytest.DefaultCurrencies() {
		assert.Equal(t, want.Currency, cur[i].Currency)
		assert.Equal(t, want.Network, cur[i].Network)
	}
}

func TestSDKErrors(t *testing.T) {
	s := newServer(t)
	c := s.Client()
	_, err := c.GetPayment(ctx(t), uuid.NewString())
	assert.ErrorIs(t, err, cryptopay.ErrNotFound)
	var apiErr *cryptopay.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "not_found", apiErr.Code)
	assert.NotEmpty(t, apiErr.RequestID, "X-Request-Id reaches the error")

	_, err = c.GetPayout(ctx(t), "nope")
	assert.ErrorIs(t, err, cryptopay.ErrNotFound)

	bad, err := cryptopay.NewClient(s.URL, "wrong-key")
	require.NoError(t, err)
	_, err = bad.GetBalances(ctx(t))
	assert.ErrorIs(t, err, cryptopay.ErrUnauthorized)

	params := paymentParams()
	params.Network = "bitcoin"
	_, err = c.CreatePayment(ctx(t), params)
	assert.ErrorIs(t, err, cryptopay.ErrInvalidRequest)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "unsupported_currency", apiErr.Code)

	pp := payoutParams("po-big")
	pp.Amount = dec("5000")
	_, err = c.CreatePayout(ctx(t), pp)
	assert.ErrorIs(t, err, cryptopay.ErrInvalidRequest)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "insufficient_funds", apiErr.Code)
	assert.Equal(t, 0, s.PayoutCount())
}

func TestClientOptionsOverride(t *testing.T) {
	s := newServer(t)
	c := s.Client(cryptopay.WithHeader("User-Agent", "shop/1.0"), cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	_, err := c.ListCurrencies(ctx(t))
	require.NoError(t, err)
	assert.Panics(t, func() { s.Client(cryptopay.WithTimeout(-1)) })
}
