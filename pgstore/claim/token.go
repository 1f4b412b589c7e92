package claim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MinKeyLen is the shortest key New, Link and Sign accept: 32 bytes of a
// secret (from your configuration, never from code).
const MinKeyLen = 32

// maxToken bounds a token before any work is done on it: a purpose, a
// refund id of at most 128 bytes, a time, and the MAC, in base64.
const maxToken = 320

// Purposes of a token: a claim link (the customer gives an address, once)
// and the status link the page sends them on to (it only shows the
// refund).
const (
	purposeClaim  = "claim"
	purposeStatus = "status"
)

// Errors of a token; the handler answers each with a page that changes
// nothing.
var (
	// ErrForged: the token is malformed, or its MAC is not the key's.
	ErrForged = errors.New("claim: token not valid")
	// ErrExpired: the token's time has passed.
	ErrExpired = errors.New("claim: token expired")
)

// token is a verified token's content.
type token struct {
	purpose, refundID string
	until             time.Time
}

// Sign returns a claim token for the refund id valid until until: the
// payload (purpose, id, time) and its HMAC-SHA256 under key, in base64url.
// key must be at least MinKeyLen bytes.
func Sign(key []byte, refundID string, until time.Time) (string, error) {
	return sign(key, purposeClaim, refundID, until)
}

// Link returns the claim link of the refund id: base (the URL the handler
// is mounted at, e.g. "https://shop.example/refund") with the token of
// Sign in its query. Send it to the customer; until should be the
// refund's ClaimUntil.
func Link(base string, key []byte, refundID string, until time.Time) (string, error) {
	tok, err := Sign(key, refundID, until)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("claim: base %q is not an absolute http(s) URL", base)
	}
	q := u.Query()
	q.Set("t", tok)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func sign(key []byte, purpose, refundID string, until time.Time) (string, error) {
	if len(key) < MinKeyLen {
		return "", fmt.Errorf("claim: the key has %d bytes, fewer than %d", len(key), MinKeyLen)
	}
	if refundID == "" || len(refundID) > 128 || strings.ContainsRune(refundID, '|') {
		return "", fmt.Errorf("claim: refund id %q cannot be signed", refundID)
	}
	payload := purpose + "|" + refundID + "|" + strconv.FormatInt(until.Unix(), 10)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(mac(key, payload)), nil
}

// mac is the token's MAC of payload under key, bound to this use.
func mac(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("cryptopay-go refund claim\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// verify checks tok under key at now: its length first, then the MAC in
// constant time, then the time. Nothing of an unverified token is used.
func verify(key []byte, tok string, now time.Time) (*token, error) {
	if len(tok) == 0 || len(tok) > maxToken {
		return nil, ErrForged
	}
	p64, m64, ok := strings.Cut(tok, ".")
	if !ok {
		return nil, ErrForged
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p64)
	got, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(got, mac(key, string(payload))) {
		return nil, ErrForged
	}
	f := strings.Split(string(payload), "|")
	if len(f) != 3 || (f[0] != purposeClaim && f[0] != purposeStatus) || f[1] == "" {
		return nil, ErrForged
	}
	unix, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, ErrForged
	}
	t := &token{purpose: f[0], refundID: f[1], until: time.Unix(unix, 0)}
	if !now.Before(t.until) {
		return t, ErrExpired
	}
	return t, nil
}
