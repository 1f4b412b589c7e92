package pgstore

import (
	"strings"

	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// maxErrorText caps the error text an intent keeps.
const maxErrorText = 1024

// scrubText keeps error text to one capped, valid line.
func scrubText(s string) string { return scrub(s, false) }

// scrubNote keeps an operator's note (a queue move's) capped and valid,
// its lines kept: line breaks as \n (noteLines), every other control
// character a space.
func scrubNote(s string) string { return scrub(noteLines.Replace(s), true) }

// noteLines writes a note's line breaks as \n: \r\n (what a browser's
// text area sends) and a lone \r.
var noteLines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// checkNote is note as it is kept (its line breaks as \n, noteLines), and
// why it cannot be ("" if it can): longer than max bytes, invalid UTF-8,
// leading or trailing white space, or a control, format or other
// invisible character other than a line break (ids.Text, line breaks
// aside).
func checkNote(note string, max int) (kept, why string) {
	kept = noteLines.Replace(note)
	return kept, ids.Text(strings.ReplaceAll(kept, "\n", " "), max)
}

func scrub(s string, lines bool) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && !(lines && r == '\n') || r == 0x7f {
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
