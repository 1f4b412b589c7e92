package main

import (
	"net/url"
	"regexp"
	"strings"
)

// passwordInConnString matches a password setting of a key/value
// connection string ("host=db password=x", "password = 'x'").
var passwordInConnString = regexp.MustCompile(`(?i)(^|\s)password\s*=`)

// hasPassword reports whether a connection string carries a password, in
// any form pgx accepts: a URL (postgres:// or postgresql://, any case)
// with a password in its user info or a password query parameter,
// multi-host and IPv6 hosts included (which net/url cannot parse:
// postgres://op:pw@[::1]:1,127.0.0.1:1/db), or a key/value string with a
// password setting. It reads the string only: a password pgx would take
// from $PGPASSWORD or ~/.pgpass is not on the command line.
func hasPassword(dsn string) bool {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok || !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		return passwordInConnString.MatchString(dsn)
	}
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
		if _, q, ok := strings.Cut(rest[i:], "?"); ok {
			query, _, _ = strings.Cut(q, "#")
		}
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 && strings.Contains(authority[:at], ":") {
		return true
	}
	for pair := range strings.SplitSeq(query, "&") {
		k, _, _ := strings.Cut(pair, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if strings.EqualFold(k, "password") {
			return true
		}
	}
	return false
}
