package cryptopaytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestDefaultCurrencies(t *testing.T) {
	s := newServer(t)
	list := call(t, s, "GET", "/v1/currencies", "").arr(t)
	require.Len(t, list, len(cryptopaytest.DefaultCurrencies()))
	for i, c := range cryptopaytest.DefaultCurrencies() {
		assert.Equal(t, map[string]any{"currency": c.Currency, "network": c.Network}, list[i])
		assert.True(t, s.Balance(c.Currency, c.Network).Equal(cryptopaytest.DefaultBalance()))
	}
}

func TestDefaultsAreCopies(t *testing.T) {
	// Changing what the defaults return changes neither the next call nor
	// a server started afterwards.
	d := cryptopaytest.DefaultCurrencies()
	d[0] = cryptopaytest.Currency{Currency: "xxx", Network: "yyy"}
	assert.Equal(t, cryptopaytest.Currency{Currency: "btc", Network: "bitcoin"}, cryptopaytest.DefaultCurrencies()[0])
	s := newServer(t)
	list := call(t, s, "GET", "/v1/currencies", "").arr(t)
	assert.Equal(t, "btc", list[0]["currency"])
	assert.True(t, cryptopaytest.DefaultBalance().Equal(dec("1000")))
}
