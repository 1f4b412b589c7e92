package pgstore

import (
	"strings"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
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

// checkActor refuses an actor id that cannot name a person in the history.
func checkActor(actor string) error {
	if why := ids.Text(actor, 128); why != "" || actor == "" {
		return &cryptopay.ValidationError{Field: "actor", Reason: cmpOr(why, "is empty: every operator's move names who made it")}
	}
	return nil
}

// noNUL replaces NUL bytes, which no text value can hold, by U+FFFD:
// server text (a payout id, a status) is stored as it came otherwise.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
