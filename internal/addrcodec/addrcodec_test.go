package addrcodec

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vectors below are copied from the published specifications:
// BIP-173 and BIP-350 at github.com/bitcoin/bips commit
// 7fe0b034ec967b52a5a28276419117326df93263 ("Test vectors"), and ERC-55
// (EIP-55) at github.com/ethereum/ERCs commit
// 9c718c7c02372a6b7e300990511cd6fdff7f1dfa ("Test Cases").

// TestBech32Strings pins the library path DecodeSegwit takes
// (bech32.DecodeGeneric) to BIP-173's and BIP-350's string vectors: each
// valid string decodes with its own checksum kind only, each invalid one
// is refused, also by DecodeSegwit.
func TestBech32Strings(t *testing.T) {
	valid := []struct {
		s    string
		kind bech32.Version
	}{
		{"A12UEL5L", bech32.Version0},
		{"a12uel5l", bech32.Version0},
		{"an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs", bech32.Version0},
		{"abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw", bech32.Version0},
		{"11qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqc8247j", bech32.Version0},
		{"split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", bech32.Version0},
		{"?1ezyfcl", bech32.Version0},
		{"A1LQFN3A", bech32.VersionM},
		{"a1lqfn3a", bech32.VersionM},
		{"an83characterlonghumanreadablepartthatcontainsthetheexcludedcharactersbioandnumber11sg7hg6", bech32.VersionM},
		{"abcdef1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx", bech32.VersionM},
		{"11llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllludsr8", bech32.VersionM},
		{"split1checkupstagehandshakeupstreamerranterredcaperredlc445v", bech32.VersionM},
		{"?1v759aa", bech32.VersionM},
	}
	for _, tc := range valid {
		_, _, kind, err := bech32.DecodeGeneric(tc.s)
		require.NoError(t, err, tc.s)
		assert.Equal(t, tc.kind, kind, tc.s)
	}
	invalid := []string{
		// BIP-173
		"\x201nwldj5", "\x7f1axkwrx", "\x801eym55h",
		"an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx",
		"pzry9x0s0muk", "1pzry9x0s0muk", "x1b4n0q5v", "li1dgmt3", "de1lg7wt\xff", "A1G7SGD8", "10a06t8", "1qzzfhee",
		// BIP-350
		"\x201xj0phk", "\x7f1g6xzxy", "\x801vctc34",
		"an84characterslonghumanreadablepartthatcontainsthetheexcludedcharactersbioandnumber11d6pts4",
		"qyrz8wqd2c9m", "1qyrz8wqd2c9m", "y1b0jsk6g", "lt1igcx5c0", "in1muywd", "mm1crxm3i", "au1s5cgom", "M1VUXWEZ",
		"16plkw9", "1p2gdwpf",
	}
	for _, s := range invalid {
		_, _, _, err := bech32.DecodeGeneric(s)
		assert.Error(t, err, "%q", s)
		_, reason := DecodeSegwit(s)
		assert.NotEmpty(t, reason, "%q", s)
	}
}

// TestSegwitValid: BIP-350's valid segwit addresses decode to their
// scriptPubKey and encode back (lower case).
func TestSegwitValid(t *testing.T) {
	for _, tc := range []struct{ addr, script string }{
		{"BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "0014751e76e8199196d454941c45d1b3a323f1433bd6"},
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", "00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262"},
		{"bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y", "5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6"},
		{"BC1SW50QGDZ25J", "6002751e"},
		{"bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "5210751e76e8199196d454941c45d1b3a323"},
		{"tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy", "0020000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433"},
		{"tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c", "5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433"},
		{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"},
	} {
		w, reason := DecodeSegwit(tc.addr)
		require.Empty(t, reason, tc.addr)
		assert.Equal(t, tc.script, hex.EncodeToString(scriptPubKey(w)), tc.addr)
		back, err := EncodeSegwit(w.HRP, w.Version, w.Program)
		require.NoError(t, err)
		assert.Equal(t, strings.ToLower(tc.addr), back)
	}
}

// scriptPubKey is BIP-350's reference: OP_n (0, or 0x50+n) then the
// program's length and the program.
func scriptPubKey(w Segwit) []byte {
	op := w.Version
	if op > 0 {
		op += 0x50
	}
	return append([]byte{op, byte(len(w.Program))}, w.Program...)
}

// TestSegwitInvalid: BIP-173's and BIP-350's invalid segwit addresses,
// except those refused only for their HRP ("tc": a network question the
// address package answers and tests).
func TestSegwitInvalid(t *testing.T) {
	for _, tc := range []struct{ addr, reason string }{
		// BIP-173. Its v1+ vectors carry bech32 checksums, which BIP-350
		// made wrong for v1+: they now fail for that first.
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "checksum"},
		{"BC13W508D6QEJXTDG4Y5R3ZARVARY0C5XW7KN40WF2", "witness version 17"},
		{"bc1rw5uspcuh", "uses the bech32 checksum"},
		{"bc10w508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kw5rljs90", "uses the bech32 checksum"},
		{"BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "version 0 witness program of 16 bytes"},
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sL5k7", "mixes upper and lower case"},
		{"bc1zw508d6qejxtdg4y5r3zarvaryvqyzf3du", "uses the bech32 checksum"},
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3pjxtptv", "padding bits that are not zero"},
		{"bc1gmk9yu", "no witness version"},
		// BIP-350
		{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "uses the bech32 checksum"},
		{"tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf", "uses the bech32 checksum"},
		{"BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL", "uses the bech32 checksum"},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "uses the bech32m checksum"},
		{"tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47", "uses the bech32m checksum"},
		{"bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4", "character"},
		{"BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R", "witness version 17"},
		{"bc1pw5dgrnzv", "witness program of 1 bytes"},
		{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav", "witness program of 41 bytes"},
		{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq", "mixes upper and lower case"},
		{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf", "more than 4 bits of padding"},
		{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j", "padding bits that are not zero"},
	} {
		_, reason := DecodeSegwit(tc.addr)
		assert.Contains(t, reason, tc.reason, tc.addr)
	}
}

// TestEIP55: ERC-55's test cases: all caps and all lower carry no
// checksum; the "normal" ones are their own checksum; changing the case
// of one letter of those fails.
func TestEIP55(t *testing.T) {
	for _, s := range []string{
		"0x52908400098527886E0F7030069857D2E4169EE7", "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
		"0xde709f2102306220921060314715629080e2fb77", "0x27b1fdb04752bbc536007a920d24acb045561c26",
	} {
		a, sum, reason := DecodeHex20(s)
		assert.Empty(t, reason, s)
		assert.False(t, sum, s)
		assert.True(t, strings.EqualFold(EIP55(a), s), s)
	}
	for _, s := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		a, sum, reason := DecodeHex20(s)
		require.Empty(t, reason, s)
		assert.True(t, sum, s)
		assert.Equal(t, s, EIP55(a), s)
		// Flip the case of the first letter after 0x.
		i := strings.IndexFunc(s[2:], func(r rune) bool { return r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' }) + 2
		flipped := s[:i] + string(s[i]^0x20) + s[i+1:]
		_, _, reason = DecodeHex20(flipped)
		assert.Contains(t, reason, "EIP-55", flipped)
	}
	for _, tc := range []struct{ in, reason string }{
		{"52908400098527886E0F7030069857D2E4169EE7", `"0x"`},
		{"0X52908400098527886E0F7030069857D2E4169EE7", `"0x"`},
		{"0x52908400098527886E0F7030069857D2E4169EE", "39 characters"},
		{"0x52908400098527886E0F7030069857D2E4169EE7A", "41 characters"},
		{"0x52908400098527886E0F7030069857D2E4169EEG", "hex digit"},
	} {
		_, _, reason := DecodeHex20(tc.in)
		assert.Contains(t, reason, tc.reason, tc.in)
	}
}

func TestBase58Check(t *testing.T) {
	for _, tc := range []struct{ in, reason string }{
		{"", "too short"},
		{"1111", "too short"},
		{"TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeD", "checksum"},
		{"TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDe0", "base58 does not use at byte 33"},
		{"TJRyWwFs9wTFGZg3Jbr\u200bVriFbNfCug5tDeC", "at byte 19"},
		{strings.Repeat("T", MaxLen+1), "longer than 128"},
	} {
		_, _, reason := DecodeBase58Check(tc.in)
		assert.Contains(t, reason, tc.reason, "%q", tc.in)
	}
	v, p, reason := DecodeBase58Check("TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC")
	require.Empty(t, reason)
	assert.Equal(t, byte(0x41), v)
	assert.Equal(t, "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC", EncodeBase58Check(v, p))
}

// FuzzSegwit: DecodeSegwit never panics, and what it accepts encodes back
// to the same address (lower case).
func FuzzSegwit(f *testing.F) {
	for _, s := range []string{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "BC1SW50QGDZ25J", "bc1gmk9yu", "tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, reason := DecodeSegwit(s)
		if reason != "" {
			return
		}
		back, err := EncodeSegwit(w.HRP, w.Version, w.Program)
		require.NoError(t, err)
		assert.Equal(t, strings.ToLower(s), back)
	})
}

// FuzzBase58Check: no panic; an accepted string encodes back unchanged.
func FuzzBase58Check(f *testing.F) {
	for _, s := range []string{"TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "111111", "z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, p, reason := DecodeBase58Check(s)
		if reason != "" {
			return
		}
		assert.Equal(t, s, EncodeBase58Check(v, p))
	})
}

// FuzzHex20: no panic; an accepted address is its EIP-55 form when mixed
// case, and that form in one case otherwise.
func FuzzHex20(f *testing.F) {
	for _, s := range []string{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xde709f2102306220921060314715629080e2fb77", "0x", "0xZZ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, sum, reason := DecodeHex20(s)
		if reason != "" {
			return
		}
		if sum {
			assert.Equal(t, s, EIP55(a))
		} else {
			assert.True(t, strings.EqualFold(s, EIP55(a)))
		}
	})
}
