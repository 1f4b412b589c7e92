package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// A table that does not exist is said as such, with both fixes, exit 64,
// for the tracker's and the queue's commands; never the raw
// `relation "..." does not exist`, never the password.
func TestStoreTableMissing(t *testing.T) {
	f, _, _ := setupTracked(t)
	for _, args := range [][]string{
		{"payment", "tracked", "--tracker-table", "no_such_tracker"},
		{"payment", "tracked", "health", "--tracker-table", "no_such_tracker"},
		{"payout", "queue", "--queue-table", "no_such_queue"},
		{"payout", "queue", "health", "--queue-table", "no_such_queue"},
		{"payout", "queue", "approve", "o-1", "--queue-table", "no_such_queue"},
	} {
		r := f.run(args...)
		assertClean(t, r)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		for _, want := range []string{"does not exist", `database "postgres"`, "CreateTable", "DDL()"} {
			assert.Contains(t, r.stderr, want, args)
		}
		assert.NotContains(t, r.stderr, "SQLSTATE", args)
	}
}

// A tracker whose API key was rotated: 'payment tracked' lists the
// failing payments, 'show' says what failed and what to do, and 'health'
// sums it up in one line, exit 1.
func TestTrackedFailureAndHealth(t *testing.T) {
	f, pool, table := setupTracked(t)
	wrong, err := cryptopay.NewClient(f.srv.URL, "sk_rotated_key_0123456789abcdef")
	require.NoError(t, err)
	tr := trackerOn(t, pool, table, wrong)
	cli := func(args ...string) result {
		r := f.run(append(args, "--tracker-table", table)...)
		assertClean(t, r)
		return r
	}
	r := cli("payment", "tracked", "health")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "0 payments open, 0 due, 0 overdue, 0 failing, 0 need action")

	p := f.createPayment("o-tr-key", "10", "")
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		_, err := tr.Track(context.Background(), tx, p)
		return err
	}))
	runTrackerUntil(t, tr, "o-tr-key", "two failed reads", func(tp *pgstore.TrackedPayment) bool { return tp.LastFailure.Count >= 2 })

	r = cli("payment", "tracked", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var got []trackedOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 1)
	require.NotNil(t, got[0].LastFailure)
	assert.Equal(t, "unauthorized", got[0].LastFailure.Class)
	assert.True(t, got[0].LastFailure.Permanent)
	assert.GreaterOrEqual(t, got[0].LastFailure.Count, 2)
	r = cli("payment", "tracked", "--output", "table")
	assert.Contains(t, r.stdout, "FAILING")
	assert.Contains(t, r.stdout, "unauthorized x")
	r = cli("payment", "tracked", "show", "o-tr-key", "--output", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "401 unauthorized: no retry fixes this: check the API key;")
	r = cli("payment", "tracked", "health")
	assert.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 payment failing: 401 unauthorized: no retry fixes this: check the API key")
	r = cli("payment", "tracked", "health", "--output", "json")
	var h healthOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &h))
	assert.Equal(t, 1, h.Failing)
	require.NotNil(t, h.Commonest)
	assert.Equal(t, "unauthorized", h.Commonest.Class)
}

// 'payout queue health' on a queue with nothing wrong: exit 0.
func TestQueueHealth(t *testing.T) {
	qf := setupQueue(t)
	r := qf.run("payout", "queue", "health")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "0 payouts open, 0 due, 0 overdue, 0 failing, 0 need action")
}

// A webhook refused for a wrong secret in the shop's process shows in
// 'payment tracked health' and 'payout queue health' run as other
// processes (they read what the handler's WebhookRefused recorded in the
// database): "webhooks refused: 1 since ..., last reason token (401)",
// exit 1 while refusals continue; in JSON too.
func TestHealthShowsWebhookRefusals(t *testing.T) {
	qf := setupQueue(t)
	pool, table := qf.pool, pgstoretest.Name("tracked")
	tr := trackerOn(t, pool, table, nil)
	var logs bytes.Buffer // the handler logs on ServeHTTP's goroutine
	h, err := webhook.NewHandler(webhook.Config{
		Secret:    []byte("the-shop-secret-0123456789abcdef"),
		OnPayment: func(context.Context, *cryptopay.Payment) error { return nil },
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		OnRefused: func(ctx context.Context, r webhook.Refusal) {
			tr.WebhookRefused(ctx, r)
			qf.q.WebhookRefused(ctx, r)
		},
	})
	require.NoError(t, err)
	u, err := webhook.URL("https://shop.example/hook", []byte("a-rotated-secret-0123456789abcdef"), "o-1")
	require.NoError(t, err)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, strings.TrimPrefix(u, "https://shop.example"),
		strings.NewReader(`{"paymentId":"00000000-0000-4000-8000-000000000001","orderId":"o-1","status":"paid"}`)))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Contains(t, logs.String(), "cryptopay webhook: refused a delivery")
	assert.Contains(t, logs.String(), "reason=token")
	assert.Equal(t, int64(1), h.Refusals().Count)

	for _, c := range []struct {
		run  func(...string) result
		args []string
	}{
		{qf.fixture.run, []string{"payment", "tracked", "health", "--tracker-table", table}},
		{qf.run, []string{"payout", "queue", "health"}},
	} {
		run, args := c.run, c.args
		require.Eventually(t, func() bool { // written in the background, within a second
			r := run(args...)
			return strings.Contains(r.stdout, "webhooks refused: 1 since ")
		}, 30*time.Second, 50*time.Millisecond, args)
		r := run(args...)
		assertClean(t, r)
		assert.Equal(t, exitNo, r.code, "%v: %s", args, r.stdout)
		assert.Contains(t, r.stdout, "last reason token (401)", args)
		r = run(append(args, "--output", "json")...)
		assert.Equal(t, exitNo, r.code, r.stderr)
		var out healthOut
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		require.NotNil(t, out.WebhookRefusals, args)
		assert.Equal(t, int64(1), out.WebhookRefusals.Count)
		assert.Equal(t, "token", out.WebhookRefusals.Last)
		assert.Equal(t, http.StatusUnauthorized, out.WebhookRefusals.LastStatus)
		assert.Equal(t, map[string]int64{"token": 1}, out.WebhookRefusals.ByReason)
		assert.True(t, out.WebhookRefusals.Continuing)
	}
}
