package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// docGrants are the GRANT statements of docs/console.md's "Database
// grants", for the default tables and the role "console".
func docGrants(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/console.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Database grants\n")
	require.True(t, ok, "docs/console.md has a Database grants section")
	_, block, ok := strings.Cut(section, "```sql\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	var grants []string
	for line := range strings.Lines(block) {
		if line = strings.TrimSpace(line); line != "" {
			require.True(t, strings.HasPrefix(line, "GRANT ") && strings.HasSuffix(line, " TO console;"), line)
			grants = append(grants, line)
		}
	}
	require.NotEmpty(t, grants)
	return grants
}

// restricted is the rig's console on a pool of a role of its own that
// holds the grants given (written for the default tables and the role
// "console"): the rig's tables and the new role put in.
func (r *rig) restricted(t *testing.T, grants []string) *rig {
	t.Helper()
	ctx := context.Background()
	role := pgstoretest.Name("console")
	_, err := r.pool.Exec(ctx, "CREATE ROLE "+role+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = r.pool.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = r.pool.Exec(context.Background(), "DROP ROLE "+role)
	})
	names := strings.NewReplacer(pgstore.DefaultQueueTable, strings.Trim(r.q.Table(), `"`),
		pgstore.DefaultTrackerTable, strings.Trim(r.tr.Table(), `"`), pgstore.DefaultRefundsTable, r.rft, " TO console;", " TO "+role+";")
	for _, g := range grants {
		_, err := r.pool.Exec(ctx, names.Replace(g))
		require.NoError(t, err, names.Replace(g))
	}
	dsn := strings.Replace(pgstoretest.Need(t).DSN(), "user=postgres", "user="+role, 1)
	require.Contains(t, dsn, "user="+role)
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Client: r.fake.Client(), Table: strings.Trim(r.q.Table(), `"`),
		Guardrails: pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": bigAbove}}})
	require.NoError(t, err)
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: strings.Trim(r.tr.Table(), `"`)})
	require.NoError(t, err)
	rf, err := pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: r.rft})
	require.NoError(t, err)
	h, err := console.New(console.Config{Queue: q, Tracker: tr, Refunds: rf, Authorize: testAuthorize, ClaimURL: claimBase, ClaimKey: claimKey})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	out := *r
	out.srv, out.base = srv, srv.URL+"/ops"
	return &out
}

// approvalsOf is who approved orderID's intent so far.
func (r *rig) approvalsOf(t *testing.T, orderID string) []string {
	t.Helper()
	in, err := r.q.Get(context.Background(), orderID)
	require.NoError(t, err)
	return in.ApprovedBy
}

// The grants docs/console.md gives are enough for every page and every
// move, and the ones it gave before (SELECT and UPDATE) are not.
func TestGrants(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	held, rejected, parked, resolved := payout(1, "500"), payout(2, "600"), payout(3, "40"), payout(4, "41")
	bulkHeld, bulkParked, cancelled := payout(5, "700"), payout(6, "42"), payout(7, "43")
	r.enqueue(t, held, rejected, parked, resolved, bulkHeld, bulkParked, cancelled)
	found, err := r.fake.Client().CreatePayout(ctx, resolved) // its create answer was lost, say
	require.NoError(t, err)
	_, err = r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = 'parked', hold = 'server_acted', attempts = 1 WHERE order_id = ANY($1)",
		[]string{parked.OrderID, resolved.OrderID, bulkParked.OrderID})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := r.tr.TrackOrder(ctx, tx, "ord-1")
		return err
	}))
	_, err = r.pool.Exec(ctx, "UPDATE "+r.tr.Table()+" SET anomaly = 'a second payment', needs_action = true")
	require.NoError(t, err)
	r.trackAs(t, "over", cryptopay.PaymentPaidOver, "100", "101")
	r.trackAs(t, "partial", cryptopay.PaymentPaidPartial, "100", "40")
	r.trackAs(t, "short", cryptopay.PaymentPaidPartial, "100", "99")
	r.trackAs(t, "lost", cryptopay.PaymentPaidPartial, "100", "0.01")

	t.Run("SELECT and UPDATE alone", func(t *testing.T) {
		old := r.restricted(t, []string{
			"GRANT SELECT, UPDATE ON " + pgstore.DefaultQueueTable + " TO console;",
			"GRANT SELECT, UPDATE ON " + pgstore.DefaultTrackerTable + " TO console;",
		})
		code, _ := old.do(t, "POST", "/payout/approve", alice, url.Values{"id": {held.OrderID}})
		assert.Equal(t, http.StatusInternalServerError, code, "the approval's history row is refused")
		assert.Empty(t, r.approvalsOf(t, held.OrderID), "nothing recorded")
	})

	ops := r.restricted(t, docGrants(t))
	for _, page := range []string{"/payouts", "/payouts?currency=usdt&since=2026-01-01", "/payout?id=" + held.OrderID,
		"/payout/confirm?action=approve&id=" + held.OrderID, "/payouts/bulk?action=approve", "/payments?anomaly=1",
		"/payout/confirm?action=cancel&id=" + cancelled.OrderID, "/payment?id=ord-1", "/payment/confirm?action=clear-anomaly&id=ord-1",
		"/payments?unresolved=1", "/payment?id=over", "/payment/confirm?action=refund&id=over"} {
		code, body := ops.do(t, "GET", page, "root:approver,operator", nil)
		assert.Equal(t, http.StatusOK, code, "%s: %s", page, body)
	}
	for _, tc := range []struct {
		name, path, actor string
		form              url.Values
		bulk              string // the bulk confirmation page whose form (the set) is posted, with form
		want              int
	}{
		{"approve", "/payout/approve", alice, url.Values{"id": {held.OrderID}, "note": {"KYC checked"}}, "", http.StatusSeeOther},
		{"a second approval", "/payout/approve", bob, url.Values{"id": {held.OrderID}}, "", http.StatusSeeOther},
		{"reject", "/payout/reject", alice, url.Values{"id": {rejected.OrderID}, "reason": {"unknown customer"}}, "", http.StatusSeeOther},
		{"retry", "/payout/retry", operator, url.Values{"id": {parked.OrderID}, "note": {"no payout at the processor"}}, "", http.StatusSeeOther},
		{"resolve", "/payout/resolve", operator, url.Values{"id": {resolved.OrderID}, "payout-id": {found.ID}, "note": {"dashboard"}}, "", http.StatusSeeOther},
		{"cancel", "/payout/cancel", operator, url.Values{"id": {cancelled.OrderID}, "reason": {"customer closed the account"}}, "", http.StatusSeeOther},
		{"bulk approve", "/payouts/bulk", alice, url.Values{"count": {"1"}}, "action=approve", http.StatusOK},
		{"bulk retry", "/payouts/bulk", operator, url.Values{"count": {"1"}, "note": {"checked"}}, "action=retry", http.StatusOK},
		{"clear an anomaly", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"refunded"}, "anomaly": {"a second payment"}}, "", http.StatusSeeOther},
		{"refund to a claim", "/payment/refund", operator, url.Values{"id": {"over"}, "rule": {"excess"}, "idempotency-key": {"T-1"}, "customer-id": {"c-1"}}, "", http.StatusOK},
		{"refund to a wallet", "/payment/refund", operator, url.Values{"id": {"partial"}, "rule": {"all_paid"}, "idempotency-key": {"T-2"},
			"customer-id": {"c-2"}, "wallet": {"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"}, "customer-ip": {"203.0.113.7"}}, "", http.StatusOK},
		{"accept", "/payment/accept", alice, url.Values{"id": {"short"}, "note": {"let go"}}, "", http.StatusSeeOther},
		{"write off", "/payment/write-off", alice, url.Values{"id": {"lost"}, "note": {"too small to send"}}, "", http.StatusSeeOther},
	} {
		form := tc.form
		if tc.bulk != "" {
			form = ops.bulkForm(t, tc.actor, tc.bulk)
			for k, v := range tc.form {
				form[k] = v
			}
		}
		code, body := ops.do(t, "POST", tc.path, tc.actor, form)
		assert.Equal(t, tc.want, code, "%s: %s", tc.name, body)
	}
	for id, want := range map[string]pgstore.IntentState{held.OrderID: pgstore.StateQueued, rejected.OrderID: pgstore.StateRejected,
		parked.OrderID: pgstore.StateQueued, resolved.OrderID: pgstore.StateCreated, bulkHeld.OrderID: pgstore.StateNeedsApproval,
		bulkParked.OrderID: pgstore.StateQueued, cancelled.OrderID: pgstore.StateRejected} {
		assert.Equal(t, want, r.state(t, id), id)
	}
	assert.Equal(t, []string{"alice"}, r.approvalsOf(t, bulkHeld.OrderID), "the bulk approval is recorded")
	tp, err := r.tr.Get(ctx, "ord-1")
	require.NoError(t, err)
	assert.Empty(t, tp.Anomaly, "cleared")
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, pgstore.RefundID("partial", "T-2")), "the refund's payout, enqueued held")
	left, err := r.rf.Unresolved(ctx, "", 0)
	require.NoError(t, err)
	assert.Empty(t, left, "every refund, accept and write-off recorded its resolution (and ord-1 no longer needs action)")
}
