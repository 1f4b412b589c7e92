package cryptopaytest

import (
	"crypto/sha256"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/addrcodec"
)

// address returns a deterministic address for network, derived from seed
// and purpose, that passes the SDK's offline checks for that network
// (package address), so tests exercise them: a segwit v0 (P2WPKH)
// address on bitcoin and litecoin, a base58check TRON address on tron,
// and an EIP-55 checksummed 0x address elsewhere. Its 20 bytes are the
// first bytes of a SHA-256 of fixed test text, not the hash of any public
// key: nobody holds a key that can spend from it, so anything sent to
// such an address on a real network is lost. Never pay to it.
func address(network, seed, purpose string) string {
	sum := sha256.Sum256([]byte(purpose + ":" + seed))
	var b20 [20]byte
	copy(b20[:], sum[:])
	switch network {
	case "bitcoin", "btc":
		return segwit("bc", b20)
	case "litecoin", "ltc":
		return segwit("ltc", b20)
	case "tron", "trc20":
		return addrcodec.EncodeBase58Check(0x41, b20[:])
	}
	return addrcodec.EIP55(b20)
}

// segwit encodes a witness v0 program of 20 bytes. Encoding fails only
// for an HRP with characters outside ASCII 33-126, which "bc" and "ltc"
// are not (TestFakeAddressesPassTheChecks covers every case).
func segwit(hrp string, program [20]byte) string {
	s, _ := addrcodec.EncodeSegwit(hrp, 0, program[:])
	return s
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
