package cryptopay

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetBalances(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/balance", serveJSON(200,
		`[{"currency":"usdt","network":"tron","amount":123456789.123456789012},{"currency":"btc","network":"bitcoin","amount":"0.1"}]`, nil, nil))
	bal, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	require.Len(t, bal, 2)
	assert.Equal(t, "123456789.123456789012", bal[0].Amount.String())
	assert.Equal(t, "usdt", bal[0].Currency)
	assert.Equal(t, "tron", bal[0].Network)
	assert.Equal(t, Balance{Currency: "btc", Network: "bitcoin", Amount: decimal.RequireFromString("0.1")}.Amount.String(), bal[1].Amount.String())
}

func TestGetBalancesEmpty(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/balance", serveJSON(200, `null`, nil, nil))
	bal, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, bal)
}
