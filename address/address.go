// Package address checks wallet addresses offline, per network, before a
// payout is sent: a malformed address, a mistyped one (its checksum fails)
// or an address of another network is refused, so no request leaves.
//
// The checks know the address formats, never who holds the keys: an
// address that passes can still belong to nobody, to the wrong person, or
// to a contract that cannot move the funds on. They catch typos, cut-off
// copies and the wrong network, which is where most lost payouts start.
//
// The built-in checks, by network key (the API's "network" field):
//
//   - Bitcoin: "bitcoin", "btc": P2PKH ("1...", version 0x00) and P2SH
//     ("3...", 0x05) in base58check; segwit "bc1" in bech32 (BIP-173,
//     witness version 0, 20- or 32-byte program) and bech32m (BIP-350,
//     version 1, 32-byte program: taproot). Testnet and signet ("tb1",
//     "m", "n", "2") under "bitcoin-testnet", "btc-testnet", "tbtc",
//     "bitcoin-signet".
//   - Litecoin: "litecoin", "ltc": P2PKH ("L...", 0x30), P2SH ("M...",
//     0x32), segwit "ltc1" as for Bitcoin. The old P2SH form with
//     Bitcoin's version 0x05 ("3...") is refused: it reads as a Bitcoin
//     address too, and few services still pay to it. Testnet ("tltc1",
//     0x6f, 0x3a) under "litecoin-testnet", "ltc-testnet", "tltc".
//   - TRON: "tron", "trc20", "trx", "shasta", "nile": base58check of 21
//     bytes starting with 0x41 ("T...").
//   - EVM networks ("eth", "ethereum", "erc20", "sepolia", "holesky",
//     "hoodi", "bep20", "bsc", "polygon", "matic", "arbitrum",
//     "optimism", "base", "avalanche", "avaxc" and the others Networks
//     lists): "0x" and 40 hex digits; mixed case must be the EIP-55
//     checksum; all lower or all upper case has no checksum and is
//     accepted.
//
// Also refused: segwit versions 2 to 16 and version 1 programs that are
// not 32 bytes (BIP-350 asks senders to accept them for the future, but
// today no rule guards such an output: anyone can take the coins), and the
// all-zero addresses of every built-in network (an all-zero EVM or TRON
// address, a Bitcoin or Litecoin hash or witness program of zero bytes:
// funds sent there are burned).
//
// A network the Checker does not know is not checked: its addresses pass
// through as they are (Checker.Checks says whether a network is checked).
// Add or replace a network's check with Checker.With.
package address

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/cryptopay/cryptopay-go/internal/addrcodec"
)

// Func checks one address of a network: nil if it may be paid to, an
// error saying why not otherwise. The built-in checks return an *Error.
type Func func(addr string) error

// Error is an address a check refused.
type Error struct {
	// Network is the network key the address was checked for.
	Network string
	// Reason says what is wrong; it never repeats the address.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return "address: invalid " + e.Network + " address: " + e.Reason
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// ErrInvalid matches every *Error.
var ErrInvalid = errors.New("address: invalid address")

// family is one address format with the network keys that use it.
type family struct {
	name  string // for "is a <name> address"
	check Func
	keys  []string
	// caseless reports whether an address is in a form of this family
	// whose case carries no meaning (nil: none is); Same uses it.
	caseless func(string) bool
}

// The network keys of each built-in family (the API's "network" field);
// Decimals' table names them too.
var (
	bitcoinKeys         = []string{"bitcoin", "btc"}
	bitcoinTestnetKeys  = []string{"bitcoin-testnet", "btc-testnet", "tbtc", "bitcoin-signet"}
	litecoinKeys        = []string{"litecoin", "ltc"}
	litecoinTestnetKeys = []string{"litecoin-testnet", "ltc-testnet", "tltc"}
	tronKeys            = []string{"tron", "trc20", "trx", "shasta", "nile"}
	evmKeys             = []string{
		"eth", "ethereum", "erc20", "sepolia", "holesky", "hoodi", "goerli",
		"bep20", "bsc", "polygon", "matic", "amoy", "arbitrum", "arbitrum-sepolia",
		"optimism", "optimism-sepolia", "base", "base-sepolia", "avalanche", "avaxc",
		"fantom", "linea", "scroll", "zksync", "gnosis", "celo",
	}
)

// families are the built-in checks, in the order a refused address is
// matched against the others ("is a TRON address").
var families = []family{
	{"Bitcoin", Bitcoin, bitcoinKeys, bitcoinMain.caseless},
	{"Bitcoin testnet", BitcoinTestnet, bitcoinTestnetKeys, bitcoinTest.caseless},
	{"Litecoin", Litecoin, litecoinKeys, litecoinMain.caseless},
	{"Litecoin testnet", LitecoinTestnet, litecoinTestnetKeys, litecoinTest.caseless},
	{"TRON", Tron, tronKeys, nil},
	{"EVM (0x)", EVM, evmKeys, evmCaseless},
}

// builtin maps each built-in network key to its family.
var builtin = func() map[string]*family {
	m := make(map[string]*family)
	for i := range families {
		for _, k := range families[i].keys {
			m[k] = &families[i]
		}
	}
	return m
}()

// Networks returns the network keys the built-in checks cover, sorted.
// Each call returns a new slice.
func Networks() []string {
	var out []string
	for _, f := range families {
		out = append(out, f.keys...)
	}
	slices.Sort(out)
	return out
}

// Checker checks an address for its network. The zero value has the
// built-in checks; With returns a Checker with one network added or
// replaced. A Checker is a value: With never changes the one it is called
// on, and any Checker is safe for concurrent use. Nothing is global.
type Checker struct {
	// custom holds With's entries (a nil Func: unchecked). It is never
	// written after With returns, so copies may share it.
	custom map[string]Func
}

// With returns a copy of c in which network's addresses are checked by
// check instead of the built-in check (if any). A nil check makes the
// network unchecked: its addresses pass as they are. network is the key
// exactly as the payout carries it ("usdt" payouts on "tron" use "tron");
// the SDK refuses payouts whose network key is not canonical, so a key
// such as "Tron" is never looked up.
func (c Checker) With(network string, check Func) Checker {
	m := make(map[string]Func, len(c.custom)+1)
	for k, v := range c.custom {
		m[k] = v
	}
	m[network] = check
	return Checker{custom: m}
}

// Checks reports whether network's addresses are checked (a built-in or a
// With check); if not, Check accepts any address for it.
func (c Checker) Checks(network string) bool {
	if f, ok := c.custom[network]; ok {
		return f != nil
	}
	return builtin[network] != nil
}

// Check checks addr for network: nil if it may be paid to, or why not.
// A built-in refusal is an *Error (matching ErrInvalid) whose Reason
// names the network the address belongs to when it is another known
// one ("is a TRON address"). An unchecked network accepts any address.
func (c Checker) Check(network, addr string) error {
	if f, ok := c.custom[network]; ok {
		if f == nil {
			return nil
		}
		return f(addr)
	}
	fam := builtin[network]
	if fam == nil {
		return nil
	}
	err := fam.check(addr)
	if err == nil {
		return nil
	}
	e := &Error{Network: network, Reason: err.Error()}
	var ae *Error
	if errors.As(err, &ae) {
		e.Reason = ae.Reason
	}
	if others := belongsTo(addr, fam); len(others) > 0 {
		e.Reason = "is " + article(others[0]) + " " + strings.Join(others, " or ") + " address, not " + article(fam.name) + " " + fam.name + " one"
	}
	return e
}

// belongsTo lists the other families that accept addr.
func belongsTo(addr string, not *family) []string {
	var out []string
	for i := range families {
		if f := &families[i]; f != not && f.check(addr) == nil {
			out = append(out, f.name)
		}
	}
	return out
}

func article(name string) string {
	if strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an"
	}
	return "a"
}

// bitcoinLike describes one network of the Bitcoin family.
type bitcoinLike struct {
	name          string
	hrp           string
	p2pkh, p2sh   byte
	foreignP2SH   byte   // a P2SH version byte refused with a reason (0: none)
	foreignReason string // why
}

var (
	bitcoinMain  = bitcoinLike{name: "bitcoin", hrp: "bc", p2pkh: 0x00, p2sh: 0x05}
	bitcoinTest  = bitcoinLike{name: "bitcoin-testnet", hrp: "tb", p2pkh: 0x6f, p2sh: 0xc4}
	litecoinMain = bitcoinLike{name: "litecoin", hrp: "ltc", p2pkh: 0x30, p2sh: 0x32, foreignP2SH: 0x05,
		foreignReason: `is a P2SH address with Bitcoin's version byte ("3..."): it is also a Bitcoin address; use the Litecoin form ("M...")`}
	litecoinTest = bitcoinLike{name: "litecoin-testnet", hrp: "tltc", p2pkh: 0x6f, p2sh: 0x3a, foreignP2SH: 0xc4,
		foreignReason: `is a P2SH address with Bitcoin testnet's version byte ("2..."): use the Litecoin testnet form ("Q...")`}
)

// evmCaseless reports whether s has the EVM form ("0x" and 40 hex
// digits), whose case carries no meaning: two such spellings that differ
// only in case decode to the same 20 bytes.
func evmCaseless(s string) bool {
	if len(s) != 42 || !strings.HasPrefix(s, "0x") {
		return false
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// caseless reports whether s is a segwit address of n (it decodes, in one
// case, with n's HRP), whose case carries no meaning. A string that only
// looks segwit (the HRP, then '1') may be base58, which is
// case-sensitive: a Litecoin P2PKH address can start with "LTC1".
func (n bitcoinLike) caseless(s string) bool {
	w, reason := addrcodec.DecodeSegwit(s)
	return reason == "" && w.HRP == n.hrp
}

// Bitcoin checks a Bitcoin mainnet address (see the package comment).
func Bitcoin(addr string) error { return bitcoinMain.check(addr) }

// BitcoinTestnet checks a Bitcoin testnet or signet address.
func BitcoinTestnet(addr string) error { return bitcoinTest.check(addr) }

// Litecoin checks a Litecoin mainnet address.
func Litecoin(addr string) error { return litecoinMain.check(addr) }

// LitecoinTestnet checks a Litecoin testnet address.
func LitecoinTestnet(addr string) error { return litecoinTest.check(addr) }

// burned is the reason an all-zero hash or witness program is refused: no
// key or script is known to hash to it.
const burned = "is the all-zero address (its hash or witness program is all zero bytes): funds sent there are burned"

func (n bitcoinLike) refuse(reason string) error { return &Error{Network: n.name, Reason: reason} }

func (n bitcoinLike) check(addr string) error {
	if addr == "" {
		return n.refuse("is empty")
	}
	// A segwit address is the HRP, '1' and the data, in one case. A
	// base58 address can look the same ("LTC1..." on Litecoin): it passes
	// if it decodes as base58check of this network.
	if one := strings.LastIndexByte(addr, '1'); one > 0 && strings.EqualFold(addr[:one], n.hrp) {
		err := n.checkSegwit(addr)
		if err != nil && n.checkBase58(addr) == nil {
			return nil
		}
		return err
	}
	return n.checkBase58(addr)
}

func (n bitcoinLike) checkBase58(addr string) error {
	version, payload, reason := addrcodec.DecodeBase58Check(addr)
	if reason != "" {
		if looksSegwit(addr) {
			return n.refuse(`is not a segwit address of this network (it must start with "` + n.hrp + `1")`)
		}
		return n.refuse(reason)
	}
	switch {
	case len(payload) != 20:
		return n.refuse("decodes to " + strconv.Itoa(len(payload)) + " bytes; a P2PKH or P2SH address holds 20")
	case (version == n.p2pkh || version == n.p2sh) && allZero(payload):
		return n.refuse(burned)
	case version == n.p2pkh, version == n.p2sh:
		return nil
	case n.foreignP2SH != 0 && version == n.foreignP2SH:
		return n.refuse(n.foreignReason)
	}
	return n.refuse("has version byte 0x" + strconv.FormatUint(uint64(version), 16) + ", which is not this network's P2PKH (0x" +
		strconv.FormatUint(uint64(n.p2pkh), 16) + ") or P2SH (0x" + strconv.FormatUint(uint64(n.p2sh), 16) + ")")
}

// looksSegwit reports whether s has the shape of a bech32 string of some
// other network ("xx1" then bech32 characters), to name that instead of a
// base58 failure.
func looksSegwit(s string) bool {
	one := strings.LastIndexByte(s, '1')
	return one > 0 && len(s)-one > 6 && strings.Trim(strings.ToLower(s[one+1:]), "qpzry9x8gf2tvdw0s3jn54khce6mua7l") == ""
}

func (n bitcoinLike) checkSegwit(addr string) error {
	w, reason := addrcodec.DecodeSegwit(addr)
	if reason != "" {
		return n.refuse(reason)
	}
	// The caller matched the HRP; the decoder checked the rest of BIP-350.
	switch {
	case w.Version == 1 && len(w.Program) != 32 || w.Version > 1:
		return n.refuse("is a witness version " + strconv.Itoa(int(w.Version)) + " output of " + strconv.Itoa(len(w.Program)) +
			" bytes, which no rule guards yet: anyone could take the coins")
	case allZero(w.Program):
		return n.refuse(burned)
	}
	return nil
}

// Tron checks a TRON address: base58check of 21 bytes, the first 0x41
// ("T..."). The all-zero address is refused.
func Tron(addr string) error {
	refuse := func(reason string) error { return &Error{Network: "tron", Reason: reason} }
	if addr == "" {
		return refuse("is empty")
	}
	version, payload, reason := addrcodec.DecodeBase58Check(addr)
	switch {
	case reason != "":
		return refuse(reason)
	case version != 0x41:
		return refuse("has version byte 0x" + strconv.FormatUint(uint64(version), 16) + `; a TRON address starts with 0x41 ("T...")`)
	case len(payload) != 20:
		return refuse("decodes to " + strconv.Itoa(len(payload)+1) + " bytes; a TRON address holds 21")
	case allZero(payload):
		return refuse("is the all-zero address: funds sent there are burned")
	}
	return nil
}

// EVM checks an address of an Ethereum-compatible network: "0x" and 40
// hex digits, the EIP-55 checksum when the case is mixed. The all-zero
// address is refused.
func EVM(addr string) error {
	refuse := func(reason string) error { return &Error{Network: "evm", Reason: reason} }
	if addr == "" {
		return refuse("is empty")
	}
	a, _, reason := addrcodec.DecodeHex20(addr)
	switch {
	case reason != "":
		return refuse(reason)
	case allZero(a[:]):
		return refuse("is the zero address: funds sent there are burned")
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
