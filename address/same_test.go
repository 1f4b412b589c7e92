package address_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/addrcodec"
)

// ltcVanity is a Litecoin P2PKH address (base58, case-sensitive) that
// starts with "LTC1" and holds no other '1': the shape of a segwit
// address of Litecoin's HRP.
const ltcVanity = "LTC1D6TUX62j5xqXHZmnUJBjJstvmgQ65h"

func TestSame(t *testing.T) {
	version, payload, reason := addrcodec.DecodeBase58Check(ltcVanity)
	require.Empty(t, reason, "ltcVanity is base58check")
	require.Equal(t, []any{byte(0x30), 20}, []any{version, len(payload)}, "ltcVanity is Litecoin P2PKH")
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
		{"a network key in another case is another network", "ETH", evmChecksum, strings.ToLower(evmChecksum), false},
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
		{"base58 that starts with the HRP and '1' is case-sensitive", "litecoin", ltcVanity, swap(ltcVanity), false},
		{"bech32 of the HRP that does not decode", "bitcoin", "bc1qnotanaddress", "BC1QNOTANADDRESS", false},
		{"mixed-case bech32 is no address (BIP-173)", "bitcoin", strings.ToLower(btcP2WPKH), "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3T4", false},
		{"EVM form without hex digits", "eth", "0x" + strings.Repeat("g", 40), "0x" + strings.Repeat("G", 40), false},
		{"lengths differ", "eth", evmLower, evmLower + "0", false},
		{"empty", "eth", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, address.Same(tc.network, tc.a, tc.b))
			assert.Equal(t, tc.same, address.Same(tc.network, tc.b, tc.a), "symmetric")
		})
	}
}
