package console

import (
	"net/http"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

type actorKey struct{}

// actorOf is the request's actor (Authorize admitted it).
func actorOf(r *http.Request) Actor {
	a, _ := r.Context().Value(actorKey{}).(Actor)
	return a
}

// may reports whether the request's actor may act with role (never in
// read-only mode).
func (c *console) may(r *http.Request, role Role) bool {
	return !c.cfg.ReadOnly && actorOf(r).Can(role)
}

// stores are what the console's moves act on.
func (c *console) stores() pgstore.Stores {
	return pgstore.Stores{Queue: c.cfg.Queue, Tracker: c.cfg.Tracker, Refunds: c.cfg.Refunds}
}

type prefixKey struct{}

// prefix is the path the console is mounted under, as mounted settled it
// ("" at the root).
func prefix(r *http.Request) string {
	p, _ := r.Context().Value(prefixKey{}).(string)
	return p
}

// requestPrefix is what http.StripPrefix removed from the request's path:
// the request URI's path without the path the console sees.
func requestPrefix(r *http.Request) string {
	full := r.URL.Path
	if r.RequestURI != "" {
		if p, _, _ := strings.Cut(r.RequestURI, "?"); p != "" {
			full = p
		}
	}
	if p, ok := strings.CutSuffix(full, r.URL.EscapedPath()); ok {
		return strings.TrimSuffix(p, "/")
	}
	return ""
}
