package cryptopay

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequiredAmounts: a 2xx whose required amount is missing, null, ""
// or negative is an unexpected response (for a create, also an unknown
// outcome); the optional paidAmount and merchantAmount stay optional.
func TestRequiredAmounts(t *testing.T) {
	const id = "3f1c2b8a-6d4e-4f7a-9b2c-1e5d8a7f6c30"
	bad := map[string]string{"missing": "", "null": "null", "empty": `""`, "negative": `"-0.5"`}
	for name, value := range bad {
		t.Run(name, func(t *testing.T) {
			member := func(field string) string { // the member, with its comma
				if value == "" {
					return ""
				}
				return `"` + field + `": ` + value + ","
			}
			c, mux := setup(t)
			payment := strings.Replace(paymentStatus, `"payAmount": "101.505",`, member("payAmount"), 1)
			payout := strings.Replace(payoutBody, `"amount": 0.00000001,`, member("amount"), 1)
			balance := `[{` + member("amount") + `"currency":"usdt","network":"tron"}]`
			require.NotEqual(t, paymentStatus, payment)
			require.NotEqual(t, payoutBody, payout)
			mux.HandleFunc("GET /v1/payment/{id}/status", serveJSON(200, payment, nil, nil))
			mux.HandleFunc("POST /v1/payment", serveJSON(200, payment, nil, nil))
			mux.HandleFunc("POST /v1/payout", serveJSON(200, payout, nil, nil))
			mux.HandleFunc("GET /v1/balance", serveJSON(200, balance, nil, nil))

			_, err := c.GetPayment(context.Background(), id)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			_, err = c.CreatePayment(context.Background(), validPaymentParams())
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			_, err = c.CreatePayout(context.Background(), validPayoutParams())
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			_, err = c.GetBalances(context.Background())
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
		})
	}
	t.Run("optional amounts absent", func(t *testing.T) {
		c, mux := setup(t)
		mux.HandleFunc("POST /v1/payment", serveJSON(200, paymentCreated, nil, nil))
		p, err := c.CreatePayment(context.Background(), validPaymentParams())
		require.NoError(t, err)
		assert.False(t, p.PaidAmount.Valid)
	})
}

// TestRequestAmountBounded: an amount whose plain text would pass 128
// characters is refused before anything is sent, for both creates.
func TestRequestAmountBounded(t *testing.T) {
	huge := decimal.RequireFromString(strings.Repeat("9", 129))
	tests := []struct {
		name   string
		amount decimal.Decimal
		ok     bool
	}{
		{"exponent -5e7", decimal.New(1, -50_000_000), false},
		{"exponent +5e7", decimal.New(1, 50_000_000), false},
		{"exponent -129", decimal.New(1, -129), false},
		{"129 digits", huge, false},
		{"1e-6", decimal.New(1, -6), true},
		{"100 digits", decimal.RequireFromString(strings.Repeat("9", 100)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp, po := validPaymentParams(), validPayoutParams()
			pp.Amount, po.Amount = tt.amount, tt.amount
			hits, err1, err2 := createBoth(t, pp, po)
			if tt.ok {
				assert.NoError(t, err1)
				assert.NoError(t, err2)
				assert.Equal(t, int32(2), hits)
				return
			}
			var ve *ValidationError
			for _, err := range []error{err1, err2} {
				require.ErrorIs(t, err, ErrInvalidParams)
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "Amount", ve.Field)
				assert.Less(t, len(err.Error()), 200, "the error does not print the amount")
			}
			assert.Equal(t, int32(0), hits, "nothing sent")
		})
	}
}

// TestAmountPlaces: an amount with more decimal places than its currency
// has on its network is refused before anything is sent, by CreatePayment
// and CreatePayout alike, with the pair named; trailing zeros do not count,
// and a pair whose places are not known passes.
func TestAmountPlaces(t *testing.T) {
	tests := []struct {
		name              string
		amount            string
		currency, network string
		wantPlaces        string // "" if accepted, else the places named
	}{
		{"usdt on tron, 6 places", "0.000001", "usdt", "tron", ""},
		{"usdt on tron, 7 places", "0.0000001", "usdt", "tron", "6"},
		{"usdt on tron, 30 places", "0.000000000000000000000000000001", "usdt", "tron", "6"},
		{"usdt on tron, trailing zeros", "1.500000000", "usdt", "tron", ""},
		{"btc on bitcoin, 8 places", "0.00000001", "btc", "bitcoin", ""},
		{"btc on bitcoin, 9 places", "0.000000001", "btc", "bitcoin", "8"},
		{"ltc on litecoin, 9 places", "1.000000001", "ltc", "litecoin", "8"},
		{"eth on eth, 18 places", "0.000000000000000001", "eth", "eth", ""},
		{"eth on eth, 19 places", "0.0000000000000000001", "eth", "eth", "18"},
		{"usdt on bsc, 18 places", "0.000000000000000001", "usdt", "bsc", ""},
		{"unknown pair passes", "0.000000000000000000000000000001", "xyz", "tron", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp, po := validPaymentParams(), validPayoutParams()
			amount := decimal.RequireFromString(tt.amount)
			pp.Amount, pp.Currency, pp.Network = amount, tt.currency, tt.network
			po.Amount, po.Currency, po.Network = amount, tt.currency, tt.network
			po.WalletAddress = map[string]string{
				"tron": po.WalletAddress, "bitcoin": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
				"litecoin": "ltc1qg42tkwuuxefutzxezdkdel39gfstuap288mfea", "eth": "0xde709f2102306220921060314715629080e2fb77",
				"bsc": "0xde709f2102306220921060314715629080e2fb77",
			}[tt.network]
			hits, err1, err2 := createBoth(t, pp, po)
			if tt.wantPlaces == "" {
				require.NoError(t, err1)
				require.NoError(t, err2)
				assert.Equal(t, int32(2), hits)
				return
			}
			for _, err := range []error{err1, err2} {
				var ve *ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "Amount", ve.Field)
				assert.Contains(t, ve.Reason, tt.currency+" on "+tt.network+" allows ("+tt.wantPlaces+")")
			}
			assert.Equal(t, int32(0), hits, "nothing sent")
		})
	}
}

// createBoth sends pp and po to a server that accepts them, and returns
// how many requests reached the server and each call's error.
func createBoth(t *testing.T, pp CreatePaymentParams, po CreatePayoutParams) (int32, error, error) {
	t.Helper()
	var hits atomic.Int32
	c, mux := setup(t)
	mux.HandleFunc("POST /v1/payment", serveJSON(200, paymentCreated, nil, &hits))
	mux.HandleFunc("POST /v1/payout", serveJSON(200, payoutBody, nil, &hits))
	_, err1 := c.CreatePayment(context.Background(), pp)
	_, err2 := c.CreatePayout(context.Background(), po)
	return hits.Load(), err1, err2
}
