package pgstore

import (
	"strings"
)

// maxErrorText caps the error text an intent keeps.
const maxErrorText = 1024

// scrubText keeps error and note text to one capped, valid line.
func scrubText(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxErrorText {
		s = strings.ToValidUTF8(s[:maxErrorText], "") + "…"
	}
	return s
}

// errText is scrubText of err's text ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return scrubText(err.Error())
}

// noNUL replaces NUL bytes, which no text value can hold, by U+FFFD:
// server text (a payout id, a status) is stored as it came otherwise.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
