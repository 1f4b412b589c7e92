package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/cryptopay/cryptopay-go"
)

// MinSecretLen is the shortest secret URL and
// NewHandler accept. Use 32 random bytes (crypto/rand).
const MinSecretLen = 16

// webhookTokenContext separates webhook tokens from any other use of the
// secret: token = HMAC-SHA256(secret, webhookTokenContext + orderID).
const webhookTokenContext = "cryptopay-go webhook v1\x00"

var webhookTokenContextBytes = []byte(webhookTokenContext)

// webhookToken is the token URL puts in the URL for orderID:
// base64url without padding (RFC 4648 §5) of
// HMAC-SHA256(secret, "cryptopay-go webhook v1" + 0x00 + orderID).
func webhookToken(secret []byte, orderID string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(webhookTokenContext))
	m.Write([]byte(orderID))
	return m.Sum(nil)
}

func checkSecret(secret []byte, field string) error {
	if len(secret) < MinSecretLen {
		return &cryptopay.ValidationError{Field: field, Reason: fmt.Sprintf("must be at least %d bytes (use 32 random bytes)", MinSecretLen)}
	}
	if len(bytes.Trim(secret, "\x00")) == 0 {
		return &cryptopay.ValidationError{Field: field, Reason: "is all zero bytes; fill it from crypto/rand"}
	}
	return nil
}

// URL returns the URL to pass as the webhookUrl of a payment or
// payout for order orderID: base with a token query parameter added, where
// token is base64url (no padding) of HMAC-SHA256(secret, "cryptopay-go
// webhook v1" + 0x00 + orderID). A Handler with the same secret
// accepts an event only if its orderId matches the token in its URL.
//
// base must be an absolute http or https URL without a fragment and without
// a token parameter; its other query parameters are kept. secret must be at
// least MinSecretLen bytes and not all zero; orderID must be valid
// UTF-8 and not empty. Use https: anyone who learns the URL can post events for this
// order (which a handler with a Client then checks against the API).
func URL(base string, secret []byte, orderID string) (string, error) {
	if err := checkSecret(secret, "secret"); err != nil {
		return "", err
	}
	if orderID == "" {
		return "", &cryptopay.ValidationError{Field: "orderID", Reason: "must not be empty: the token signs it"}
	}
	if !utf8.ValidString(orderID) {
		// JSON carries only valid UTF-8: the orderId would come back
		// changed, and no event for it would ever match the token.
		return "", &cryptopay.ValidationError{Field: "orderID", Reason: "is not valid UTF-8"}
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", &cryptopay.ValidationError{Field: "base", Reason: "not a URL"}
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", &cryptopay.ValidationError{Field: "base", Reason: "scheme must be https (or http)"}
	case u.Host == "" || u.Hostname() == "":
		return "", &cryptopay.ValidationError{Field: "base", Reason: "has no host"}
	case u.Fragment != "" || strings.Contains(base, "#"):
		return "", &cryptopay.ValidationError{Field: "base", Reason: "must not have a fragment"}
	case u.Query().Has("token"):
		return "", &cryptopay.ValidationError{Field: "base", Reason: "already has a token parameter"}
	}
	tok := "token=" + base64.RawURLEncoding.EncodeToString(webhookToken(secret, orderID))
	if u.RawQuery == "" {
		u.RawQuery = tok
	} else {
		u.RawQuery += "&" + tok
	}
	u.ForceQuery = false
	return u.String(), nil
}

// tokenCheck is the scratch space of one token check, pooled so that a
// check allocates nothing.
type tokenCheck struct {
	mac       hash.Hash // HMAC-SHA256 keyed with the handler's secret
	src       [encodedMACLen]byte
	got, want [sha256.Size]byte
}

// encodedMACLen is the length of a token: base64url of the 32-byte MAC, no
// padding.
const encodedMACLen = 43

// queryToken returns the value of the query's one token parameter, as
// url.ParseQuery would read it, without building the whole map. ok is
// false when it is missing, empty or repeated.
func queryToken(rawQuery string) (token string, ok bool) {
	n := 0
	for rest := rawQuery; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(pair, ";") {
			continue // url.ParseQuery refuses such a pair
		}
		k, v, _ := strings.Cut(pair, "=")
		if k != "token" && (!strings.ContainsAny(k, "%+") || unescapeQuery(k) != "token") {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			var err error
			if v, err = url.QueryUnescape(v); err != nil {
				continue
			}
		}
		token = v
		n++
	}
	return token, n == 1 && token != ""
}

func unescapeQuery(s string) string {
	u, err := url.QueryUnescape(s)
	if err != nil {
		return ""
	}
	return u
}
