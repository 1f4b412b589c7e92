package cryptopay

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// The bounds the params' struct tags give (see fieldRule), and why. An
// API that trims or truncates an identifier stores another one, and
// reconciling by it finds nothing; the bounds are far above real values
// and below what servers and spreadsheets cut:
//   - OrderID, CustomerID: 128 bytes (a UUID is 36, a ULID 26, a prefixed
//     id rarely over 64);
//   - CustomerIP: 64 bytes (the longest IPv6 text, 45 bytes with an
//     embedded IPv4, plus a zone name);
//   - AdditionalData: 64 KiB (it travels in every create request and
//     comes back in every read).

// maxAddressLen bounds a wallet address of a network the SDK does not
// check; every address format it knows is under 100 bytes.
const maxAddressLen = 256

// fieldRule reads a params field's struct tag: "required" (must not be
// empty) and at most one rule for a non-empty value:
//
//	id=N     an identifier (ids.Text): no leading or trailing white
//	         space, no control, invisible or bidi character, at most N bytes
//	key      a canonical currency or network key (ids.Key)
//	max=N    at most N bytes
//	address  a wallet address: no white space or invisible character
//	         anywhere, at most maxAddressLen bytes (the network's own
//	         check runs in CreatePayoutParams.ValidateWith, payouts.go)
func fieldRule(tag string) (required bool, check func(string) string) {
	for part := range strings.SplitSeq(tag, ",") {
		name, arg, _ := strings.Cut(part, "=")
		n, _ := strconv.Atoi(arg)
		switch name {
		case "required":
			required = true
		case "id":
			check = func(s string) string { return ids.Text(s, n) }
		case "key":
			check = ids.Key
		case "max":
			check = func(s string) string {
				if len(s) > n {
					return "is " + strconv.Itoa(len(s)) + " bytes, more than the " + strconv.Itoa(n) + " allowed"
				}
				return ""
			}
		case "address":
			check = addressText
		}
	}
	return required, check
}

// addressText refuses a wallet address with white space or an invisible
// character anywhere (a zero-width space copied inside an address), or
// longer than maxAddressLen.
func addressText(s string) string {
	if reason := ids.Text(s, maxAddressLen); reason != "" {
		return reason
	}
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return "contains white space at byte " + strconv.Itoa(i)
	}
	return ""
}
