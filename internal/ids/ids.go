// Package ids holds the checks on payment and payout ids that the client
// and the webhook receiver share.
package ids

import (
	"strings"
	"unicode"

	"github.com/google/uuid"
)

// MaxPayoutIDLen bounds a payout id: far above any id a server issues, and
// below the request-line limits of common servers and proxies.
const MaxPayoutIDLen = 256

// Payment says why id is not a payment id ("" if it is). It accepts only
// the canonical 36-character UUID form: the API issues UUID payment ids, so
// anything else is a caller's mistake.
func Payment(id string) string {
	switch {
	case id == "":
		return "payment id is empty"
	case len(id) != 36:
		return "payment id is not a UUID"
	}
	if _, err := uuid.Parse(id); err != nil {
		return "payment id is not a UUID"
	}
	return ""
}

// Payout says why id cannot be sent as a payout id ("" if it can). It
// refuses only what cannot travel as one escaped path segment: an empty
// id, "." or ".." (which a server or proxy resolves as path steps),
// control characters, and ids longer than MaxPayoutIDLen. Everything else,
// spaces and slashes included, is sent path-escaped.
func Payout(id string) string {
	switch {
	case id == "":
		return "payout id is empty"
	case len(id) > MaxPayoutIDLen:
		return "payout id is longer than 256 bytes"
	case id == "." || id == "..":
		return `payout id "` + id + `" would be read as a path step, not an id`
	case strings.ContainsFunc(id, unicode.IsControl):
		return "payout id contains a control character"
	}
	return ""
}

// PaymentKey is a payment id as keys compare it: UUIDs compare
// case-insensitively.
func PaymentKey(id string) string { return strings.ToLower(id) }
