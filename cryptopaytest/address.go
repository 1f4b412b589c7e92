package cryptopaytest

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/shopspring/decimal"
)

const (
	bech32Chars = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
	base58Chars = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
)

// address returns a plausible, deterministic address for network, derived
// from seed and purpose. It is not a valid on-chain address (no checksum):
// nothing must ever be sent to it.
func address(network, seed, purpose string) string {
	sum := sha256.Sum256([]byte(purpose + ":" + seed))
	switch network {
	case "bitcoin", "btc":
		return "bc1q" + pick(sum[:], bech32Chars, 38)
	case "litecoin", "ltc":
		return "ltc1q" + pick(sum[:], bech32Chars, 38)
	case "tron", "trc20":
		return "T" + pick(sum[:], base58Chars, 33)
	}
	return "0x" + hex.EncodeToString(sum[:20])
}

func pick(seed []byte, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[int(seed[i%len(seed)]^byte(i*31))%len(alphabet)]
	}
	return string(b)
}

// qrURI returns a payment URI in the style of BIP 21 / EIP 681.
func qrURI(network, addr string, amount decimal.Decimal) string {
	switch network {
	case "bitcoin", "btc":
		return "bitcoin:" + addr + "?amount=" + amount.String()
	case "litecoin", "ltc":
		return "litecoin:" + addr + "?amount=" + amount.String()
	case "tron", "trc20":
		return "tron:" + addr + "?amount=" + amount.String()
	}
	return "ethereum:" + addr + "?value=" + amount.String()
}
