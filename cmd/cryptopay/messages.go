package main

import (
	"errors"
	"net"
	"net/url"
	"strings"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// flagOfField names, for the SDK's ValidationError fields, what a CLI user
// sets instead: the flag (or argument, or environment variable).
var flagOfField = map[string]string{
	"Amount":         "--amount",
	"Currency":       "--currency",
	"Network":        "--network",
	"CustomerID":     "--customer-id",
	"CustomerIP":     "--customer-ip",
	"OrderID":        "--order-id",
	"WalletAddress":  "--wallet",
	"AdditionalData": "--additional-data",
	"WebhookURL":     "--webhook-url",
	"AttemptedAt":    "--attempted-at",
	"id":             "the ID argument",
	"baseURL":        "the base URL (--base-url or $" + envBaseURL + ")",
	"apiKey":         "the API key",
}

// userError says err in the CLI's words: a ValidationError names the flag
// to fix instead of the SDK's Go field. Other errors are returned as they
// are.
func userError(err error) error {
	var ve *cryptopay.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	name, ok := flagOfField[ve.Field]
	if !ok {
		return err
	}
	return &exitError{exitUsage, errors.New(name + ": " + ve.Reason)}
}

// checkBaseURL refuses a plain http base URL to a host that is not
// loopback, which would send the API key in clear, in words a CLI user can
// act on (the SDK's own message names a Go option).
func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
		return nil // NewClient judges everything else
	}
	return usageErr("base URL %q: plain http to a host that is not loopback would send the API key in clear; use its https:// URL (the CLI does not send the key over plain http)", u.Redacted())
}

// isLoopback reports whether host (without port) is localhost or a
// loopback address.
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())
}

// looksLikeKey reports whether a file argument may be a key (or a base64
// secret) pasted in its place: 16 or more characters of the key and base64
// alphabets, at least one a digit, and no dot. Such an argument is never
// printed; a path it hides by mistake costs a less helpful message only.
func looksLikeKey(arg string) bool {
	if len(arg) < 16 || !strings.ContainsAny(arg, "0123456789") {
		return false
	}
	return !strings.ContainsFunc(arg, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-+/=", r))
	})
}
