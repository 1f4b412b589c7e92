package address_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cryptopay/cryptopay-go/address"
)

func TestSame(t *testing.T) {
	swap := func(s string) string { // every letter's case swapped
		b := []byte(s)
		for i, c := range b {
			switch {
			case 'a' <= c && c <= 'z':
				b[i] = c - 32
			case 'A' <= c && c <= 'Z':
				b[i] = c + 32
			}
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, network, a, b string
		same                bool
	}{
		{"identical", "tron", tronAddr, tronAddr, true},
		{"EVM checksummed vs lower", "eth", evmChecksum, strings.ToLower(evmChecksum), true},
		{"EVM lower vs upper digits", "bep20", evmUpper, "0x" + strings.ToLower(evmUpper[2:]), true},
		{"EVM another address", "eth", evmLower, evmUpper, false},
		{"EVM prefix case is not ignored", "eth", evmLower, "0X" + evmLower[2:], false},
		{"EVM on a network without a check", "solana", evmChecksum, strings.ToLower(evmChecksum), false},
		{"segwit upper vs lower", "bitcoin", btcP2WPKH, strings.ToLower(btcP2WPKH), true},
		{"segwit taproot", "btc", btcTaproot, strings.ToUpper(btcTaproot), true},
		{"segwit testnet", "bitcoin-testnet", tbP2WSH, strings.ToUpper(tbP2WSH), true},
		{"segwit litecoin", "litecoin", ltcP2WPKH, strings.ToUpper(ltcP2WPKH), true},
		{"segwit of another network's HRP", "litecoin", btcP2WPKH, strings.ToLower(btcP2WPKH), false},
		{"base58 P2PKH is case-sensitive", "bitcoin", btcP2PKH, swap(btcP2PKH), false},
		{"base58 litecoin", "litecoin", ltcP2SH, swap(ltcP2SH), false},
		{"TRON is case-sensitive", "tron", tronAddr, swap(tronAddr), false},
		{"unknown network compares bytes", "solana", "AbC", "abc", false},
		{"Unicode folding is not case", "eth", "0x\u212ak" + strings.Repeat("a", 36), "0xk\u212a" + strings.Repeat("a", 36), false},
		{"lengths differ", "eth", evmLower, evmLower + "0", false},
		{"empty", "eth", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, address.Same(tc.network, tc.a, tc.b))
			assert.Equal(t, tc.same, address.Same(tc.network, tc.b, tc.a), "symmetric")
		})
	}
}
