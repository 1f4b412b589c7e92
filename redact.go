package cryptopay

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// redacted replaces the API key wherever text the server or a transport
// sent back might carry it.
const redacted = "[REDACTED]"

// The server, a proxy or a transport may echo request headers back: in an
// error body, a response header (its value or its name), the reason phrase,
// a field a decoder then quotes in its error, or a transport error's text.
// Every piece of such text goes through the scrubber before the SDK puts
// it into an error, a log line, an Observer or a Response, and a text that
// is cut (an error body at 8 KiB, a message at 512 bytes, a request id at
// 128) is scrubbed first and cut second, by scrubber.cut.
//
// The key is matched in any letter case and in the encodings a server is
// likely to use for it, in any mix: JSON escapes (\/, \uXXXX, and either
// escaped again, as JSON carried in a JSON string has them), \xXX,
// percent-encoding (%2F, %2f) and HTML character references (&#47;,
// &#x2F;). A key shorter than minScrubLen bytes is not searched for (it
// would match ordinary text); NewClient refuses an empty key.

// minScrubLen is the shortest key searched for.
const minScrubLen = 4

// minPartialKey is the shortest piece of the key that, at the end of a text
// the SDK cut, counts as the key and is redacted.
const minPartialKey = 4

// maxUnitLen is the longest encoding of one key byte the scrubber decodes
// (&#x0002F; and the like are longer, and not decoded).
const maxUnitLen = 8

// scrubber finds the API key in server text. Its zero value finds nothing.
type scrubber struct {
	key []byte // the key, ASCII letters lowercased
}

func newScrubber(apiKey string) scrubber {
	if len(apiKey) < minScrubLen {
		return scrubber{}
	}
	k := []byte(apiKey)
	for i, b := range k {
		k[i] = lower(b)
	}
	return scrubber{key: k}
}

// slack is how many bytes past a cut must be read so that a key starting
// before the cut, in its longest encoding, is seen whole.
func (s scrubber) slack() int64 { return int64(len(s.key) * maxUnitLen) }

// String returns t with every occurrence of the key, encoded or not,
// replaced by [REDACTED]; t itself when it has none.
func (s scrubber) String(t string) string {
	if s.key == nil {
		return t
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(t); {
		if s.candidate(t[i]) {
			if m := s.match(t, i, 0); m.full {
				b.WriteString(t[last:i])
				b.WriteString(redacted)
				last, i = m.end, m.end
				continue
			}
		}
		i++
	}
	if last == 0 {
		return t
	}
	b.WriteString(t[last:])
	return b.String()
}

// Bytes is String for a byte slice; it returns b itself when it has no key.
func (s scrubber) Bytes(b []byte) []byte {
	if s.key == nil {
		return b
	}
	t := string(b)
	if out := s.String(t); out != t {
		return []byte(out)
	}
	return b
}

// cut scrubs t, then cuts it to at most n bytes (on a rune boundary, with
// "…" appended) and redacts a piece of the key left at the cut.
func (s scrubber) cut(t string, n int) string {
	t = s.String(t)
	if len(t) <= n {
		return t
	}
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return s.tail(t[:n]) + "…"
}

// cutBytes scrubs b, then cuts it to at most n bytes and redacts a piece of
// the key left at the cut.
func (s scrubber) cutBytes(b []byte, n int) []byte {
	b = s.Bytes(b)
	if len(b) <= n {
		return b
	}
	return []byte(s.tail(string(b[:n])))
}

// tail redacts the longest end of t that is the start of the key (at least
// minPartialKey bytes of it, encoded or not, an escape cut in the middle
// included): what is left of a key that a cut went through.
func (s scrubber) tail(t string) string {
	if s.key == nil {
		return t
	}
	for i := max(0, len(t)-len(s.key)*maxUnitLen); i < len(t); i++ {
		if !s.candidate(t[i]) {
			continue
		}
		if m := s.match(t, i, 0); m.atEnd && m.n >= minPartialKey {
			return t[:i] + redacted
		}
	}
	return t
}

// candidate reports whether a key can start at byte c: its first byte in
// either case, or the start of an escape.
func (s scrubber) candidate(c byte) bool {
	return lower(c) == s.key[0] || c == '\\' || c == '%' || c == '&'
}

// keyMatch is how far the key matched from a position.
type keyMatch struct {
	n     int  // key bytes matched
	full  bool // the whole key; end is where its text ends
	end   int
	atEnd bool // the text ended (maybe inside an escape) with the key matching so far
}

// match compares t from i with the key from its byte n, ignoring ASCII
// letter case, one character or escape at a time. An escape character that
// is also the key's own byte is tried as itself first, then decoded.
func (s scrubber) match(t string, i, n int) keyMatch {
	for {
		switch {
		case n == len(s.key):
			return keyMatch{n: n, full: true, end: i}
		case i == len(t):
			return keyMatch{n: n, atEnd: true}
		}
		c := t[i]
		if c != '\\' && c != '%' && c != '&' {
			if lower(c) != s.key[n] {
				return keyMatch{}
			}
			i, n = i+1, n+1
			continue
		}
		if c == s.key[n] {
			if m := s.match(t, i+1, n+1); m.full || m.atEnd {
				return m
			}
		}
		dec, width, complete := decodeUnit(t, i)
		if !complete {
			return keyMatch{n: n, atEnd: true}
		}
		for k := 0; k < len(dec); k++ {
			if n == len(s.key) || lower(dec[k]) != s.key[n] {
				return keyMatch{}
			}
			n++
		}
		i += width
	}
}

// decodeUnit decodes the character at t[i]: an escape (\/, \", \uXXXX,
// \xXX, %XX, &#NN;, &#xNN;) or a plain byte. complete is false when t ends
// inside what may be an escape.
func decodeUnit(t string, i int) (dec string, width int, complete bool) {
	rest := t[i:]
	switch rest[0] {
	case '\\':
		if len(rest) < 2 {
			return "", 0, false
		}
		if rest[1] == '\\' {
			return backslashRun(rest)
		}
		switch c := rest[1]; {
		case c == 'u':
			return hexUnit(rest, 2, 4, true)
		case c == 'x':
			return hexUnit(rest, 2, 2, false)
		case c < 0x80 && !isAlnum(c):
			return rest[1:2], 2, true
		}
	case '%':
		return hexUnit(rest, 1, 2, false)
	case '&':
		return charRef(rest)
	}
	return rest[:1], 1, true
}

// backslashRun decodes a run of backslashes at the start of rest: an
// escape encoded again, as JSON carried in a JSON string gives it (\\/,
// \\\/, \\u002F: a gateway wrapping an upstream's error body), is
// decoded as the escape its last backslash starts; a run followed by
// anything else is an escaped backslash. Runs longer than maxUnitLen are
// not looked into, so a body of backslashes costs linear time.
func backslashRun(rest string) (string, int, bool) {
	j := 2
	for j < len(rest) && j < maxUnitLen && rest[j] == '\\' {
		j++
	}
	if j == len(rest) {
		return "", 0, false
	}
	if c := rest[j]; c != '\\' && c < 0x80 && (c == 'u' || c == 'x' || !isAlnum(c)) {
		if dec, width, complete := decodeUnit(rest, j-1); width > 1 || !complete {
			return dec, j - 1 + width, complete
		}
	}
	return `\`, 2, true
}

// hexUnit decodes digits hex digits at rest[at:] as one byte (or, with
// isRune, one rune as UTF-8). An escape that is not followed by hex digits
// is read as its first byte alone.
func hexUnit(rest string, at, digits int, isRune bool) (string, int, bool) {
	v := 0
	for k := at; k < at+digits; k++ {
		if k == len(rest) {
			return "", 0, false
		}
		d, ok := hexVal(rest[k])
		if !ok {
			return rest[:1], 1, true
		}
		v = v<<4 | d
	}
	if isRune {
		return string(rune(v)), at + digits, true
	}
	return string([]byte{byte(v)}), at + digits, true
}

// charRef decodes an HTML numeric character reference, &#47; or &#x2F;.
func charRef(rest string) (string, int, bool) {
	k, base := 1, 10
	if k < len(rest) && rest[k] == '#' {
		k++
		if k < len(rest) && (rest[k] == 'x' || rest[k] == 'X') {
			k, base = k+1, 16
		}
	} else if k < len(rest) {
		return rest[:1], 1, true
	}
	v, digits := 0, 0
	for ; k < len(rest) && k < maxUnitLen; k++ {
		c := rest[k]
		if c == ';' && digits > 0 {
			return string(rune(v)), k + 1, true
		}
		d, ok := hexVal(c)
		if !ok || d >= base {
			return rest[:1], 1, true
		}
		v, digits = v*base+d, digits+1
	}
	if k == len(rest) {
		return "", 0, false
	}
	return rest[:1], 1, true
}

func hexVal(c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0'), true
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= lower(c) && lower(c) <= 'z'
}

// redactedError is an error whose text held the API key. Error returns the
// scrubbed text and errors.Is still matches what the original matches
// (context.Canceled, io.ErrUnexpectedEOF ...). Neither Unwrap nor As is
// offered: either would hand out a value whose text holds the key.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is matches what the original error matches.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
