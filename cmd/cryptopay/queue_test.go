package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// list runs 'payout queue' with args and decodes its JSON.
func (qf *queueFixture) list(t *testing.T, args ...string) []intentOut {
	t.Helper()
	r := qf.run(append([]string{"payout", "queue"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var out []intentOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	return out
}

func orderIDs(ins []intentOut) []string {
	ids := []string{}
	for _, in := range ins {
		ids = append(ids, in.OrderID)
	}
	return ids
}

// A file enqueued with no approval flag is held by the application's
// workers above their threshold; list and filter by state, approve,
// reject, and the refusals of each.
func TestPayoutQueueOperate(t *testing.T) {
	qf := setupQueue(t)
	row := func(id, amount string) []string {
		return []string{id, "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", amount, "usdt", "tron", "c1", "203.0.113.7", "false", "", ""}
	}
	r := qf.run("payout", "batch", "--actor", "carol", csvFile(t, batchHeader, row("q-1", "10"), row("q-2", "900"), row("q-3", "950"), row("q-4", "20")))
	require.Equal(t, 0, r.code, r.stderr)
	worker := qf.queue(t, qf.srv.Client(), pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(500)}})
	stop := runWorker(t, worker)
	for _, id := range []string{"q-1", "q-4"} {
		qf.waitState(t, id, pgstore.StateCreated)
	}
	for _, id := range []string{"q-2", "q-3"} {
		qf.waitState(t, id, pgstore.StateNeedsApproval)
		assert.Zero(t, qf.srv.PayoutsWithOrderID(id), "held by the worker, not sent")
	}
	stop() // the approved intent stays queued for the checks below

	assert.Equal(t, []string{"q-1", "q-2", "q-3", "q-4"}, orderIDs(qf.list(t)))
	assert.Equal(t, []string{"q-2", "q-3"}, orderIDs(qf.list(t, "--state", "needs_approval")))
	assert.Equal(t, []string{"q-1", "q-2", "q-3", "q-4"}, orderIDs(qf.list(t, "--state", "created,needs_approval")))
	assert.Equal(t, []string{"q-3", "q-4"}, orderIDs(qf.list(t, "list", "--after", "q-2", "--limit", "5")), "pages")
	assert.Equal(t, []string{"q-1"}, orderIDs(qf.list(t, "--limit", "1")))
	got := qf.list(t, "--state", "needs_approval")[0]
	assert.Equal(t, "900", got.Amount, "an exact decimal string")
	assert.Equal(t, "needs_approval", got.State)

	// Four eyes: carol enqueued it, so her approval does not count; alice's
	// counts once; bob's queues it.
	for _, step := range []struct {
		actor, stdout, stderr string
		code                  int
		state                 pgstore.IntentState
	}{
		{"carol", "", "carol\" enqueued \"q-2\"", exitNo, pgstore.StateNeedsApproval},
		{"alice", "q-2: approval 1 of 2 recorded: it waits for another person's approval\n", "", exitOK, pgstore.StateNeedsApproval},
		{"alice", "", "approved \"q-2\" already", exitNo, pgstore.StateNeedsApproval},
		{"", "", "invalid actor: is empty", exitUsage, pgstore.StateNeedsApproval},
		{"bob", "q-2: approved: queued to be sent\n", "", exitOK, pgstore.StateQueued},
	} {
		qf.login = "os-" + step.actor // each person at their own account: see TestPayoutQueueFourEyesOneOSUser
		r = qf.run("payout", "queue", "approve", "q-2", "--actor", step.actor, "--note", "KYC checked")
		assert.Equal(t, step.code, r.code, "%s: %s", step.actor, r.stderr)
		assert.Equal(t, step.stdout, r.stdout, step.actor)
		assert.Contains(t, r.stderr, step.stderr, step.actor)
		assert.Equal(t, step.state, qf.state(t, "q-2").State, step.actor)
	}
	qf.login = ""
	assert.Equal(t, []string{"alice", "bob"}, qf.state(t, "q-2").ApprovedBy)
	var shown intentDetail
	r = qf.run("payout", "queue", "show", "q-2")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	assert.Equal(t, "carol", shown.EnqueuedBy)
	assert.Equal(t, []string{"alice", "bob"}, shown.ApprovedBy)
	var who []string
	for _, e := range shown.History {
		if e.ActorID != "" { // the workers' rows name no one
			who = append(who, e.ActorID)
		}
	}
	assert.Equal(t, []string{"carol", "alice", "bob"}, who, "each approval names its approver")
	runWorker(t, worker) // restarted: the approval is on record, so it sends q-2, once
	qf.waitState(t, "q-2", pgstore.StateCreated)
	assert.Equal(t, 1, qf.srv.PayoutsWithOrderID("q-2"))

	r = qf.run("payout", "queue", "reject", "q-3")
	assert.Equal(t, exitUsage, r.code, "a rejection needs a reason")
	assert.Contains(t, r.stderr, "--reason is required")
	r = qf.run("payout", "queue", "reject", "q-3", "--actor", "bob", "--reason", "bob: unknown customer")
	require.Equal(t, 0, r.code, r.stderr)
	in := qf.state(t, "q-3")
	assert.Equal(t, pgstore.StateRejected, in.State)
	assert.Equal(t, "bob: unknown customer", in.Note)
	assert.True(t, in.CallbackDue, "the CLI has no OnFinal: the application's workers run it")
	r = qf.cli(terms{stdout: true}, "payout", "queue", "show", "q-3")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OnFinal has not run yet")

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"approve a created intent", []string{"approve", "q-1"}, exitNo, "is not needs_approval"},
		{"reject a rejected intent", []string{"reject", "q-3", "--reason", "again"}, exitNo, "is not needs_approval"},
		{"retry an intent that is not parked", []string{"retry", "q-1", "--note", "x"}, exitNo, "is not parked"},
		{"no such intent", []string{"approve", "nope"}, exitFailed, "no payout intent with this orderId"},
		{"show no such intent", []string{"show", "nope"}, exitFailed, "no payout intent with this orderId"},
		{"unknown state", []string{"--state", "pending"}, exitUsage, `--state "pending": want one of needs_approval, queued`},
		{"limit too large", []string{"--limit", "10001"}, exitUsage, "--limit must be 1 to 10000"},
		{"no order id", []string{"approve"}, exitUsage, "want 1 argument(s), got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := qf.run(append([]string{"payout", "queue"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
	assert.Equal(t, pgstore.StateCreated, qf.state(t, "q-1").State, "the refusals changed nothing")
	assert.Equal(t, pgstore.StateRejected, qf.state(t, "q-3").State)
}

// A parked intent: listed with its verdict and error, shown with what to
// do, retried by the operator after checking, then sent once and paid.
func TestPayoutQueueParkedRetry(t *testing.T) {
	qf := setupQueue(t)
	worker := qf.queue(t, qf.srv.Client(), pgstore.Guardrails{})
	qf.srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true}) // not processed
	qf.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 500, Times: 1 << 20})
	r := qf.run("payout", "batch", csvFile(t, batchHeader, batchRecord("p", 1)))
	require.Equal(t, 0, r.code, r.stderr)
	runWorker(t, worker)
	qf.waitState(t, "p-00001", pgstore.StateParked)

	parked := qf.list(t, "--state", "parked")
	require.Len(t, parked, 1)
	assert.Equal(t, "still_unknown", parked[0].Verdict)
	assert.NotEmpty(t, parked[0].LastError)
	assert.Equal(t, 1, parked[0].Attempts)
	assert.NotEmpty(t, parked[0].AttemptedAt)

	r = qf.cli(terms{stdout: true}, "payout", "queue", "--state", "parked")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `ORDER ID\s+STATE\s+AMOUNT`, r.stdout)
	assert.Regexp(t, `p-00001\s+parked\s+2\.000002\s+usdt\s+tron\s+1\s+-\s+still_unknown`, r.stdout)
	r = qf.cli(terms{stdout: true}, "payout", "queue", "show", "p-00001")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `State\s+parked \(the queue could not tell whether the payout was created`, r.stdout)
	assert.Regexp(t, `Verdict\s+still_unknown\n`, r.stdout)
	assert.Regexp(t, `Attempts\s+1\n`, r.stdout)

	r = qf.run("payout", "queue", "retry", "p-00001")
	assert.Equal(t, exitUsage, r.code, "a retry needs a note of who checked")
	assert.Equal(t, 0, qf.srv.PayoutCount())

	// The operator checked the dashboard: no payout. The list still fails
	// (cleared, it would let the queue find the absence by itself); the
	// new attempt's payout is followed by its id.
	r = qf.run("payout", "queue", "retry", "p-00001", "--actor", "carol", "--note", "carol: no payout in the dashboard, ticket 123")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "p-00001: queued for a new attempt\n", r.stdout)
	qf.waitState(t, "p-00001", pgstore.StateCreated)
	require.NoError(t, qf.srv.SetPayoutStatus(qf.srv.PayoutIDsWithOrderID("p-00001")[0], "processing"))
	require.NoError(t, qf.srv.SetPayoutStatus(qf.srv.PayoutIDsWithOrderID("p-00001")[0], "paid"))
	qf.waitState(t, "p-00001", pgstore.StatePaid)
	assert.Equal(t, 1, qf.srv.PayoutsWithOrderID("p-00001"), "one payout")

	var shown intentDetail
	r = qf.run("payout", "queue", "show", "p-00001")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	assert.Equal(t, "paid", shown.State)
	assert.Equal(t, 2, shown.Attempts)
	assert.Equal(t, qf.srv.PayoutIDsWithOrderID("p-00001")[0], shown.PayoutID)
	assert.Equal(t, "paid", shown.PayoutStatus)
	assert.Contains(t, shown.Note, "carol")
	// The history: every change and the operator's retry with its note
	// (a look at the parked intent that changed nothing but its verdict,
	// parked -> parked, depends on how many the backoff allowed: skipped).
	var changes []string
	for _, e := range shown.History {
		if e.From == e.To {
			continue
		}
		changes = append(changes, e.Actor+":"+e.From+">"+e.To)
		if e.Actor == "operator" {
			assert.Contains(t, e.Note, "carol")
		}
	}
	assert.Equal(t, []string{"enqueue:>queued", "worker:queued>sending", "worker:sending>reconciling", "worker:reconciling>parked",
		"operator:parked>queued", "worker:queued>sending", "worker:sending>created", "worker:created>paid"}, changes)
	r = qf.cli(terms{stdout: true}, "payout", "queue", "show", "p-00001")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `History:\n\s*AT\s+BY\s+WHO\s+CHANGE`, r.stdout)
	assert.Regexp(t, `operator\s+carol\s+parked -> queued\s+1`, r.stdout, "the table names who retried it")
}

// Values from the database are printed with no control character: in
// tables, in the detail view and in JSON. Validate refuses such text in
// identifiers and keys, so the row is enqueued clean (with hostile
// additionalData, which may hold anything) and then altered in the table,
// as a row written by another program could be.
func TestPayoutQueueOutputIsSafe(t *testing.T) {
	qf := setupQueue(t)
	hostile := "\x1b]8;;http://evil\x07click\x1b[2J\u202e\u009b31m\n" // no \r: a CSV reads \r\n in a field as \n
	rec := batchRecord("h", 1)
	rec[8] = hostile
	r := qf.run("payout", "batch", csvFile(t, batchHeader, rec))
	require.Equal(t, 0, r.code, r.stderr)
	id := "h-1\x1b[31m\u202e\u009b"
	_, err := qf.pool.Exec(t.Context(), "UPDATE "+qf.table+" SET order_id = $1, currency = $2, network = $3, customer_id = $4 WHERE order_id = $5",
		id, "usdt"+hostile, "tron"+hostile, "c"+hostile, rec[0])
	require.NoError(t, err)
	for _, tm := range []terms{{stdout: true}, {}} {
		for _, args := range [][]string{{"payout", "queue"}, {"payout", "queue", "show", id}, {"payout", "queue", "approve", id}} {
			r := qf.cli(tm, args...)
			assert.NotEmpty(t, r.stdout+r.stderr, args) // and assertClean checked both
		}
	}
	r = qf.cli(terms{stdout: true}, "payout", "batch", "--dry-run", csvFile(t, batchHeader, rec), "--max-amount", "usdt=1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "max_amount")
	// A hostile guardrail key is refused (not a canonical key), its text shown clean.
	r = qf.cli(terms{stdout: true}, "payout", "batch", "--dry-run", csvFile(t, batchHeader, rec), "--max-amount", "usdt"+hostile+"=1")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "for flag -max-amount")
}

// The database password is never printed: a password on the command line
// is refused without echo, and a failed connection's error does not carry
// it.
func TestPayoutQueueDatabaseURLSecret(t *testing.T) {
	qf := setupQueue(t)
	good := qf.env[envDatabaseURL]
	tests := []struct {
		name string
		env  string
		args []string
		code int
		want string
	}{
		{"password on the command line (URL)", "", []string{"--database-url", good}, exitUsage, "carries a password, and ps shows flags"},
		{"password on the command line (key/value)", "", []string{"--database-url", "host=127.0.0.1 password=" + dbPassword}, exitUsage, "carries a password"},
		{"no database", "", nil, exitUsage, "no database: set CRYPTOPAY_DATABASE_URL"},
		{"unparsable", "postgres://postgres:" + dbPassword + "@127.0.0.1:notaport/x", nil, exitUsage, "cannot be parsed; it is not shown"},
		{"connection refused", "postgres://postgres:" + dbPassword + "@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2", nil, exitFailed, "failed to connect"},
		{"wrong database", strings.Replace(good, "/postgres?", "/"+dbPassword+"?", 1), nil, exitFailed, "[REDACTED]"},
		{"password percent-encoded", fmt.Sprintf("postgres://postgres:%s%%2F@127.0.0.1:1/postgres?connect_timeout=2", dbPassword), nil, exitFailed, "failed to connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qf.env[envDatabaseURL] = tt.env
			t.Cleanup(func() { qf.env[envDatabaseURL] = good })
			r := qf.run(append([]string{"payout", "queue"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
}

// 'payout queue resolve' binds a parked intent to the payout the operator
// found in the dashboard, after the API's read of that id names the
// intent's orderId: then the workers follow it to paid, and nothing is
// sent again. A note is required; a payout of another order is refused
// (exit 1) and changes nothing.
func TestPayoutQueueResolve(t *testing.T) {
	qf := setupQueue(t)
	worker := qf.queue(t, qf.srv.Client(), pgstore.Guardrails{})
	qf.srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true}) // created, answer lost
	qf.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 500, Times: 1 << 20})
	r := qf.run("payout", "batch", csvFile(t, batchHeader, batchRecord("p", 1)))
	require.Equal(t, 0, r.code, r.stderr)
	runWorker(t, worker)
	qf.waitState(t, "p-00001", pgstore.StateParked)
	r = qf.run("payout", "batch", csvFile(t, batchHeader, batchRecord("p", 2)))
	require.Equal(t, 0, r.code, r.stderr)
	qf.waitState(t, "p-00002", pgstore.StateCreated)
	id := qf.srv.PayoutIDsWithOrderID("p-00001")[0]
	other := qf.srv.PayoutIDsWithOrderID("p-00002")[0]

	r = qf.run("payout", "queue", "resolve", "p-00001", "--payout-id", id)
	assert.Equal(t, exitUsage, r.code, "a resolve needs a note of who checked")
	r = qf.run("payout", "queue", "resolve", "p-00001", "--payout-id", other, "--note", "carol")
	assert.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stderr, "not the intent's")
	qf.waitState(t, "p-00001", pgstore.StateParked)

	r = qf.run("payout", "queue", "resolve", "p-00001", "--payout-id", id, "--note", "carol: dashboard shows it, ticket 124")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "p-00001: created")
	require.NoError(t, qf.srv.SetPayoutStatus(id, "processing"))
	require.NoError(t, qf.srv.SetPayoutStatus(id, "paid"))
	qf.waitState(t, "p-00001", pgstore.StatePaid)
	assert.Equal(t, 2, qf.srv.PayoutCount(), "nothing sent again")
	in, err := qf.q.Get(t.Context(), "p-00001")
	require.NoError(t, err)
	assert.Equal(t, id, in.PayoutID)
}

// Four eyes at the CLI: one operating-system user on one database role
// gives one approval, whatever --actor says; the refusal changes nothing
// and names the principal. Another OS user is another person.
func TestPayoutQueueFourEyesOneOSUser(t *testing.T) {
	qf := setupQueue(t)
	p := cryptopay.CreatePayoutParams{OrderID: "q-9", WalletAddress: "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", Amount: decimal.RequireFromString("900"),
		Currency: "usdt", Network: "tron", CustomerID: "c1", CustomerIP: "203.0.113.7"}
	held := qf.queue(t, nil, pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(500)}})
	require.NoError(t, pgx.BeginFunc(t.Context(), qf.pool, func(tx pgx.Tx) error {
		_, err := held.EnqueueBy(t.Context(), tx, "carol", []cryptopay.CreatePayoutParams{p})
		return err
	}))
	require.Equal(t, pgstore.StateNeedsApproval, qf.state(t, "q-9").State)
	r := qf.run("payout", "queue", "approve", "q-9", "--actor", "alice")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "q-9: approval 1 of 2 recorded: it waits for another person's approval\n", r.stdout)
	r = qf.run("payout", "queue", "approve", "q-9", "--actor", "bob")
	assert.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stderr, osLogin()+` as database role "postgres" approved "q-9" already`)
	in := qf.state(t, "q-9")
	assert.Equal(t, pgstore.StateNeedsApproval, in.State, "one approval")
	assert.Equal(t, []string{"alice"}, in.ApprovedBy)
	assert.Len(t, in.ApprovedPrincipals, 1)
	var shown intentDetail
	r = qf.run("payout", "queue", "show", "q-9")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	assert.Equal(t, []string{osLogin() + ` as database role "postgres"`}, shown.ApprovedPrincipals, "show names the principal")

	qf.login = "someone-else"
	r = qf.run("payout", "queue", "approve", "q-9", "--actor", "bob")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "q-9: approved: queued to be sent\n", r.stdout)
}
