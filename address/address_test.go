package address_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/addrcodec"
)

// Published addresses, by where they come from:
//   - BIP-350 (github.com/bitcoin/bips 7fe0b034ec96, "Test vectors for
//     v0-v16 native segregated witness addresses");
//   - ERC-55 (github.com/ethereum/ERCs 9c718c7c0237, "Test Cases");
//   - TRON: trustwallet/wallet-core tests/chains/Tron/AddressTests.cpp;
//   - Litecoin: trustwallet/wallet-core tests/chains/Litecoin
//     (LitecoinAddressTests.cpp, TWLitecoinTests.cpp) and MMGen's
//     test/objtest_d/ot_ltc_{mainnet,testnet}.py;
//   - Bitcoin base58: the genesis block's coinbase address and the P2SH
//     example of the Bitcoin wiki.
//
// Their base58check and bech32 checksums are what makes them valid: a
// mistyped vector fails its own checksum.
const (
	btcP2PKH     = "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"
	btcP2SH      = "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"
	btcP2WPKH    = "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4"
	btcTaproot   = "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0"
	tbP2WSH      = "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7"
	tbTaproot    = "tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c"
	ltcP2PKH     = "LgKiekick9Ka7gYoYzAWGrEq8rFBJzYiyf"
	ltcP2SH      = "MHhghmmCTASDnuwpgsPUNJVPTFaj61GzaG"
	ltcP2WPKH    = "ltc1qs32zgdhe2tpzcnz55r7d9jvhce33063sfht3q0"
	ltcTestP2PKH = "n2D3joAy3yE5fqxUeCp38X6uPUcVn7EFw9"
	ltcTestP2SH  = "QN59YbnHsPQcbKWSq9PmTpjrhBnHGQqRmf"
	tronAddr     = "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC"
	evmChecksum  = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	evmLower     = "0xde709f2102306220921060314715629080e2fb77"
	evmUpper     = "0x52908400098527886E0F7030069857D2E4169EE7"
)

func TestBuiltinAccepts(t *testing.T) {
	var c address.Checker
	for _, tc := range []struct {
		network string
		addrs   []string
	}{
		{"bitcoin", []string{btcP2PKH, btcP2SH, btcP2WPKH, strings.ToLower(btcP2WPKH), btcTaproot}},
		{"btc", []string{btcP2PKH, btcTaproot}},
		{"bitcoin-testnet", []string{tbP2WSH, tbTaproot, "tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy", ltcTestP2PKH}},
		{"litecoin", []string{ltcP2PKH, ltcP2SH, ltcP2WPKH, "LW6HjAU6GL9fK2LZWUA6VZCzomTdrpx3nr", "LV7LV7Z4bWDEjYkfx9dQo6k6RjGbXsg6hS",
			"ltc1q3m3ujh350qrqdl33pv7pjw0d0m9qnm6qjcjpga", "ltc1qytnqzjknvv03jwfgrsmzt0ycmwqgl0asjnaxwu",
			"LXYx4j8PDGE8GEwDFnEQhcLyHFGsRxSJwt", "MEnuCzUGHaQx9fK5WYvLwR1NK4SAo8HmSr", ltcVanity}},
		{"ltc", []string{ltcP2WPKH}},
		{"litecoin-testnet", []string{ltcTestP2PKH, ltcTestP2SH}},
		{"tron", []string{tronAddr, "THRF3GuPnvvPzKoaT8pJex5XHmo8NNbCb3"}},
		{"trc20", []string{tronAddr}},
		{"eth", []string{evmChecksum, evmLower, evmUpper, "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
			"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
			"0x8617E340B3D01FA5F11F306F4090FD50E238070D", "0x27b1fdb04752bbc536007a920d24acb045561c26"}},
		{"erc20", []string{evmChecksum}}, {"sepolia", []string{evmChecksum}}, {"bep20", []string{evmLower}},
		{"polygon", []string{evmUpper}}, {"arbitrum", []string{evmChecksum}}, {"avaxc", []string{evmChecksum}},
	} {
		for _, a := range tc.addrs {
			assert.NoError(t, c.Check(tc.network, a), "%s %s", tc.network, a)
		}
	}
}

func TestBuiltinRefuses(t *testing.T) {
	var c address.Checker
	for _, tc := range []struct {
		network, addr, reason string
	}{
		// A mistyped character fails the checksum.
		{"bitcoin", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb", "base58check checksum"},
		{"bitcoin", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "bech32 checksum"},
		{"tron", "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeD", "base58check checksum"},
		{"eth", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "EIP-55"},
		{"eth", "0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "EIP-55"},
		// Cut off, padded, malformed.
		{"tron", tronAddr[:33], "checksum"},
		{"eth", evmChecksum[:41], "39 characters"},
		{"eth", evmChecksum + "0", "41 characters"},
		{"tron", "abc", "too short"},
		{"tron", "2MegQ6oqSda2tTagdEzBA", "checksum"},
		{"bitcoin", "", "is empty"}, {"tron", "", "is empty"}, {"eth", "", "is empty"},
		{"bitcoin", strings.Repeat("1", 200), "longer than 128"},
		// BIP-350's invalid list, at the network level (the HRP ones).
		{"bitcoin", "tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut", "segwit address of this network"},
		{"bitcoin-testnet", "tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut", "segwit address of this network"},
		{"bitcoin", "tc1qw508d6qejxtdg4y5r3zarvary0c5xw7kg3g4ty", "segwit address of this network"},
		{"bitcoin", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "takes bech32m"},
		{"bitcoin", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "takes bech32"},
		// BIP-350's valid outputs that no rule guards yet.
		{"bitcoin", "bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y", "witness version 1 output of 40 bytes"},
		{"bitcoin", "BC1SW50QGDZ25J", "witness version 16 output of 2 bytes"},
		{"bitcoin", "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "witness version 2 output of 16 bytes"},
		// Burned.
		{"eth", "0x0000000000000000000000000000000000000000", "zero address"},
		{"tron", addrcodec.EncodeBase58Check(0x41, make([]byte, 20)), "all-zero"},
		// Bitcoin's and Litecoin's all-zero hashes and programs: no key or
		// script hashes to them, so funds sent there are burned too.
		{"bitcoin", "1111111111111111111114oLvT2", "all-zero"},
		{"bitcoin", addrcodec.EncodeBase58Check(0x05, make([]byte, 20)), "all-zero"},
		{"bitcoin", mustSegwit(t, "bc", 0, make([]byte, 20)), "all-zero"},
		{"bitcoin", mustSegwit(t, "bc", 0, make([]byte, 32)), "all-zero"},
		{"bitcoin", mustSegwit(t, "bc", 1, make([]byte, 32)), "all-zero"},
		{"litecoin", addrcodec.EncodeBase58Check(0x30, make([]byte, 20)), "all-zero"},
		{"bitcoin-testnet", mustSegwit(t, "tb", 0, make([]byte, 20)), "all-zero"},
		// Wrong version bytes.
		{"litecoin", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "is a Bitcoin address, not a Litecoin one"},
		{"tron", addrcodec.EncodeBase58Check(0xa0, make([]byte, 20)), "version byte 0xa0"},
		{"tron", addrcodec.EncodeBase58Check(0x41, make([]byte, 19)), "decodes to 20 bytes"},
		{"bitcoin", addrcodec.EncodeBase58Check(0x00, make([]byte, 21)), "decodes to 21 bytes"},
	} {
		err := c.Check(tc.network, tc.addr)
		require.Error(t, err, "%s %q", tc.network, tc.addr)
		assert.ErrorIs(t, err, address.ErrInvalid)
		var ae *address.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, tc.network, ae.Network)
		assert.Contains(t, ae.Reason, tc.reason, "%s %q", tc.network, tc.addr)
		if len(tc.addr) > 8 {
			assert.NotContains(t, err.Error(), tc.addr, "the reason does not repeat the address")
		}
	}
}

// TestOtherNetwork: every known address given for every other family's
// network is refused and named as what it is.
func TestOtherNetwork(t *testing.T) {
	var c address.Checker
	addrs := map[string]string{
		"Bitcoin": btcP2WPKH, "Bitcoin testnet": tbP2WSH, "Litecoin": ltcP2WPKH,
		"Litecoin testnet": ltcTestP2SH, "TRON": tronAddr, "EVM (0x)": evmChecksum,
	}
	networks := map[string]string{
		"Bitcoin": "bitcoin", "Bitcoin testnet": "bitcoin-testnet", "Litecoin": "litecoin",
		"Litecoin testnet": "litecoin-testnet", "TRON": "tron", "EVM (0x)": "eth",
	}
	for fam, addr := range addrs {
		for other, network := range networks {
			err := c.Check(network, addr)
			if other == fam {
				assert.NoError(t, err, "%s on %s", addr, network)
				continue
			}
			require.Error(t, err, "%s on %s", addr, network)
			assert.Contains(t, err.Error(), fam+" address, not", "%s on %s", addr, network)
		}
	}
	// Mainnet and testnet are different networks.
	assert.ErrorContains(t, c.Check("bitcoin", btcP2PKH[:0]+"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn"), "testnet")
	assert.ErrorContains(t, c.Check("bitcoin-testnet", btcP2PKH), "is a Bitcoin address")
	assert.ErrorContains(t, c.Check("bitcoin-testnet", btcTaproot), "is a Bitcoin address")
	assert.ErrorContains(t, c.Check("ltc", ltcTestP2PKH), "Bitcoin testnet or Litecoin testnet address")
}

// TestFamilyReason: a family check called alone explains a version byte
// that belongs to the same family on another network.
func TestFamilyReason(t *testing.T) {
	assert.ErrorContains(t, address.Litecoin(btcP2SH), `Bitcoin's version byte ("3...")`)
	assert.ErrorContains(t, address.LitecoinTestnet(addrcodec.EncodeBase58Check(0xc4, make([]byte, 20))), `("Q...")`)
	assert.ErrorContains(t, address.Bitcoin(ltcP2PKH), "version byte 0x30")
}

func TestUncheckedAndWith(t *testing.T) {
	var c address.Checker
	assert.False(t, c.Checks("solana"))
	assert.NoError(t, c.Check("solana", "anything at all"))
	assert.True(t, c.Checks("tron"))

	memo := errors.New("needs a memo")
	sol := c.With("solana", func(addr string) error {
		if strings.Contains(addr, ":") {
			return memo
		}
		return nil
	})
	assert.True(t, sol.Checks("solana"))
	assert.ErrorIs(t, sol.Check("solana", "a:b"), memo)
	assert.False(t, c.Checks("solana"), "With changes a copy, not the Checker it is called on")

	// Replace a built-in, and remove one.
	strict := c.With("eth", func(addr string) error {
		if err := address.EVM(addr); err != nil {
			return err
		}
		if addr == strings.ToLower(addr) {
			return errors.New("give the checksummed form")
		}
		return nil
	})
	assert.EqualError(t, strict.Check("eth", evmLower), "give the checksummed form")
	assert.NoError(t, strict.Check("eth", evmChecksum))
	assert.NoError(t, c.Check("eth", evmLower))
	open := strict.With("tron", nil)
	assert.False(t, open.Checks("tron"))
	assert.NoError(t, open.Check("tron", "TXyz"))
	assert.EqualError(t, open.Check("eth", evmLower), "give the checksummed form", "earlier With entries are kept")

	// Concurrent use of one Checker and of With on it.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			d := sol.With("x"+string(rune('a'+i)), nil)
			assert.NoError(t, d.Check("tron", tronAddr))
			assert.Error(t, sol.Check("tron", "T"))
		})
	}
	wg.Wait()
}

func TestNetworks(t *testing.T) {
	n := address.Networks()
	var c address.Checker
	for _, k := range n {
		assert.True(t, c.Checks(k), k)
	}
	for _, k := range []string{"bitcoin", "litecoin", "tron", "eth", "erc20", "sepolia", "bep20", "polygon", "arbitrum", "optimism", "base", "avalanche", "avaxc"} {
		assert.Contains(t, n, k)
	}
	n[0] = "changed"
	assert.NotEqual(t, "changed", address.Networks()[0])
}

// The fuzz targets: no check panics, and what a check accepts is the
// canonical encoding of what it decodes to.

func FuzzBitcoin(f *testing.F) {
	for _, s := range []string{btcP2PKH, btcP2SH, btcP2WPKH, btcTaproot, tbP2WSH, "bc1", "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, check := range []address.Func{address.Bitcoin, address.BitcoinTestnet} {
			if check(s) == nil {
				roundTripBitcoin(t, s)
			}
		}
	})
}

func FuzzLitecoin(f *testing.F) {
	for _, s := range []string{ltcP2PKH, ltcP2SH, ltcP2WPKH, ltcTestP2PKH, ltcTestP2SH, "ltc1", "L"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, check := range []address.Func{address.Litecoin, address.LitecoinTestnet} {
			if check(s) == nil {
				roundTripBitcoin(t, s)
			}
		}
	})
}

func roundTripBitcoin(t *testing.T, s string) {
	t.Helper()
	if w, reason := addrcodec.DecodeSegwit(s); reason == "" {
		back, err := addrcodec.EncodeSegwit(w.HRP, w.Version, w.Program)
		require.NoError(t, err)
		assert.Equal(t, strings.ToLower(s), back)
		return
	}
	v, p, reason := addrcodec.DecodeBase58Check(s)
	require.Empty(t, reason)
	assert.Len(t, p, 20)
	assert.Equal(t, s, addrcodec.EncodeBase58Check(v, p))
}

func FuzzTron(f *testing.F) {
	for _, s := range []string{tronAddr, "T", "TXyz", btcP2PKH} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if address.Tron(s) != nil {
			return
		}
		v, p, reason := addrcodec.DecodeBase58Check(s)
		require.Empty(t, reason)
		assert.Equal(t, byte(0x41), v)
		assert.Equal(t, s, addrcodec.EncodeBase58Check(v, p))
	})
}

func FuzzEVM(f *testing.F) {
	for _, s := range []string{evmChecksum, evmLower, evmUpper, "0x", "0xabc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if address.EVM(s) != nil {
			return
		}
		a, sum, reason := addrcodec.DecodeHex20(s)
		require.Empty(t, reason)
		if sum {
			assert.Equal(t, s, addrcodec.EIP55(a))
		} else {
			assert.True(t, strings.EqualFold(s, addrcodec.EIP55(a)))
		}
	})
}

func mustSegwit(t *testing.T, hrp string, version byte, program []byte) string {
	t.Helper()
	s, err := addrcodec.EncodeSegwit(hrp, version, program)
	require.NoError(t, err)
	return s
}
