package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// booksJSONOut is what 'books --json' writes.
type booksJSONOut struct {
	Items   []booksItemOut  `json:"items"`
	Summary booksSummaryOut `json:"summary"`
}

// booksFixture is a queue with three payouts created at the fake, one of
// them paid twice (a second payout outside the queue), and a payout at
// the provider with no intent and a hostile status.
func booksFixture(t *testing.T) *queueFixture {
	t.Helper()
	qf := setupQueue(t)
	q := qf.queue(t, qf.srv.Client(), pgstore.Guardrails{})
	ps := make([]cryptopay.CreatePayoutParams, 3)
	for i, n := range []int{1, 2, 4} { // usdt (batchRecord's eth is not served on tron)
		rec := batchRecord("bk", n)
		ps[i] = cryptopay.CreatePayoutParams{OrderID: rec[0], WalletAddress: rec[1], Amount: decimal.RequireFromString(rec[2]),
			Currency: rec[3], Network: rec[4], CustomerID: rec[5], CustomerIP: rec[6]}
	}
	require.NoError(t, pgx.BeginFunc(context.Background(), qf.pool, func(tx pgx.Tx) error {
		_, err := q.EnqueueMany(context.Background(), tx, ps)
		return err
	}))
	stop := runWorker(t, q)
	for _, p := range ps {
		qf.waitState(t, p.OrderID, pgstore.StateCreated)
	}
	stop()
	_, err := qf.srv.DuplicatePayout(qf.srv.PayoutIDsWithOrderID(ps[0].OrderID)[0])
	require.NoError(t, err)
	return qf
}

// TestBooksCommand: the drift is found and exits 1; the double payment is
// the first line of the table; --json and --csv list every orderId with
// its class and exact amounts.
func TestBooksCommand(t *testing.T) {
	qf := booksFixture(t)
	args := []string{"books", "--sections", "payouts"}
	r := qf.run(append(args, "--output", "table")...)
	require.Equal(t, exitNo, r.code, "stderr: %s", r.stderr)
	lines := strings.Split(r.stdout, "\n")
	assert.True(t, strings.HasPrefix(lines[0], "CLASS"), r.stdout)
	assert.True(t, strings.HasPrefix(lines[1], "DOUBLE PAYMENT"), r.stdout)
	assert.Contains(t, lines[1], batchRecord("bk", 1)[0])
	assert.Contains(t, r.stdout, "1 drift, 2 in flight, 0 undecided")

	r = qf.run(append(args, "--output", "json")...)
	require.Equal(t, exitNo, r.code, "stderr: %s", r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.Len(t, out.Items, 3)
	amount := batchRecord("bk", 1)[2]
	assert.Equal(t, booksItemOut{Section: "payouts", OrderID: batchRecord("bk", 1)[0], Class: "double_payment", Drift: true,
		Ours: amount, Theirs: decimal.RequireFromString(amount).Mul(decimal.NewFromInt(2)).String(), Delta: amount,
		OurStatus: "created", TheirStatus: "created,created", Currency: out.Items[0].Currency, Network: out.Items[0].Network,
		OurWallet: batchRecord("bk", 1)[1], TheirWallet: batchRecord("bk", 1)[1], Payouts: 2,
		Detail: "the provider lists 2 payouts for this orderId"}, out.Items[0])
	for _, it := range out.Items[1:] {
		assert.Equal(t, "in_flight", it.Class, it.OrderID)
	}
	assert.Equal(t, 1, out.Summary.Drift)
	assert.Equal(t, map[string]string{out.Items[0].Currency + "/" + out.Items[0].Network: amount}, out.Summary.DriftAmount)

	r = qf.run(append(args, "--output", "csv")...)
	require.Equal(t, exitNo, r.code)
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 4)
	assert.Equal(t, booksCSVHeader, recs[0])
	assert.Equal(t, []string{batchRecord("bk", 1)[0], "double_payment", amount}, []string{recs[1][1], recs[1][2], recs[1][6]})
}

// TestBooksCommandExitCodes: 0 when the books tie, 2 when the list cannot
// be read to its end; server text is escaped on a terminal.
func TestBooksCommandExitCodes(t *testing.T) {
	qf := setupQueue(t)
	r := qf.run("books", "--sections", "payouts", "--output", "table")
	require.Equal(t, exitOK, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "0 drift, 0 in flight, 0 undecided")

	qf.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 200, Body: `{}`})
	r = qf.run("books", "--sections", "payouts", "--output", "table")
	assert.Equal(t, exitNotYet, r.code, "stdout: %s stderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "payouts not finished: the payout list")

	// A payout made outside the queue, with an orderId that would clear
	// the screen and reverse the text after it.
	body := `{"walletAddress":"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G","amount":1.5,"currency":"usdt","network":"tron",` +
		`"customerId":"c","customerIp":"203.0.113.7","orderId":"evil\u001b[2J\u202e"}`
	req, err := http.NewRequest(http.MethodPost, qf.srv.URL+"/v1/payout", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-api-key", qf.srv.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, format := range []string{"--output=csv", "--output=json", "--output=table"} {
		r = qf.cli(terms{stdout: true, stderr: true}, "books", "--sections", "payouts", format)
		assert.Equal(t, exitNo, r.code, "%s: %s %s", format, r.stdout, r.stderr)
		assert.Contains(t, strings.ToUpper(r.stdout), "PROVIDER", format)
		assert.Contains(t, r.stderr, "1/1 payouts", "%s: the progress bar on a terminal's stderr", format)
	}
	r = qf.run("books", "--json")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--json is no longer a flag: use --output json")
}

// TestBooksCommandBalances: the first run records the opening balances
// (exit 0), a balance debited by hand is drift to the digit (exit 1), and
// without the debit rule the balances are undecided (exit 2).
func TestBooksCommandBalances(t *testing.T) {
	qf := setupQueue(t)
	tracked := pgstoretest.Name("tracked")
	_, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: qf.pool, Table: tracked, CreateTable: true})
	require.NoError(t, err)
	args := []string{"books", "--sections", "payouts,payments,balances", "--tracker-table", tracked,
		"--balance-table", pgstoretest.Name("books"), "--output", "json"}
	rules := []string{"--payout-debit", "created", "--payout-fees", "excluded"}
	r := qf.run(append(args, rules...)...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, `"class":"opening_balance"`)

	qf.srv.DebitBalance("usdt", "tron", decimal.RequireFromString("0.000000000000000001"))
	r = qf.run(append(args, rules...)...)
	require.Equal(t, exitNo, r.code, "%s %s", r.stdout, r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	var found bool
	for _, it := range out.Items {
		if it.Section == "balances" && it.Currency == "usdt" && it.Network == "tron" {
			found = true
			assert.Equal(t, "balance_drift", it.Class)
			assert.Equal(t, "-0.000000000000000001", it.Delta)
		}
	}
	assert.True(t, found, r.stdout)

	r = qf.run(args...)
	assert.Equal(t, exitNotYet, r.code, "no debit rule: the balances are undecided, not compared")
	r = qf.run(append(args[:len(args)-1], "--sections", "balances")...)
	assert.Equal(t, exitUsage, r.code)
}

// TestBooksCommandNoDatabase: a database that cannot be reached means the
// check could not finish (exit 2); a missing table is configuration (64).
func TestBooksCommandNoDatabase(t *testing.T) {
	qf := setupQueue(t)
	r := qf.fixture.run("books", "--sections", "payouts", "--queue-table", "no_such_table")
	assert.Equal(t, exitUsage, r.code, "%s", r.stderr)
	f := setup(t)
	f.env[envDatabaseURL] = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"
	r = f.run("books", "--sections", "payouts")
	assert.Equal(t, exitNotYet, r.code, "%s", r.stderr)
	assert.Contains(t, r.stderr, "could not start")
}

// TestBooksCommandStoppedAfterDrift: a check stopped (SIGTERM, a cron
// job's timeout) after it found a double payment still exits 1, not 2 as
// if nothing were wrong but unfinished, and --json still ends with the
// summary, the stopped section named unfinished.
func TestBooksCommandStoppedAfterDrift(t *testing.T) {
	qf := booksFixture(t)
	tracked := pgstoretest.Name("tracked")
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: qf.pool, Table: tracked, CreateTable: true})
	require.NoError(t, err)
	p := qf.createPayment("bk-pay", "10", "")
	require.NoError(t, pgx.BeginFunc(context.Background(), qf.pool, func(tx pgx.Tx) error {
		_, err := tr.Track(context.Background(), tx, p)
		return err
	}))
	qf.srv.InjectFault(cryptopaytest.RouteGetPayment, cryptopaytest.Fault{Delay: time.Hour}) // the payment read hangs
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- qf.runWith(ctx, terms{}, strings.NewReader(""), &bytes.Buffer{}, "books", "--sections", "payouts,payments",
			"--queue-table", qf.table, "--tracker-table", tracked, "--output", "json")
	}()
	for deadline := time.Now().Add(60 * time.Second); qf.srv.Requests(cryptopaytest.RouteGetPayment) == 0; {
		require.False(t, time.Now().After(deadline), "the payment read never came")
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // stopped in the payments section, after the payouts section found the double payment
	r := <-done
	assert.Equal(t, exitNo, r.code, "stdout: %s stderr: %s", r.stdout, r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, "double_payment", out.Items[0].Class)
	assert.Equal(t, 1, out.Summary.Drift)
	assert.Contains(t, out.Summary.Unfinished, "payments")
	assert.False(t, out.Summary.Clean)
}
