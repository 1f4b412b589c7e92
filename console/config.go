package console

import (
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
	// bulk), clears payment anomalies and refunds payments that need
	// action (the refund's payout is then held for an approver).
	RoleOperator Role = "operator"
	// RoleApprover approves or rejects payouts held for approval (one by
	// one or in bulk), and accepts as paid or writes off a payment that
	// needs action. Four eyes: an intent needs the approvals of
	// pgstore.QueueConfig.Approvals distinct approvers.
	RoleApprover Role = "approver"
)

// Actor is who makes a request, as Config.Authorize says.
type Actor struct {
	// ID names the person in every history entry of their moves: a stable
	// user id or e-mail, not a display name. It is recorded and compared
	// in its canonical form (pgstore.CanonicalActor: case, width and
	// Unicode normalization folded; letters, digits and ASCII
	// punctuation, no spaces, at most 128 bytes): an id the profile
	// refuses can read but not move anything.
	ID string
	// Roles are what they may do (RoleViewer alone: read only).
	Roles []Role
}

// Can reports whether the actor has role r.
func (a Actor) Can(r Role) bool { return slices.Contains(a.Roles, r) }

// ErrInvalidConfig is New's error for a Config it cannot work with.
var ErrInvalidConfig = errors.New("console: invalid config")

// PrefixError is New's error for a Config.Prefix the console would not
// write into a link: one a browser could read as another host, or not a
// plain absolute path. It matches ErrInvalidConfig.
type PrefixError struct {
	Prefix string // as given (quoted in Error)
	Reason string
}

func (e *PrefixError) Error() string {
	return fmt.Sprintf("console: invalid config: Prefix %q %s", e.Prefix, e.Reason)
}

// Unwrap makes a PrefixError match ErrInvalidConfig.
func (e *PrefixError) Unwrap() error { return ErrInvalidConfig }

// prefixProblem says why p cannot start the console's links ("" if it
// can): "" or "/name[/name...]" of URL path characters, no empty, "." or
// ".." segment (so never "//"), no backslash (which browsers read as "/"),
// no control character, space, "?", "#" or "%" escape.
func prefixProblem(p string) string {
	if p == "" {
		return ""
	}
	if p[0] != '/' {
		return "does not start with /"
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "has an empty, \".\" or \"..\" segment (a link could leave the console or name another host)"
		}
		if i := strings.IndexFunc(seg, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~!$&'()*+,;=:@", r))
		}); i >= 0 {
			return "holds a character that is not a plain path character (a backslash is read as / by browsers)"
		}
	}
	return ""
}

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
	// Refunds, on the same Queue and Tracker, gives a payment that needs
	// action its refund, accept and write-off moves and the payments
	// list its "unresolved" filter (nil: neither). It needs Tracker.
	Refunds *pgstore.Refunds
	// ClaimURL and ClaimKey, both or neither, make the claim link the
	// console shows after a refund without a wallet (package
	// pgstore/claim: the URL its handler is mounted at and its key).
	// Without them the page says how to make the link with the CLI.
	// The key is a secret: it is never shown, only the links it signs.
	ClaimURL string
	ClaimKey []byte
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
	// Prefix is the path the console is mounted under, as given to
	// http.StripPrefix ("/ops"); every link and redirect starts with it.
	// Empty: read from each request (what StripPrefix removed). Either
	// way a prefix a browser could read as another host ("//evil.example",
	// "/\\evil.example") or that is not a plain absolute path is never
	// written: New refuses it (*PrefixError), and one read from a request
	// is dropped (links then start at "/").
	Prefix string
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
