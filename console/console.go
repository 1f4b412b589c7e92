package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Role is what an actor may do in the console.
type Role string

// Roles. They do not imply one another: give an approver who also retries
// parked intents both roles.
const (
	// RoleViewer reads every page and acts on nothing. Every actor the
	// Authorize function admits can read.
	RoleViewer Role = "viewer"
	// RoleOperator retries and resolves parked payouts (one by one or in
	// bulk) and clears payment anomalies.
	RoleOperator Role = "operator"
	// RoleApprover approves or rejects payouts held for approval (one by
	// one or in bulk). Four eyes: an intent needs the approvals of
	// pgstore.QueueConfig.Approvals distinct approvers.
	RoleApprover Role = "approver"
)

// Actor is who makes a request, as Config.Authorize says.
type Actor struct {
	// ID names the person in every history entry of their moves: a stable
	// user id or e-mail, not a display name (at most 128 bytes, no
	// control or invisible characters).
	ID string
	// Roles are what they may do (RoleViewer alone: read only).
	Roles []Role
}

// Can reports whether the actor has role r.
func (a Actor) Can(r Role) bool { return slices.Contains(a.Roles, r) }

// ErrInvalidConfig is New's error for a Config it cannot work with.
var ErrInvalidConfig = errors.New("console: invalid config")

// Defaults of Config.
const (
	// DefaultPageSize is how many rows a list page shows.
	DefaultPageSize = 50
	// DefaultBulkMax is the most intents one bulk action moves.
	DefaultBulkMax = 1000
)

// Config configures New. Authorize and at least one of Queue and Tracker
// are required.
type Config struct {
	// Queue is the payout queue the console shows and moves (nil: no
	// payouts pages). A Queue with a Client can also Resolve.
	Queue *pgstore.Queue
	// Tracker is the payment tracker the console shows (nil: no payments
	// pages).
	Tracker *pgstore.Tracker
	// Authorize maps a request to its actor, or refuses it with an error
	// (403; the error's text is not shown). It runs for every request,
	// after the merchant's own authentication middleware: read the user it
	// established from the request's context or headers.
	Authorize func(r *http.Request) (Actor, error)
	// ReadOnly hides every action and refuses every POST (403), whatever
	// the roles.
	ReadOnly bool
	// PageSize is how many rows a list page shows (default
	// DefaultPageSize, at most 500).
	PageSize int
	// BulkMax caps how many intents one bulk action moves (default
	// DefaultBulkMax); a filter that matches more is refused.
	BulkMax int
	// Logger receives one line per error a page could not show (the
	// database unreachable ...); the page says only that it was logged.
	// Default: slog.Default().
	Logger *slog.Logger
}

// console is one configured console.
type console struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns the console's handler. Mount it under any
// prefix with http.StripPrefix: every link it writes carries the prefix
// the request came through.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Authorize == nil:
		return nil, fmt.Errorf("%w: Authorize is required: the console has no users of its own", ErrInvalidConfig)
	case cfg.Queue == nil && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: give a Queue, a Tracker or both", ErrInvalidConfig)
	case cfg.PageSize < 0 || cfg.PageSize > 500 || cfg.BulkMax < 0:
		return nil, fmt.Errorf("%w: PageSize must be 0 to 500, BulkMax not negative", ErrInvalidConfig)
	}
	cfg.PageSize = cmpOr(cfg.PageSize, DefaultPageSize)
	cfg.BulkMax = cmpOr(cfg.BulkMax, DefaultBulkMax)
	c := &console{cfg: cfg, log: cmpOr(cfg.Logger, slog.Default())}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/style.css", serveStyle)
	mux.HandleFunc("GET /{$}", c.home)
	if cfg.Queue != nil {
		c.payoutRoutes(mux)
	}
	if cfg.Tracker != nil {
		c.paymentRoutes(mux)
	}
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusForbidden, "This request came from another site (a cross-origin POST): nothing was done.")
	}))
	return headers(csrf.Handler(c.authorize(mux))), nil
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// contentSecurityPolicy: the console's own style sheet, forms posting to
// itself, nothing else (no script at all, no framing).
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

// headers sets the browser-safety headers on every answer.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

type actorKey struct{}

// authorize admits a request only with the actor Config.Authorize names,
// and refuses every POST in read-only mode.
func (c *console) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/static/style.css" {
			next.ServeHTTP(w, r)
			return
		}
		a, err := c.cfg.Authorize(r)
		if err != nil || a.ID == "" {
			c.fail(w, r, http.StatusForbidden, "You are not allowed to use this console.")
			return
		}
		if c.cfg.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
			c.fail(w, r, http.StatusForbidden, "This console is read-only: nothing was done.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, a)))
	})
}

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

// require answers 403 unless the request's actor has role; it reports
// whether the caller may go on.
func (c *console) require(w http.ResponseWriter, r *http.Request, role Role) bool {
	if c.may(r, role) {
		return true
	}
	c.fail(w, r, http.StatusForbidden, fmt.Sprintf("This needs the %s role: nothing was done.", role))
	return false
}

// home sends the reader to the first list there is.
func (c *console) home(w http.ResponseWriter, r *http.Request) {
	to := "/payments"
	if c.cfg.Queue != nil {
		to = "/payouts"
	}
	http.Redirect(w, r, prefix(r)+to, http.StatusSeeOther)
}

// prefix is the path the console is mounted under: what http.StripPrefix
// removed from the request's path ("" at the root).
func prefix(r *http.Request) string {
	full := r.URL.Path
	if r.RequestURI != "" {
		if p, _, _ := strings.Cut(r.RequestURI, "?"); p != "" {
			full = p
		}
	}
	esc := r.URL.EscapedPath()
	if p, ok := strings.CutSuffix(full, esc); ok && !strings.HasPrefix(p, "//") { // never a link to another host
		return strings.TrimSuffix(p, "/")
	}
	return ""
}

// serveStyle serves the embedded style sheet.
func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(styleSheet)
}
