package cryptopay

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
)

// redacted replaces the API key wherever text the server or a transport
// sent back might carry it.
const redacted = "[REDACTED]"

// The server, a proxy or a transport may echo request headers back: in an
// error body, a response header (X-Request-Id), a field a decoder then
// quotes in its error, or a transport error's text. Everything the SDK puts
// into an error, a log line, an Observer or a Response passes through one
// of these first. A key shorter than 4 bytes is not searched for (it would
// match ordinary text); NewClient refuses an empty key.

// scrub removes the API key from b, returning b itself when it has none.
func (c *Client) scrub(b []byte) []byte {
	if len(c.cfg.apiKey) < 4 || !bytes.Contains(b, []byte(c.cfg.apiKey)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(c.cfg.apiKey), []byte(redacted))
}

// scrubString removes the API key from s.
func (c *Client) scrubString(s string) string {
	if len(c.cfg.apiKey) < 4 || !strings.Contains(s, c.cfg.apiKey) {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.apiKey, redacted)
}

// scrubErr returns err, or, when its text holds the API key, an error with
// the key replaced that still matches what err matches.
func (c *Client) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	if s := err.Error(); len(c.cfg.apiKey) >= 4 && strings.Contains(s, c.cfg.apiKey) {
		return &redactedError{msg: c.scrubString(s), err: err}
	}
	return err
}

// scrubHeader returns h, or a copy with the API key replaced in every
// value when any value holds it.
func (c *Client) scrubHeader(h http.Header) http.Header {
	if len(c.cfg.apiKey) < 4 {
		return h
	}
	var out http.Header
	for k, vs := range h {
		for i, v := range vs {
			if !strings.Contains(v, c.cfg.apiKey) {
				continue
			}
			if out == nil {
				out = h.Clone()
			}
			out[k][i] = c.scrubString(v)
		}
	}
	if out == nil {
		return h
	}
	return out
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
