package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

func TestMain(m *testing.M) { os.Exit(pgstoretest.Main(m)) }

func TestParseUsers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want int
	}{
		{"alice:pw:approver,operator bob:pw2:viewer", true, 2},
		{"", false, 0},
		{"alice:pw", false, 0},
		{"alice::viewer", false, 0},
		{"alice:pw:admin", false, 0},
	} {
		users, err := parseUsers(tc.in)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.in, err)
		assert.Len(t, users, tc.want)
		if err != nil {
			assert.NotContains(t, err.Error(), "pw", "no password in an error")
		}
	}
}

// The example admits only its users, under /ops/, with their roles.
func TestExampleBasicAuth(t *testing.T) {
	pool := pgstoretest.Need(t).Pool(t, 4)
	ctx := context.Background()
	_, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, CreateTable: true})
	require.NoError(t, err)
	_, err = pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, CreateTable: true})
	require.NoError(t, err)
	users, err := parseUsers("alice:pw:approver vic:v:viewer")
	require.NoError(t, err)
	h, err := newHandler(ctx, pool, users, false)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		user, pass string
		code       int
	}{
		{"", "", http.StatusUnauthorized},
		{"alice", "wrong", http.StatusUnauthorized},
		{"mallory", "pw", http.StatusUnauthorized},
		{"alice", "pw", http.StatusOK},
		{"vic", "v", http.StatusOK},
	} {
		req, err := http.NewRequest("GET", srv.URL+"/ops/payouts", nil)
		require.NoError(t, err)
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode, "%s/%s", tc.user, tc.pass)
	}
}
