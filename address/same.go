package address

import "strings"

// Same reports whether a and b spell one address of network. Where a
// format gives case no meaning, case is ignored: EVM hex ("0x" and 40 hex
// digits, whose mixed case is only the EIP-55 checksum), and segwit
// bech32 that decodes with network's HRP, written all in one case either
// way. Everything else compares byte for byte: base58 addresses (Bitcoin
// and Litecoin P2PKH and P2SH, TRON, even one that starts like a segwit
// address), mixed-case or undecodable bech32, and the addresses of
// networks without a built-in check or given in another case ("ETH").
//
// Same never calls two different destinations the same, but it is not
// Check: an EVM address whose EIP-55 case is wrong is Same as its correct
// spelling (both name the same 20 bytes). Use Same to tell a provider's
// respelling of an address from another address.
func Same(network, a, b string) bool {
	if a == b {
		return true
	}
	fam := builtin[network]
	if fam == nil || fam.caseless == nil || !strings.EqualFold(a, b) {
		return false
	}
	// Both caseless forms are ASCII (hex digits; bech32's characters), so
	// Unicode's folds (the Kelvin sign matches "k") never make a pair.
	return fam.caseless(a) && fam.caseless(b)
}
