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
		{"1e-8", decimal.New(1, -8), true},
		{"100 digits", decimal.RequireFromString(strings.Repeat("9", 100)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			c, mux := setup(t)
			mux.HandleFunc("POST /v1/payment", serveJSON(200, paymentCreated, nil, &hits))
			mux.HandleFunc("POST /v1/payout", serveJSON(200, payoutBody, nil, &hits))
			pp, po := validPaymentParams(), validPayoutParams()
			pp.Amount, po.Amount = tt.amount, tt.amount
			_, err1 := c.CreatePayment(context.Background(), pp)
			_, err2 := c.CreatePayout(context.Background(), po)
			if tt.ok {
				assert.NoError(t, err1)
				assert.NoError(t, err2)
				assert.Equal(t, int32(2), hits.Load())
				return
			}
			var ve *ValidationError
			for _, err := range []error{err1, err2} {
				require.ErrorIs(t, err, ErrInvalidParams)
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "Amount", ve.Field)
				assert.Less(t, len(err.Error()), 200, "the error does not print the amount")
			}
			assert.Equal(t, int32(0), hits.Load(), "nothing sent")
		})
	}
}
