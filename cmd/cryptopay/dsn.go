package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// envDatabaseURL names the payout queue's and the payment tracker's
// database.
const envDatabaseURL = "CRYPTOPAY_DATABASE_URL"

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

// openPool connects to the database named by databaseURL (a --database-url
// flag) or, when it is empty, $CRYPTOPAY_DATABASE_URL, with at most
// maxConns connections. A flag carrying a password is refused (ps shows
// flags). The connection string and its password join the app's secrets
// first, so no later error or output prints them, and a string pgx cannot
// parse is not echoed either.
func (a *app) openPool(databaseURL string, maxConns int32) (*pgxpool.Pool, error) {
	dsn := databaseURL
	if dsn != "" && hasPassword(dsn) {
		return nil, usageErr("--database-url: the connection string carries a password, and ps shows flags; " +
			"set " + envDatabaseURL + ", or keep the password in $PGPASSWORD or ~/.pgpass")
	}
	if dsn == "" {
		dsn = strings.TrimSpace(a.getenv(envDatabaseURL))
	}
	if dsn == "" {
		return nil, usageErr("no database: set %s or pass --database-url", envDatabaseURL)
	}
	a.dbSecrets = append(a.dbSecrets, dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the string with its password removed as well as it
		// can; say nothing of it instead.
		return nil, usageErr("the database connection string (--database-url or $%s) cannot be parsed; it is not shown because it may hold a password", envDatabaseURL)
	}
	if pw := cfg.ConnConfig.Password; pw != "" {
		a.dbSecrets = append(a.dbSecrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(a.ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}
