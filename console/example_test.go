package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Mount the console under /ops/ of the merchant's server. Authorize maps
// the user the merchant's own login established to an actor; here a
// header set by a trusted proxy stands in for it.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://ops@127.0.0.1:1/shop") // connects lazily
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool})
	if err != nil {
		panic(err)
	}
	ops, err := console.New(console.Config{
		Queue:  q,
		Prefix: "/ops", // as given to http.StripPrefix below
		Authorize: func(r *http.Request) (console.Actor, error) {
			switch user := r.Header.Get("X-Forwarded-User"); user {
			case "alice@shop.example", "bob@shop.example":
				return console.Actor{ID: user, Roles: []console.Role{console.RoleApprover}}, nil
			case "":
				return console.Actor{}, fmt.Errorf("not signed in")
			default:
				return console.Actor{ID: user, Roles: []console.Role{console.RoleViewer}}, nil
			}
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", ops))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/ops/payouts", nil)) // nobody signed in
	fmt.Println(rec.Code, rec.Header().Get("Content-Security-Policy"))
	// Output: 403 default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'
}
