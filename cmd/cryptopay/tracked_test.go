package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// TestPaymentTracked: an operator lists the tracker's payments by state
// and need of action, and shows one with its history; the database
// password never appears.
func TestPaymentTracked(t *testing.T) {
	f, pool, table := setupTracked(t)
	tr := trackerOn(t, pool, table, f.srv.Client())
	partial := f.createPayment("o-tr-partial", "10", "")
	waiting := f.createPayment("o-tr-waiting", "10", "")
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		for _, p := range []*cryptopay.Payment{partial, waiting} {
			if _, err := tr.Track(context.Background(), tx, p); err != nil {
				return err
			}
		}
		_, err := tr.TrackOrder(context.Background(), tx, "o-tr-lost")
		return err
	}))
	cli := func(args ...string) result {
		r := f.run(append(args, "--tracker-table", table)...)
		assertClean(t, r)
		return r
	}
	// A payment just tracked shows its create answer's status (waiting);
	// one tracked by orderId alone none until it is first seen.
	for order, want := range map[string]string{"o-tr-waiting": "waiting", "o-tr-lost": ""} {
		r := cli("payment", "tracked", "show", order, "--output", "json")
		require.Equal(t, 0, r.code, r.stderr)
		var o trackedOut
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &o))
		assert.Equal(t, want, o.Status, order)
	}
	require.NoError(t, f.srv.Pay(partial.ID, decimal.RequireFromString("4")))
	runTrackerUntil(t, tr, "o-tr-partial", "paid_partial", func(tp *pgstore.TrackedPayment) bool {
		return tp.Status == cryptopay.PaymentPaidPartial
	})

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, []string{"o-tr-lost", "o-tr-partial", "o-tr-waiting"}},
		{"needs action", []string{"--needs-action"}, []string{"o-tr-partial"}},
		{"unmatched", []string{"--state", "unmatched"}, []string{"o-tr-lost"}},
		{"open or late", []string{"--state", "open,late"}, []string{"o-tr-partial", "o-tr-waiting"}},
		{"paged", []string{"--after", "o-tr-lost", "--limit", "1"}, []string{"o-tr-partial"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(append([]string{"payment", "tracked", "--output", "json"}, tt.args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			var got []trackedOut
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			var ids []string
			for _, o := range got {
				ids = append(ids, o.OrderID)
			}
			assert.Equal(t, tt.want, ids)
		})
	}

	r := cli("payment", "tracked", "show", "o-tr-partial", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var o trackedOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &o))
	assert.Equal(t, partial.ID, o.PaymentID)
	assert.Equal(t, "paid_partial", o.Status)
	assert.Equal(t, "4", o.PaidAmount)
	assert.True(t, o.NeedsAction)
	require.NotEmpty(t, o.History)
	assert.Equal(t, "paid_partial", o.History[len(o.History)-1].To)

	r = cli("payment", "tracked", "show", "o-tr-partial", "--output", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "paid_partial")
	assert.Contains(t, r.stdout, "4 of 10")

	// An anomaly (a webhook for another payment of the order) is listed as
	// needing action and cleared by an operator with a required note.
	other := f.createPayment("o-tr-other", "10", "")
	require.NoError(t, tr.PaymentChanged(context.Background(), &cryptopay.Payment{ID: other.ID, OrderID: "o-tr-waiting"}))
	r = cli("payment", "tracked", "--needs-action", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var flagged []trackedOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &flagged))
	require.Len(t, flagged, 2)
	assert.Equal(t, "o-tr-waiting", flagged[1].OrderID)
	assert.Contains(t, flagged[1].Anomaly, other.ID)
	r = cli("payment", "tracked", "clear-anomaly", "o-tr-waiting")
	assert.Equal(t, exitUsage, r.code, "--note is required")
	r = cli("payment", "tracked", "clear-anomaly", "o-tr-waiting", "--note", "bad\x1b[2Jnote")
	assert.Equal(t, exitUsage, r.code, "a note with control characters is refused")
	r = cli("payment", "tracked", "clear-anomaly", "o-tr-waiting", "--note", "second payment refunded", "--actor", "ana")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "anomaly cleared")
	r = cli("payment", "tracked", "show", "o-tr-waiting", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	o = trackedOut{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &o))
	assert.Empty(t, o.Anomaly)
	assert.False(t, o.NeedsAction)
	assert.Contains(t, o.Note, "second payment refunded")
	require.Len(t, o.Moves, 1, "the move names its actor")
	assert.Equal(t, "ana", o.Moves[0].ActorID)
	assert.Equal(t, "clear_anomaly", o.Moves[0].Action)
	r = cli("payment", "tracked", "show", "o-tr-waiting", "--output", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "ACTOR")
	assert.Contains(t, r.stdout, "ana")
	r = cli("payment", "tracked", "clear-anomaly", "o-tr-waiting", "--note", "again")
	assert.Equal(t, exitNo, r.code, "nothing left to clear")
	assert.Contains(t, r.stdout, "no anomaly")
	r = cli("payment", "tracked", "clear-anomaly", "nope", "--note", "n")
	assert.Equal(t, exitFailed, r.code)

	// Refusals: a bad state, an unknown order, a password on the command line.
	r = cli("payment", "tracked", "--state", "paid")
	assert.Equal(t, exitUsage, r.code)
	r = cli("payment", "tracked", "show", "nope")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "no tracked payment")
	r = f.run("payment", "tracked", "--database-url", "postgres://u:"+dbPassword+"@127.0.0.1/x")
	assertClean(t, r)
	assert.Equal(t, exitUsage, r.code)
}

// TestPaidText: before the first read no amount is known, and show says so
// instead of printing an empty amount "of 12 usdt".
func TestPaidText(t *testing.T) {
	tests := []struct {
		name string
		o    trackedOut
		want string
	}{
		{"read", trackedOut{PaidAmount: "4.5", PayAmount: "12", Currency: "usdt", Network: "trc20"}, "4.5 of 12 usdt on trc20"},
		{"read, nothing paid", trackedOut{PaidAmount: "0", PayAmount: "12", Currency: "usdt", Network: "trc20"}, "0 of 12 usdt on trc20"},
		{"not read, amount known", trackedOut{PayAmount: "12", Currency: "usdt"}, "not read yet (asks 12 usdt)"},
		{"not read, nothing known", trackedOut{}, "not read yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, paidText(tt.o))
		})
	}
}

// setupTracked is the CLI's fixture with a PostgreSQL database in
// CRYPTOPAY_DATABASE_URL (with a password, which must never be printed),
// a pool on it and a fresh tracker table name.
func setupTracked(t *testing.T) (*fixture, *pgxpool.Pool, string) {
	srv := pgstoretest.Need(t)
	f := setup(t)
	f.env[envDatabaseURL] = fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", dbPassword, srv.Port)
	return f, srv.Pool(t, 8), pgstoretest.Name("tracked")
}

// trackerOn is the application's tracker on table, reading through client.
func trackerOn(t *testing.T, pool *pgxpool.Pool, table string, client *cryptopay.Client) *pgstore.Tracker {
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{
		Pool: pool, Client: client, Table: table, CreateTable: true,
		OpenEvery: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	return tr
}

// runTrackerUntil runs tr until orderID's tracked payment meets cond (at
// most 30 s), then stops it.
func runTrackerUntil(t *testing.T, tr *pgstore.Tracker, orderID, what string, cond func(*pgstore.TrackedPayment) bool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tp, err := tr.Get(context.Background(), orderID)
		require.NoError(t, err)
		if cond(tp) {
			return
		}
		require.True(t, time.Now().Before(deadline), "no %s within 30 s", what)
		time.Sleep(10 * time.Millisecond)
	}
}
