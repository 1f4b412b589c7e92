package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A webhook body is read in two steps, so that nothing costly happens
// before the token is checked. scanEvent makes one pass over the body: it
// checks that it is a single JSON object and picks out the raw tokens of
// the members the token check and the routing need (paymentId, payoutId,
// orderId, status), without allocating and without converting any number.
// Only once the orderId matched the token is anything decoded (and then
// every amount goes through wire.DecodeAmount, which refuses one over
// wire.MaxAmountLen characters before parsing it).

var (
	errBadEvent  = errors.New("not a payment or payout event")
	errAmbiguous = errors.New("a member is given twice")
)

// Limits of what a webhook body may carry.
const (
	// maxStatusLen bounds the status: a long one would bloat the dedupe
	// store.
	maxStatusLen = 64
	// maxEventDepth bounds the nesting of arrays and objects in a body.
	maxEventDepth = 64
)

// eventFields are the raw JSON tokens of the members scanEvent picks out
// (nil when absent). Members are matched the way encoding/json matches
// struct fields (exactly, else case-insensitively), so what is checked here
// is what the decoder later fills in.
type eventFields struct {
	paymentID, payoutID, orderID, status []byte
	// ambiguous: one of those members appears twice (JSON decoding would
	// keep the last; the handler refuses the body).
	ambiguous bool
}

// eventScanner walks a body; it never allocates except to unescape a key
// that contains a backslash.
type eventScanner struct {
	b     []byte
	i     int
	depth int
}

// scanEvent checks that body is exactly one JSON object (whitespace around
// it allowed) and returns its identifying members.
func scanEvent(body []byte) (eventFields, error) {
	var f eventFields
	s := eventScanner{b: body}
	s.space()
	if !s.object(&f) {
		return eventFields{}, errBadEvent
	}
	s.space()
	if s.i != len(s.b) {
		return eventFields{}, errBadEvent
	}
	return f, nil
}

func (s *eventScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips c if it is next.
func (s *eventScanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object scans an object; top (non-nil for the body itself) collects its
// identifying members.
func (s *eventScanner) object(top *eventFields) bool {
	if !s.consume('{') || s.depth == maxEventDepth {
		return false
	}
	s.depth++
	ok := s.members(top)
	s.depth--
	return ok
}

// members scans an object's members and its closing brace.
func (s *eventScanner) members(top *eventFields) bool {
	s.space()
	if s.consume('}') {
		return true
	}
	for {
		s.space()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if !s.consume(':') {
			return false
		}
		s.space()
		start := s.i
		if !s.value() {
			return false
		}
		if top != nil {
			top.member(key, s.b[start:s.i])
		}
		s.space()
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

func (s *eventScanner) array() bool {
	if !s.consume('[') || s.depth == maxEventDepth {
		return false
	}
	s.depth++
	ok := s.elements()
	s.depth--
	return ok
}

// elements scans an array's elements and its closing bracket.
func (s *eventScanner) elements() bool {
	s.space()
	if s.consume(']') {
		return true
	}
	for {
		s.space()
		if !s.value() {
			return false
		}
		s.space()
		if s.consume(',') {
			continue
		}
		return s.consume(']')
	}
}

func (s *eventScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	return false
}

func (s *eventScanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// str scans a string and returns its raw token, quotes included.
func (s *eventScanner) str() ([]byte, bool) {
	start := s.i
	if !s.consume('"') {
		return nil, false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], true
		case c == '\\':
			if !s.escape() {
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			s.i++
		}
	}
	return nil, false
}

// escape scans one escape sequence, backslash included.
func (s *eventScanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !isHex(h) {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number scans a number as JSON defines it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *eventScanner) number() bool {
	s.consume('-')
	switch {
	case s.consume('0'):
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.consume('.') && !s.digits() {
		return false
	}
	if s.consume('e') || s.consume('E') {
		if !s.consume('+') {
			s.consume('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits.
func (s *eventScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// member records a top-level member if it is one eventFields keeps.
func (f *eventFields) member(rawKey, val []byte) {
	name := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var k string
		if json.Unmarshal(rawKey, &k) != nil {
			return
		}
		name = []byte(k)
	}
	switch memberOf(name) {
	case "paymentId":
		f.keep(&f.paymentID, val)
	case "payoutId":
		f.keep(&f.payoutID, val)
	case "orderId":
		f.keep(&f.orderID, val)
	case "status":
		f.keep(&f.status, val)
	}
}

// memberOf returns the member name that encoding/json would match to key
// (the exact name, else one equal under bytes.EqualFold, the equivalence
// its decoder uses), or "" for a member eventFields ignores.
func memberOf(key []byte) string {
	if ascii(key) {
		// Only ASCII folds to ASCII within the same length, so the
		// length picks the candidates.
		for _, m := range membersByLen(len(key)) {
			if bytes.EqualFold(key, []byte(m)) {
				return m
			}
		}
		return ""
	}
	// Non-ASCII: the Kelvin sign folds to k and the long s to s.
	for _, ms := range [...][]string{membersByLen(6), membersByLen(7), membersByLen(8), membersByLen(9)} {
		for _, m := range ms {
			if bytes.EqualFold(key, []byte(m)) {
				return m
			}
		}
	}
	return ""
}

// membersByLen lists the members of each length that eventFields knows.
func membersByLen(n int) []string {
	switch n {
	case 6:
		return []string{"status"}
	case 7:
		return []string{"orderId"}
	case 8:
		return []string{"payoutId"}
	case 9:
		return []string{"paymentId"}
	}
	return nil
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (f *eventFields) keep(dst *[]byte, val []byte) {
	if *dst != nil {
		f.ambiguous = true
	}
	*dst = val
}

// kind tells a payment event from a payout event: exactly one of paymentId
// and payoutId has a value. nil: neither or both.
func (f *eventFields) kind() *kind {
	switch {
	case present(f.paymentID) && !present(f.payoutID):
		return paymentKind
	case present(f.payoutID) && !present(f.paymentID):
		return payoutKind
	}
	return nil
}

// id is the raw id member of the event's kind.
func (f *eventFields) id() []byte {
	if present(f.paymentID) {
		return f.paymentID
	}
	return f.payoutID
}

// present reports whether a member was given a value other than null.
func present(raw []byte) bool { return raw != nil && string(raw) != "null" }

// rawString returns the bytes of a JSON string token when they need no
// decoding (no escape, valid UTF-8): then they are the string itself.
func rawString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') >= 0 || !utf8.Valid(in) {
		return nil, false
	}
	return in, true
}

// jsonString decodes a JSON string token as encoding/json would (invalid
// UTF-8 becomes U+FFFD); ok is false for anything but a string.
func jsonString(raw []byte) (string, bool) {
	if in, ok := rawString(raw); ok {
		return string(in), true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// event is a webhook body once authenticated: its kind, id, orderId and
// status, and its object (the posted one, or the API's after a re-read).
type event struct {
	kind    *kind // nil until the body is scanned
	id      string
	orderID string
	// status is the API's once re-read, else the posted one; postedStatus
	// keeps the body's.
	status, postedStatus string
	obj                  any // *cryptopay.Payment or *cryptopay.Payout
}

// identify reads the event's kind, id and status from an authenticated
// body's members.
func (ev *event) identify(f *eventFields) error {
	if f.ambiguous {
		return errAmbiguous
	}
	if ev.kind == nil {
		return errBadEvent
	}
	id, ok := jsonString(f.id())
	if !ok || ev.kind.badID(id) != "" {
		return errBadEvent
	}
	status, ok := jsonString(f.status)
	// A status is a short word; a long one would bloat the dedupe store.
	if !ok || status == "" || len(status) > maxStatusLen {
		return errBadEvent
	}
	ev.id, ev.status = id, status
	return nil
}

// ahead reports whether the posted status is further along than the API's,
// so the API is probably lagging behind the event: the API's status can
// still move to the posted one by the SDK's lifecycle table (late moves
// included). Unknown statuses are never ahead.
func (ev *event) ahead() bool { return ev.kind.ahead(ev.postedStatus, ev.status) }
