package cryptopaytest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestOptionsRefused(t *testing.T) {
	tests := map[string]cryptopaytest.ServerOption{
		"empty key":      cryptopaytest.WithAPIKey(" "),
		"negative fee":   cryptopaytest.WithFeePercent(dec("-1")),
		"negative nfee":  cryptopaytest.WithNetworkFeePercent(dec("-1")),
		"zero ttl":       cryptopaytest.WithPaymentTTL(0),
		"bad pair":       cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "x"}),
		"retry attempts": cryptopaytest.WithWebhookRetry(0, time.Millisecond),
		"nil client":     cryptopaytest.WithWebhookClient(nil),
		"mode":           cryptopaytest.WithUnpaidFields(9),
		"body":           cryptopaytest.WithMaxBodyBytes(0),
		"balance":        cryptopaytest.WithBalance("usdt", "tron", dec("-1")),
		"public addr":    cryptopaytest.WithAddr("0.0.0.0:0"),
		"empty host":     cryptopaytest.WithAddr(":0"),
		"no port":        cryptopaytest.WithAddr("127.0.0.1"),
	}
	for name, opt := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := cryptopaytest.StartServer(opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, cryptopaytest.ErrInvalid)
			assert.Panics(t, func() { cryptopaytest.NewServer(opt) })
		})
	}
	s, err := cryptopaytest.StartServer(cryptopaytest.WithAddr("localhost:0"))
	require.NoError(t, err)
	s.Close()
}
