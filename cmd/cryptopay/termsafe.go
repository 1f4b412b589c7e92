package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// termSafe is the one filter between text the CLI did not write itself (an
// API answer, an error built from one, a receiver's reply) and a terminal.
// Every character a terminal acts on instead of showing becomes a space:
// C0 controls (ESC, CR, BS, line breaks, tabs), DEL, C1 controls (8-bit
// CSI), the bidirectional overrides that reorder what is shown, invisible
// format characters (zero-width, tag characters), the Unicode line and
// paragraph separators, and bytes that are not UTF-8 (which some
// terminals read as C1 controls). A server
// can then not rewrite or hide a warning the CLI prints next to its text.
func termSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // an invalid byte arrives as utf8.RuneError
		if r == utf8.RuneError || unsafeRune(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeRune reports whether a terminal acts on r instead of showing it.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks, embeddings, overrides and isolates
	case r < 0xad:
		return false
	}
	// Invisible format characters (zero-width space and joiners, BOM, soft
	// hyphen, tag characters) and the line and paragraph separators: text
	// shown as "paid" that is not, hidden text, or a table cell that
	// tabwriter counts wider than it shows, shifting the columns after it
	// under another heading.
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// jsonWriter passes JSON to w with every unsafeRune escaped as \uXXXX.
// encoding/json escapes the C0 controls and replaces bytes that are not
// UTF-8, but writes DEL, the C1 controls, the bidirectional overrides and
// the format characters as they are; outside a string JSON holds none of
// them, so the escaped text is the same JSON value. Each run of a secret
// (see redactSecrets) becomes "[REDACTED]", which keeps the JSON valid for
// a secret without '\' (every JSON escape starts with one).
type jsonWriter struct {
	w       io.Writer
	secrets []string
}

func (j jsonWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(j.secrets) > 0 {
		p = []byte(redactSecrets(string(p), j.secrets...))
	}
	if !bytes.ContainsFunc(p, func(r rune) bool { return r >= 0x7f && unsafeRune(r) }) {
		if _, err := j.w.Write(p); err != nil {
			return 0, err
		}
		return n, nil
	}
	out := make([]byte, 0, len(p)+16)
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		switch {
		case r > 0xffff && unsafeRune(r): // JSON's form: a UTF-16 surrogate pair
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		case r >= 0x7f && unsafeRune(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[:size]...)
		}
		p = p[size:]
	}
	if _, err := j.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}
