package main

import (
	"encoding/json"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestBalances(t *testing.T) {
	f := setup(t, cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"}, cryptopaytest.Currency{Currency: "btc", Network: "bitcoin"}))
	f.srv.SetBalance("usdt", "tron", decimal.RequireFromString("12345678901234567890.123456789012345678"))
	f.srv.SetBalance("btc", "bitcoin", decimal.RequireFromString("0.00000001"))

	r := f.run("balances")
	require.Equal(t, 0, r.code, r.stderr)
	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, []map[string]any{
		{"currency": "usdt", "network": "tron", "amount": "12345678901234567890.123456789012345678"},
		{"currency": "btc", "network": "bitcoin", "amount": "0.00000001"},
	}, got, "amounts are exact decimal strings")

	r = f.runCLI(terms{stdout: true}, "", "balances")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "CURRENCY  NETWORK  AMOUNT\n"+
		"usdt      tron     12345678901234567890.123456789012345678\n"+
		"btc       bitcoin  0.00000001\n", r.stdout)
}

func TestCurrencies(t *testing.T) {
	f := setup(t, cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"}, cryptopaytest.Currency{Currency: "eth", Network: "sepolia"}))
	r := f.run("currencies")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `[{"currency":"usdt","network":"tron"},{"currency":"eth","network":"sepolia"}]`, r.stdout)

	r = f.run("currencies", "--output", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "CURRENCY  NETWORK\nusdt      tron\neth       sepolia\n", r.stdout)
}
