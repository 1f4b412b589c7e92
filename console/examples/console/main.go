// Command console serves the operator console for a merchant's payout
// queue and payment tracker, under /ops/, behind HTTP basic auth:
//
//	CRYPTOPAY_DATABASE_URL=postgres://ops@db/shop \
//	CONSOLE_USERS='alice:s3cret:approver,operator bob:0ther:approver vic:v13w:viewer' \
//	go run ./examples/console
//
// (from the console directory). CONSOLE_USERS lists name:password:roles,
// separated by spaces; roles are viewer, operator and approver, joined by
// commas. CONSOLE_ADDR is where it listens (default 127.0.0.1:8090);
// CONSOLE_READ_ONLY=1 hides every action. Behind the merchant's single
// sign-on the Authorize function would read the user its middleware
// established instead. Basic auth sends the password with every request:
// serve it over TLS (a reverse proxy) anywhere but loopback.
//
// It holds no API key: approving, rejecting and retrying only write the
// queue's table, and the application's workers send the payouts.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

// run serves the console until ctx ends.
func run(ctx context.Context, getenv func(string) string) error {
	users, err := parseUsers(getenv("CONSOLE_USERS"))
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, getenv("CRYPTOPAY_DATABASE_URL"))
	if err != nil {
		return errors.New("CRYPTOPAY_DATABASE_URL: not a connection string") // its text may hold the password
	}
	defer pool.Close()
	h, err := newHandler(ctx, pool, users, getenv("CONSOLE_READ_ONLY") == "1")
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: cmpOr(getenv("CONSOLE_ADDR"), "127.0.0.1:8090"), Handler: h,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	fmt.Printf("console: http://%s/ops/\n", srv.Addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// user is one entry of CONSOLE_USERS.
type user struct {
	hash  [32]byte // SHA-256 of the password: compared in constant time
	roles []console.Role
}

// parseUsers reads CONSOLE_USERS: name:password:role,role entries
// separated by spaces.
func parseUsers(s string) (map[string]user, error) {
	users := map[string]user{}
	for _, entry := range strings.Fields(s) {
		name, rest, ok1 := strings.Cut(entry, ":")
		pass, roles, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || name == "" || pass == "" {
			return nil, fmt.Errorf("CONSOLE_USERS: an entry is name:password:roles, not %q", name+":…")
		}
		u := user{hash: sha256.Sum256([]byte(pass))}
		for _, r := range strings.Split(roles, ",") {
			switch role := console.Role(r); role {
			case console.RoleViewer, console.RoleOperator, console.RoleApprover:
				u.roles = append(u.roles, role)
			default:
				return nil, fmt.Errorf("CONSOLE_USERS: %s: unknown role %q (viewer, operator, approver)", name, r)
			}
		}
		users[name] = u
	}
	if len(users) == 0 {
		return nil, errors.New("CONSOLE_USERS is empty: name:password:roles entries, separated by spaces")
	}
	return users, nil
}

// newHandler is the console on pool's queue and tracker (default tables),
// mounted under /ops/ behind basic auth for users.
func newHandler(ctx context.Context, pool *pgxpool.Pool, users map[string]user, readOnly bool) (http.Handler, error) {
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool})
	if err != nil {
		return nil, err
	}
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool})
	if err != nil {
		return nil, err
	}
	c, err := console.New(console.Config{Queue: q, Tracker: tr, ReadOnly: readOnly, Prefix: "/ops",
		Authorize: func(r *http.Request) (console.Actor, error) {
			name, pass, _ := r.BasicAuth()
			if u, ok := check(users, name, pass); ok {
				return console.Actor{ID: name, Roles: u.roles}, nil
			}
			return console.Actor{}, errors.New("unknown user")
		}})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/", basicAuth(users, http.StripPrefix("/ops", c)))
	return mux, nil
}

// check reports whether name and pass are a user's.
func check(users map[string]user, name, pass string) (user, bool) {
	u, ok := users[name]
	got := sha256.Sum256([]byte(pass))
	return u, subtle.ConstantTimeCompare(got[:], u.hash[:]) == 1 && ok
}

// basicAuth asks the browser for a user and password until they are one
// of users'.
func basicAuth(users map[string]user, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, pass, _ := r.BasicAuth()
		if _, ok := check(users, name, pass); !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="cryptopay console", charset="UTF-8"`)
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
