package cryptopaytest

import "github.com/shopspring/decimal"

// Currency is a currency and network pair the server supports, for example
// {Currency: "usdt", Network: "tron"}. Matching is exact and case-sensitive.
type Currency struct {
	// Currency is the currency key, for example "usdt".
	Currency string
	// Network is the network key, for example "tron".
	Network string
}

// DefaultCurrencies returns the pairs a Server supports unless
// WithCurrencies says otherwise: btc/bitcoin, eth/eth, eth/sepolia,
// usdt/tron, usdt/erc20, usdt/eth, usdc/eth, trx/tron, ltc/litecoin. Each
// call returns a new slice, so changing it changes no server.
func DefaultCurrencies() []Currency {
	return []Currency{
		{"btc", "bitcoin"},
		{"eth", "eth"},
		{"eth", "sepolia"},
		{"usdt", "tron"},
		{"usdt", "erc20"},
		{"usdt", "eth"},
		{"usdc", "eth"},
		{"trx", "tron"},
		{"ltc", "litecoin"},
	}
}

// DefaultBalance returns the starting balance (1000) of every supported
// pair that WithBalance does not set.
func DefaultBalance() decimal.Decimal { return decimal.NewFromInt(1000) }
