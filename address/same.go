package address

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
	if fam == nil || fam.caseless == nil || !asciiEqualFold(a, b) {
		return false
	}
	return fam.caseless(a) && fam.caseless(b)
}

// asciiEqualFold reports whether a and b, both ASCII, are equal but for
// the case of their letters. Unicode folding (the Kelvin sign matches
// "k") has no place in an address.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 0x80 || y >= 0x80 {
			return false
		}
		if x != y && lowerASCII(x) != lowerASCII(y) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
