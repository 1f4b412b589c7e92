package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cryptopay/cryptopay-go/pgstore/claim"
)

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
	case cfg.Refunds != nil && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: Refunds needs the Tracker it refunds", ErrInvalidConfig)
	case (cfg.ClaimURL == "") != (len(cfg.ClaimKey) == 0):
		return nil, fmt.Errorf("%w: give ClaimURL and ClaimKey together, or neither", ErrInvalidConfig)
	}
	if cfg.ClaimURL != "" {
		if _, err := claim.Link(cfg.ClaimURL, cfg.ClaimKey, "refund-check", time.Now()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if why := prefixProblem(cfg.Prefix); why != "" {
		return nil, &PrefixError{Prefix: cfg.Prefix, Reason: why}
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
	return headers(c.mounted(csrf.Handler(c.authorize(mux)))), nil
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

// mounted records the mount prefix every link of the request starts
// with: Config.Prefix, or what StripPrefix removed, if it is safe to
// write (prefixProblem), else "".
func (c *console) mounted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := c.cfg.Prefix
		if p == "" {
			if p = requestPrefix(r); prefixProblem(p) != "" {
				p = ""
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), prefixKey{}, p)))
	})
}

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

// home sends the reader to the first list there is.
func (c *console) home(w http.ResponseWriter, r *http.Request) {
	to := "/payments"
	if c.cfg.Queue != nil {
		to = "/payouts"
	}
	http.Redirect(w, r, prefix(r)+to, http.StatusSeeOther)
}

// serveStyle serves the embedded style sheet.
func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(styleSheet)
}
