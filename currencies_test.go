package cryptopay

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListCurrencies(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/currencies", serveJSON(200, `[{"currency":"usdt","network":"tron"},{"currency":"eth","network":"eth"}]`, nil, nil))
	cur, err := c.ListCurrencies(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []Currency{{"usdt", "tron"}, {"eth", "eth"}}, cur)
}

func TestListCurrenciesEmpty(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/currencies", serveJSON(200, `[]`, nil, nil))
	cur, err := c.ListCurrencies(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, cur)
}

func TestResponseTooLarge(t *testing.T) {
	c, mux := setup(t, WithMaxResponseBytes(64))
	mux.HandleFunc("GET /v1/currencies", serveJSON(200, `[`+strings.Repeat(`{"currency":"usdt","network":"tron"},`, 10)+`{}]`, nil, nil))
	_, err := c.ListCurrencies(context.Background())
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.Contains(t, err.Error(), "larger than 64 bytes")
}
