package ids

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyLen bounds a currency or network key. Real keys ("usdt", "erc20",
// "sepolia") are far shorter.
const MaxKeyLen = 32

// Key says why s is not a canonical currency or network key ("" if it is).
// A canonical key is 1 to MaxKeyLen bytes of lower-case ASCII letters and
// digits, with single '-', '_' or '.' between them. Guardrails, velocity
// sums and locks compare keys byte for byte, so "USDT", "usdt " and "usdt"
// must not be three currencies: a key that differs from its canonical form
// only by case or surrounding space is refused with the canonical spelling
// named, never silently rewritten.
func Key(s string) string {
	if s == "" {
		return "is empty"
	}
	if keyOK(s) {
		return ""
	}
	if low := strings.ToLower(strings.TrimSpace(s)); low != s && keyOK(low) {
		return strconv.Quote(s) + " is not canonical: use " + strconv.Quote(low)
	}
	if len(s) > MaxKeyLen {
		return "is longer than " + strconv.Itoa(MaxKeyLen) + " bytes"
	}
	return strconv.Quote(s) + " is not a key: only a-z, 0-9 and single '-', '_' or '.' between them"
}

func keyOK(s string) bool {
	if len(s) == 0 || len(s) > MaxKeyLen {
		return false
	}
	prevSep := true // no separator first
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			prevSep = false
		case c == '-' || c == '_' || c == '.':
			if prevSep {
				return false
			}
			prevSep = true
		default:
			return false
		}
	}
	return !prevSep
}

// Text says why s cannot be sent as an identifier that the merchant and
// the server must agree on byte for byte ("" if it can): invalid UTF-8,
// leading or trailing white space, a control, format (zero-width, bidi
// override) or other invisible character, or more than max bytes. A server
// that trims, normalises or truncates such a value would store another
// identifier, and reconciling by it would find nothing. Empty is left to
// the caller (some fields are optional).
func Text(s string, max int) string {
	if printableASCII(s) {
		// The common case, decided without decoding a rune: valid UTF-8,
		// and no byte is a control or an invisible character.
		switch {
		case len(s) > max:
			return "is longer than " + strconv.Itoa(max) + " bytes"
		case len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' '):
			return "has leading or trailing white space"
		}
		return ""
	}
	return textRunes(s, max)
}

// textRunes is Text rune by rune, for any text.
func textRunes(s string, max int) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if len(s) > max {
		return "is longer than " + strconv.Itoa(max) + " bytes"
	}
	if s != strings.TrimFunc(s, unicode.IsSpace) {
		return "has leading or trailing white space"
	}
	if i := strings.IndexFunc(s, Invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return "contains the invisible or control character " + strconv.QuoteRuneToASCII(r) + " at byte " + strconv.Itoa(i)
	}
	return ""
}

// printableASCII reports whether every byte of s is printable ASCII
// (' ' to '~'): text Text can judge byte by byte.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// Invisible reports whether r is a control character (C0, DEL, C1), a
// format character (zero-width space and joiners, bidi embeddings,
// overrides and isolates, the BOM), a default-ignorable code point, a
// line or paragraph separator, or a private-use or unassigned code point:
// characters a person cannot see or that change how the text around them
// is shown.
func Invisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r < ' ' || r == 0x7f // C0 and DEL; printable ASCII is visible
	}
	return invisibleTables(r)
}

// invisibleTables is Invisible by the Unicode tables, for any rune.
func invisibleTables(r rune) bool {
	switch {
	case unicode.IsControl(r),
		unicode.Is(unicode.Cf, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r),
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Co, r),
		r == utf8.RuneError,
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs):
		return true
	}
	// Variation selectors, Hangul fillers and the like are Mn/Lo but
	// default-ignorable; the combining grapheme joiner is Mn.
	switch r {
	case '\u034f', '\u115f', '\u1160', '\u3164', '\uffa0', '\u180b', '\u180c', '\u180d', '\u180e':
		return true
	}
	return r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0100 && r <= 0xe01ef
}
