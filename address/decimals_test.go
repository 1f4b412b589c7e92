package address

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecimals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		currency, network string
		places            int
		known             bool
	}{
		{"btc", "bitcoin", 8, true},
		{"btc", "bitcoin-testnet", 8, true},
		{"ltc", "litecoin", 8, true},
		{"usdt", "tron", 6, true},
		{"usdt", "trc20", 6, true},
		{"trx", "tron", 6, true},
		{"eth", "eth", 18, true},
		{"eth", "sepolia", 18, true},
		{"eth", "arbitrum", 18, true},
		{"usdt", "erc20", 6, true},
		{"usdc", "eth", 6, true},
		{"usdc", "base", 6, true},
		{"usdt", "bsc", 18, true},
		{"USDT", "tron", 0, false}, // keys are exact
		{"usdt", "solana", 0, false},
		{"btc", "tron", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		places, known := Decimals(tt.currency, tt.network)
		assert.Equal(t, tt.known, known, "%s on %s", tt.currency, tt.network)
		assert.Equal(t, tt.places, places, "%s on %s", tt.currency, tt.network)
	}
}

// TestDecimalsNetworksAreChecked: every network of the table is one the
// address checks know, so the two lists cannot drift apart.
func TestDecimalsNetworksAreChecked(t *testing.T) {
	t.Parallel()
	for p := range decimals {
		assert.True(t, Checker{}.Checks(p.network), "%s on %s", p.currency, p.network)
	}
}
