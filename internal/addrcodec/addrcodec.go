// Package addrcodec decodes and encodes the address forms the SDK checks:
// segwit (BIP-173 bech32, BIP-350 bech32m), base58check and 20-byte hex
// with the EIP-55 checksum. It knows formats, not networks: which version
// bytes, human-readable parts and witness versions a network accepts is
// the address package's business. The fake server uses the encoders to
// hand out addresses that pass the checks.
//
// Decoders return a reason ("" if the address decodes). A reason never
// repeats the address and never names the checksum the address should
// have had: copying a "corrected" checksum would defeat it.
package addrcodec

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/bech32"
	"golang.org/x/crypto/sha3"
)

// MaxLen bounds any address the decoders look at. Base58 decoding costs
// time quadratic in the length; every address they know is under 100
// bytes (a bech32 string is at most 90).
const MaxLen = 128

// Segwit is a decoded segwit address.
type Segwit struct {
	// HRP is the human-readable part, lower case ("bc", "tb", "ltc").
	HRP string
	// Version is the witness version, 0 to 16.
	Version byte
	// Program is the witness program, 2 to 40 bytes.
	Program []byte
}

// DecodeSegwit decodes a segwit address as BIP-173 and BIP-350 define it:
// one case throughout, a valid checksum of the right kind (bech32 for
// witness version 0, bech32m for 1 to 16), version 0 to 16, a program of
// 2 to 40 bytes (20 or 32 for version 0) with at most 4 bits of zero
// padding. It does not look at the HRP's meaning.
func DecodeSegwit(s string) (Segwit, string) {
	if len(s) > 90 {
		return Segwit{}, "is longer than the 90 characters of a bech32 address"
	}
	hrp, data, ver, err := bech32.DecodeGeneric(s)
	if err != nil {
		return Segwit{}, bech32Reason(err)
	}
	if len(data) == 0 {
		return Segwit{}, "has no witness version (empty data part)"
	}
	w := Segwit{HRP: hrp, Version: data[0]}
	if w.Version > 16 {
		return Segwit{}, "has witness version " + strconv.Itoa(int(w.Version)) + "; segwit versions are 0 to 16"
	}
	switch {
	case w.Version == 0 && ver != bech32.Version0:
		return Segwit{}, "uses the bech32m checksum, but witness version 0 takes bech32 (BIP-350)"
	case w.Version > 0 && ver != bech32.VersionM:
		return Segwit{}, "uses the bech32 checksum, but witness version " + strconv.Itoa(int(w.Version)) + " takes bech32m (BIP-350)"
	}
	prog, reason := from5(data[1:])
	if reason != "" {
		return Segwit{}, reason
	}
	switch {
	case len(prog) < 2 || len(prog) > 40:
		return Segwit{}, "has a witness program of " + strconv.Itoa(len(prog)) + " bytes; segwit takes 2 to 40"
	case w.Version == 0 && len(prog) != 20 && len(prog) != 32:
		return Segwit{}, "has a version 0 witness program of " + strconv.Itoa(len(prog)) + " bytes; version 0 takes 20 or 32 (BIP-141)"
	}
	w.Program = prog
	return w, ""
}

// from5 regroups 5-bit groups into bytes, refusing more than 4 bits of
// padding or padding bits that are not zero (BIP-173).
func from5(data []byte) ([]byte, string) {
	out := make([]byte, 0, len(data)*5/8)
	var acc uint32
	var bits uint
	for _, v := range data {
		acc = acc<<5 | uint32(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			out = append(out, byte(acc>>bits))
		}
	}
	switch {
	case bits > 4:
		return nil, "has more than 4 bits of padding"
	case acc&(1<<bits-1) != 0:
		return nil, "has padding bits that are not zero"
	}
	return out, ""
}

// bech32Reason turns the library's error into a reason of our own: its
// checksum error names the checksum the string should have had.
func bech32Reason(err error) string {
	switch err.(type) {
	case bech32.ErrInvalidChecksum:
		return "fails its bech32 checksum (a character is wrong, missing or extra)"
	case bech32.ErrMixedCase:
		return "mixes upper and lower case (bech32 is all one case)"
	case bech32.ErrInvalidCharacter:
		return "has a character bech32 does not use"
	case bech32.ErrInvalidSeparatorIndex:
		return "has no '1' separator with a human-readable part before it and a 6-character checksum after it"
	case bech32.ErrInvalidLength:
		return "is too short or too long for bech32"
	case bech32.ErrNonCharsetChar:
		return "has a character outside the bech32 alphabet"
	}
	return "is not bech32"
}

// EncodeSegwit encodes a segwit address: bech32 for version 0, bech32m
// above, lower case.
func EncodeSegwit(hrp string, version byte, program []byte) (string, error) {
	conv, err := bech32.ConvertBits(program, 8, 5, true)
	if err != nil {
		return "", err
	}
	data := append([]byte{version}, conv...)
	if version == 0 {
		return bech32.Encode(hrp, data)
	}
	return bech32.EncodeM(hrp, data)
}

// DecodeBase58Check decodes a base58check string (a version byte, the
// payload, and the first 4 bytes of the double SHA-256 of both) and
// returns the version byte and the payload.
func DecodeBase58Check(s string) (version byte, payload []byte, reason string) {
	if len(s) > MaxLen {
		return 0, nil, "is longer than " + strconv.Itoa(MaxLen) + " bytes"
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(base58Alphabet, r) }); i >= 0 {
		return 0, nil, "has a character base58 does not use at byte " + strconv.Itoa(i) + " (0, O, I and l are not base58)"
	}
	payload, version, err := base58.CheckDecode(s)
	switch {
	case err == base58.ErrChecksum:
		return 0, nil, "fails its base58check checksum (a character is wrong, missing or extra)"
	case err != nil:
		return 0, nil, "is too short for base58check"
	}
	return version, payload, ""
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// EncodeBase58Check encodes version and payload as base58check.
func EncodeBase58Check(version byte, payload []byte) string {
	return base58.CheckEncode(payload, version)
}

// DecodeHex20 decodes "0x" and 40 hex digits. When the digits mix upper
// and lower case, they must be the EIP-55 checksum of the address; all
// lower or all upper case carries no checksum and is accepted as it is.
func DecodeHex20(s string) (addr [20]byte, checksummed bool, reason string) {
	switch {
	case !strings.HasPrefix(s, "0x"):
		return addr, false, `does not start with "0x"`
	case len(s) != 42:
		return addr, false, "has " + strconv.Itoa(len(s)-2) + " characters after 0x; an address has 40 hex digits (20 bytes)"
	}
	digits := s[2:]
	if _, err := hex.Decode(addr[:], []byte(digits)); err != nil {
		return addr, false, "has a character that is not a hex digit"
	}
	lower, upper := strings.ToLower(digits), strings.ToUpper(digits)
	if digits == lower || digits == upper {
		return addr, false, ""
	}
	if EIP55(addr) != s {
		return addr, false, "fails its EIP-55 checksum (the mix of upper and lower case is wrong: a character is mistyped)"
	}
	return addr, true, ""
}

// EIP55 returns addr as "0x" and 40 hex digits in the EIP-55 mixed case:
// a letter is upper case when the matching nibble of the Keccak-256 hash
// of the lower-case hex digits is 8 or more.
func EIP55(addr [20]byte) string {
	digits := []byte(hex.EncodeToString(addr[:]))
	h := sha3.NewLegacyKeccak256()
	h.Write(digits)
	sum := h.Sum(nil)
	for i, c := range digits {
		nibble := sum[i/2]
		if i%2 == 0 {
			nibble >>= 4
		}
		if c >= 'a' && nibble&0xf >= 8 {
			digits[i] = c - 'a' + 'A'
		}
	}
	return "0x" + string(digits)
}
