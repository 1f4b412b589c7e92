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

// booksJSONOut is what 'books --output json' writes.
type booksJSONOut struct {
	Report  booksReportOut  `json:"report"`
	Items   []booksItemOut  `json:"items"`
	Summary booksSummaryOut `json:"summary"`
}

// readBooksCSV reads what 'books --output csv' writes: the report's head as
// comment lines, then the rows.
func readBooksCSV(t *testing.T, out string) [][]string {
	t.Helper()
	r := csv.NewReader(strings.NewReader(out))
	r.Comment = '#'
	recs, err := r.ReadAll()
	require.NoError(t, err, out)
	return recs
}

// usdtBalance reads 'books --output json' output and returns its usdt/tron
// balance item.
func usdtBalance(t *testing.T, stdout string) (booksItemOut, booksJSONOut) {
	t.Helper()
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	for _, it := range out.Items {
		if it.Section == "balances" && it.Currency == "usdt" && it.Network == "tron" {
			return it, out
		}
	}
	t.Fatalf("no usdt/tron balance in %s", stdout)
	return booksItemOut{}, out
}

// trackedPayment creates a payment of 10 for orderID at the fake and
// tracks it in a new tracker table, not run: the tracker, its table.
func trackedPayment(t *testing.T, qf *queueFixture, orderID string) (*pgstore.Tracker, string, *cryptopay.Payment) {
	t.Helper()
	tracked := pgstoretest.Name("tracked")
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: qf.pool, Table: tracked, CreateTable: true})
	require.NoError(t, err)
	p := qf.createPayment(orderID, "10", "")
	require.NoError(t, pgx.BeginFunc(context.Background(), qf.pool, func(tx pgx.Tx) error {
		_, err := tr.Track(context.Background(), tx, p)
		return err
	}))
	return tr, tracked, p
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
// the first line of the table; JSON and CSV list every orderId with
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
	assert.Equal(t, map[string]map[string]string{"payouts": {out.Items[0].Currency + "/" + out.Items[0].Network: amount}},
		out.Summary.DriftBySection)

	r = qf.run(append(args, "--output", "csv")...)
	require.Equal(t, exitNo, r.code)
	recs := readBooksCSV(t, r.stdout)
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
	// Every format says what did not finish: the CSV on stderr (its file
	// holds the header alone), the JSON in its summary.
	qf.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 200, Body: `{}`})
	r = qf.run("books", "--sections", "payouts", "--output", "csv")
	assert.Equal(t, exitNotYet, r.code, "stdout: %s stderr: %s", r.stdout, r.stderr)
	assert.Equal(t, [][]string{booksCSVHeader}, readBooksCSV(t, r.stdout), "the column names alone")
	assert.Contains(t, r.stderr, "payouts not finished: the payout list")
	qf.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 200, Body: `{}`})
	r = qf.run("books", "--sections", "payouts", "--output", "json")
	assert.Equal(t, exitNotYet, r.code, "stdout: %s stderr: %s", r.stdout, r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Contains(t, out.Summary.Unfinished["payouts"], "the payout list")

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
	it, _ := usdtBalance(t, r.stdout)
	assert.Equal(t, "balance_drift", it.Class)
	assert.Equal(t, "-0.000000000000000001", it.Delta)

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
// if nothing were wrong but unfinished, and JSON still ends with the
// summary, the stopped section named unfinished.
func TestBooksCommandStoppedAfterDrift(t *testing.T) {
	qf := booksFixture(t)
	_, tracked, _ := trackedPayment(t, qf, "bk-pay")
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
	for _, it := range out.Items {
		assert.NotEqual(t, "payments", it.Section, "%s: its read was stopped, not answered: no row (%s)", it.OrderID, it.Detail)
	}
}

// TestBooksCommandSumsTie: the CSV's delta column, summed per section,
// class, currency and network, is the JSON summary's totals to the digit;
// the items that are not drift have a delta of 0; the drift is summed per
// section (money out and money in apart), never netted across sections.
func TestBooksCommandSumsTie(t *testing.T) {
	qf := booksFixture(t) // a double payment, two payouts in flight
	qf.createPayout("bk-outside", "1.5")
	tr, tracked, p := trackedPayment(t, qf, "bk-pay")
	require.NoError(t, qf.srv.Pay(p.ID, decimal.RequireFromString("10"))) // the tracker never reads it
	_, err := qf.pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = now() - interval '1 hour'")
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond) // the settle time (1 ms) passes after the payment
	args := []string{"books", "--sections", "payouts,payments", "--tracker-table", tracked, "--settle", "1ms"}

	r := qf.run(append(args, "--output", "csv")...)
	require.Equal(t, exitNo, r.code, "stderr: %s", r.stderr)
	recs := readBooksCSV(t, r.stdout)
	type key struct{ section, class, currency, network string }
	sums, items := map[key]decimal.Decimal{}, map[key]int{}
	for _, rec := range recs[1:] {
		k := key{rec[0], rec[2], rec[10], rec[11]}
		sums[k] = sums[k].Add(decimal.RequireFromString(rec[6]))
		items[k]++
		if rec[3] == "false" {
			assert.Equal(t, "0", rec[6], "%s %s: not drift, nothing to book", rec[1], rec[2])
		}
	}

	r = qf.run(append(args, "--output", "json")...)
	require.Equal(t, exitNo, r.code, "stderr: %s", r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.Len(t, out.Summary.Totals, len(sums))
	for _, tot := range out.Summary.Totals {
		k := key{tot.Section, tot.Class, tot.Currency, tot.Network}
		assert.Equal(t, sums[k].String(), tot.Delta, "%+v", k)
		assert.Equal(t, items[k], tot.Items, "%+v", k)
	}
	amount := decimal.RequireFromString(batchRecord("bk", 1)[2])
	assert.Equal(t, map[string]map[string]string{
		"payouts":  {"usdt/tron": amount.Add(decimal.RequireFromString("1.5")).String()}, // the second payout and the one outside
		"payments": {"usdt/tron": "10"},
	}, out.Summary.DriftBySection)
}

// TestBooksCommandAdjust: a balance drift booked with 'books adjust' (its
// exact delta, an actor and a note) ties the next check (exit 0), the
// balance listed apart as adjusted; bad input books nothing (exit 64).
func TestBooksCommandAdjust(t *testing.T) {
	qf := setupQueue(t)
	tracked, books := pgstoretest.Name("tracked"), pgstoretest.Name("books")
	_, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: qf.pool, Table: tracked, CreateTable: true})
	require.NoError(t, err)
	args := []string{"books", "--sections", "payouts,payments,balances", "--tracker-table", tracked,
		"--balance-table", books, "--payout-debit", "created", "--payout-fees", "included", "--output", "json"}
	r := qf.run(args...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	qf.srv.DebitBalance("usdt", "tron", decimal.RequireFromString("0.25"))
	r = qf.run(args...)
	require.Equal(t, exitNo, r.code, "%s %s", r.stdout, r.stderr)

	adjust := []string{"books", "adjust", "--balance-table", books, "--section", "balances", "--currency", "usdt",
		"--network", "tron", "--actor", "alice", "--note", "debited by hand: ticket 42"}
	for _, bad := range [][]string{{"--amount", "-2.5e-1"}, {"--amount", "0"}, {"--amount", "-0.25", "--order-id", "o-1"}} {
		r = qf.run(append(adjust, bad...)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s %s", bad, r.stdout, r.stderr)
	}
	r = qf.run(append(adjust, "--amount", "-0.25", "--output", "table")...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	assert.Equal(t, "adjustment 1 booked: balances usdt/tron -0.25 by alice\n", r.stdout)

	r = qf.run(args...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	it, out := usdtBalance(t, r.stdout)
	assert.Equal(t, "adjusted", it.Class, it.Detail)
	assert.Equal(t, "0", it.Delta)
	assert.Equal(t, "-0.25", it.Adjusted)
	assert.Equal(t, 1, out.Summary.Counts["balances"]["adjusted"])
}

// TestBooksCommandReport: JSON and CSV carry the report's head, so a
// finance team can file it: when it ran and as of when, the sections, the
// window, the settings; the JSON summary says when it finished.
func TestBooksCommandReport(t *testing.T) {
	qf := setupQueue(t)
	args := []string{"books", "--sections", "payouts", "--since", "2026-11-01T00:00:00Z", "--settle", "10m", "--payout-fees", "included"}
	r := qf.run(append(args, "--output", "json")...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.True(t, strings.HasPrefix(r.stdout, `{"report": {"report":"cryptopay books"`), "the head comes first: %s", r.stdout)
	h := out.Report
	assert.Equal(t, []string{"payouts"}, h.Sections)
	assert.Contains(t, h.Window, "since 2026-11-01T00:00:00Z")
	assert.Equal(t, "10m0s", h.Settle)
	assert.Equal(t, "unset", h.PayoutDebit)
	assert.Equal(t, "included", h.PayoutFees)
	assert.Equal(t, qf.table, h.QueueTable)
	for _, at := range []string{h.StartedAt, h.AsOf, out.Summary.FinishedAt} {
		_, err := time.Parse(time.RFC3339Nano, at)
		assert.NoError(t, err, at)
	}

	r = qf.run(append(args, "--output", "csv")...)
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	lines := strings.Split(r.stdout, "\n")
	assert.Equal(t, "# report: cryptopay books", lines[0])
	for _, want := range []string{"# started_at: ", "# as_of: ", "# sections: payouts", "# window: payments tracked or changed since 2026-11-01",
		"# settle: 10m0s", "# payout_fees: included", "# queue_table: " + qf.table} {
		assert.Contains(t, r.stdout, "\n"+want, want)
	}
	assert.Equal(t, [][]string{booksCSVHeader}, readBooksCSV(t, r.stdout))
}

// TestBooksCommandPayoutLedger: --payout-ledger-sql compares your payout
// ledger with the queue's paid intents: rows under an orderId the queue
// does not know are drift (exit 1); without the payouts section it is a
// usage error.
func TestBooksCommandPayoutLedger(t *testing.T) {
	qf := setupQueue(t)
	ledger := pgstoretest.Name("payout_ledger")
	_, err := qf.pool.Exec(context.Background(), "CREATE TABLE "+ledger+" (order_id text, booked numeric); INSERT INTO "+ledger+" VALUES ('ghost', 5)")
	require.NoError(t, err)
	sql := "SELECT order_id, booked FROM " + ledger
	r := qf.run("books", "--sections", "payouts", "--payout-ledger-sql", sql, "--output", "json")
	require.Equal(t, exitNo, r.code, "%s %s", r.stdout, r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.Len(t, out.Items, 1)
	assert.Equal(t, booksItemOut{Section: "payout_ledger", OrderID: "ghost", Class: "ledger_only", Drift: true, Theirs: "5", Delta: "5",
		Ledger: "5", Detail: "the merchant's ledger books an orderId the queue does not know"}, out.Items[0])
	assert.True(t, out.Report.PayoutLedger)
	r = qf.run("books", "--sections", "payments", "--payout-ledger-sql", sql)
	assert.Equal(t, exitUsage, r.code)
}

// TestBooksCommandRefunds: a refund of an overpayment, approved and sent
// through the queue to the fake, then paid twice there (a duplicate
// payout, paid too) and reported with a changed amount: --sections
// payouts,refunds reports the refund paid twice (delta: the extra
// payout) and its payout unlike the refund (delta: the payout's amount
// minus the refund's), the payment itself matched (its refund counted
// once, at its amount), and exits 1.
func TestBooksCommandRefunds(t *testing.T) {
	qf := setupQueue(t)
	ctx := context.Background()
	q := qf.queue(t, qf.srv.Client(), pgstore.Guardrails{})
	tracked, refunds := pgstoretest.Name("tracked"), pgstoretest.Name("refunds")
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: qf.pool, Table: tracked, CreateTable: true})
	require.NoError(t, err)
	rf, err := pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: refunds, CreateTable: true})
	require.NoError(t, err)
	_, err = qf.pool.Exec(ctx, "INSERT INTO "+tracked+` (order_id, payment_id, pay_amount, currency, network, state, status,
paid_amount, needs_action, changes) VALUES ('o-bk-over', 'pay-1', 10, 'usdt', 'tron', 'closed', 'paid_over', 10.75, true, 1)`)
	require.NoError(t, err)
	f, _, err := rf.Create(ctx, pgstore.RefundParams{OrderID: "o-bk-over", Key: "ticket-1", Rule: pgstore.RefundExcess,
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", CustomerID: "c-1", CustomerIP: "203.0.113.9", Actor: "alice"})
	require.NoError(t, err)
	require.NoError(t, q.Approve(ctx, f.ID, "bob", ""))
	require.NoError(t, q.Approve(ctx, f.ID, "carol", ""))
	stop := runWorker(t, q)
	qf.waitState(t, f.ID, pgstore.StateCreated)
	stop()
	first := qf.srv.PayoutIDsWithOrderID(f.ID)[0]
	second, err := qf.srv.DuplicatePayout(first)
	require.NoError(t, err)
	for _, id := range []string{first, second} {
		for _, st := range []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutPaid} {
			require.NoError(t, qf.srv.SetPayoutStatus(id, st))
		}
	}
	require.NoError(t, qf.srv.SetPayoutAmount(first, decimal.RequireFromString("0.8")))

	r := qf.run("books", "--sections", "payouts,refunds", "--tracker-table", tracked, "--refunds-table", refunds, "--settle", "1ms",
		"--output", "json")
	require.Equal(t, exitNo, r.code, "stderr: %s", r.stderr)
	var out booksJSONOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	got := map[string]string{}
	for _, it := range out.Items {
		if it.Section == "refunds" {
			got[it.OrderID+" "+it.Class] = it.Delta
		}
	}
	assert.Equal(t, map[string]string{f.ID + " refund_paid_twice": "0.75", f.ID + " refund_payout_differs": "0.05",
		"o-bk-over matched": "0"}, got, r.stdout)
	assert.Equal(t, map[string]string{"usdt/tron": "0.8"}, out.Summary.DriftBySection["refunds"])

	r = qf.run("books", "--sections", "refunds")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "add payouts too")
}

// TestBooksCommandParksUnsentButListed: a queued intent whose orderId the
// provider lists is reported by `books --report-only` and left queued; the
// default run parks it (hold unsent_but_listed), `payout queue retry`
// refuses it, and `payout queue release` with the text shown queues it again.
func TestBooksCommandParksUnsentButListed(t *testing.T) {
	qf := setupQueue(t)
	rec := batchRecord("ul", 1)
	p := cryptopay.CreatePayoutParams{OrderID: rec[0], WalletAddress: rec[1], Amount: decimal.RequireFromString(rec[2]),
		Currency: rec[3], Network: rec[4], CustomerID: rec[5], CustomerIP: rec[6]}
	require.NoError(t, pgx.BeginFunc(context.Background(), qf.pool, func(tx pgx.Tx) error {
		_, err := qf.q.Enqueue(context.Background(), tx, p)
		return err
	}))
	_, err := qf.srv.Client().CreatePayout(context.Background(), p) // outside the queue
	require.NoError(t, err)

	r := qf.run("books", "--sections", "payouts", "--output", "json", "--report-only")
	require.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stdout, "not parked (a report-only check)")
	assert.Equal(t, pgstore.StateQueued, qf.state(t, p.OrderID).State)

	r = qf.run("books", "--sections", "payouts", "--output", "json")
	require.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stdout, "parked by this check")
	in := qf.state(t, p.OrderID)
	assert.Equal(t, pgstore.StateParked, in.State)
	assert.Equal(t, pgstore.HoldUnsentListed, in.Hold)

	r = qf.run("payout", "queue", "retry", p.OrderID, "--note", "no payout", "--actor", "carol")
	assert.Equal(t, exitNo, r.code, "retry refuses it: %s", r.stderr)
	assert.Contains(t, r.stderr, "books check")
	r = qf.run("payout", "queue", "release", p.OrderID, "--listed", in.LastError, "--note", "another order's payout", "--actor", "carol")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, pgstore.StateQueued, qf.state(t, p.OrderID).State)
	assert.Equal(t, 1, len(qf.srv.PayoutIDsWithOrderID(p.OrderID)), "nothing sent by the CLI")
}
