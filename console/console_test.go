package console_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

func TestMain(m *testing.M) { os.Exit(pgstoretest.Main(m)) }

// actorHeader names the test's actor: "id:role,role".
const actorHeader = "X-Test-Actor"

// testAuthorize is the merchant's Authorize of the tests: the actor and
// roles from actorHeader, none refused.
func testAuthorize(r *http.Request) (console.Actor, error) {
	id, roles, ok := strings.Cut(r.Header.Get(actorHeader), ":")
	if !ok || id == "" {
		return console.Actor{}, errors.New("who are you?")
	}
	a := console.Actor{ID: id}
	for _, role := range strings.Split(roles, ",") {
		a.Roles = append(a.Roles, console.Role(role))
	}
	return a, nil
}

// rig is a console test's world: PostgreSQL, the fake, a queue and a
// tracker on their own tables, and the console mounted at /ops/.
type rig struct {
	pool *pgxpool.Pool
	fake *cryptopaytest.Server
	q    *pgstore.Queue
	tr   *pgstore.Tracker
	rf   *pgstore.Refunds
	rft  string // the refunds' table
	srv  *httptest.Server
	base string // srv.URL + "/ops"
}

// bigAbove is the approval threshold of the tests' queue (usdt).
var bigAbove = decimal.NewFromInt(100)

func newRig(t testing.TB, edit ...func(*console.Config)) *rig {
	t.Helper()
	db := pgstoretest.Need(t)
	fake := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1_000_000)))
	t.Cleanup(fake.Close)
	r := &rig{pool: db.Pool(t, 16), fake: fake}
	ctx := context.Background()
	var err error
	r.q, err = pgstore.NewQueue(ctx, pgstore.QueueConfig{
		Pool: r.pool, Client: fake.Client(), Table: pgstoretest.Name("intents"), CreateTable: true,
		Lease: 4 * time.Second, SendTimeout: time.Second, PollInterval: 20 * time.Millisecond,
		FollowEvery: 30 * time.Millisecond, BackoffMin: 30 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
		ReconcileSettleTime: 300 * time.Millisecond, ReconcileClockSkew: time.Second,
		Guardrails: pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": bigAbove}},
	})
	require.NoError(t, err)
	r.tr, err = pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: r.pool, Client: fake.Client(), Table: pgstoretest.Name("tracked"), CreateTable: true})
	require.NoError(t, err)
	r.rft = pgstoretest.Name("refunds")
	r.rf, err = pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: r.q, Tracker: r.tr, Table: r.rft, CreateTable: true})
	require.NoError(t, err)
	cfg := console.Config{Queue: r.q, Tracker: r.tr, Refunds: r.rf, Authorize: testAuthorize}
	for _, e := range edit {
		e(&cfg)
	}
	h, err := console.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", h))
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	r.base = r.srv.URL + "/ops"
	return r
}

// payout is a payout intent's parameters; amount above bigAbove needs
// approval.
func payout(i int, amount string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{
		WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: decimal.RequireFromString(amount), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: fmt.Sprintf("wd-%06d", i),
	}
}

// enqueue enqueues ps by carol, in one transaction.
func (r *rig) enqueue(t testing.TB, ps ...cryptopay.CreatePayoutParams) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := r.q.EnqueueBy(ctx, tx, "carol", ps)
		return err
	}))
}

// state is the intent's state now.
func (r *rig) state(t testing.TB, orderID string) pgstore.IntentState {
	t.Helper()
	in, err := r.q.Get(context.Background(), orderID)
	require.NoError(t, err)
	return in.State
}

// run works the queue until the test ends.
func (r *rig) run(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.q.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// client makes requests as a browser would not: no Origin, no
// Sec-Fetch-Site, and no redirects followed.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request as actor and returns the status and body.
func (r *rig) do(t testing.TB, method, path, actor string, form url.Values, header ...string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, r.base+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if actor != "" {
		req.Header.Set(actorHeader, actor)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

const (
	viewer   = "vic:viewer"
	operator = "olga:operator"
	alice    = "alice:approver"
	bob      = "bob:approver"
)

func TestNewRefusesConfig(t *testing.T) {
	q := &pgstore.Queue{}
	for _, tc := range []struct {
		name string
		cfg  console.Config
	}{
		{"no authorize", console.Config{Queue: q}},
		{"nothing to show", console.Config{Authorize: testAuthorize}},
		{"page too large", console.Config{Queue: q, Authorize: testAuthorize, PageSize: 501}},
		{"negative bulk", console.Config{Queue: q, Authorize: testAuthorize, BulkMax: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := console.New(tc.cfg)
			assert.ErrorIs(t, err, console.ErrInvalidConfig)
		})
	}
}

// The server enforces the roles: each action is offered to, and taken
// from, only the role it needs; a refused POST is 403 and changes nothing.
func TestRoles(t *testing.T) {
	r := newRig(t)
	held, parked := payout(1, "500"), payout(2, "10")
	r.enqueue(t, held, parked)
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET state = 'parked', hold = 'max_attempts' WHERE order_id = $1", parked.OrderID)
	require.NoError(t, err)
	for _, tc := range []struct {
		actor       string
		approve     bool // sees and may take approve/reject
		retry       bool // sees and may take retry
		forbiddenOf int
	}{
		{viewer, false, false, 403},
		{operator, false, true, 403},
		{alice, true, false, 403},
	} {
		t.Run(tc.actor, func(t *testing.T) {
			code, page := r.do(t, "GET", "/payout?id="+held.OrderID, tc.actor, nil)
			require.Equal(t, 200, code, page)
			assert.Equal(t, tc.approve, strings.Contains(page, `id="act-approve"`))
			assert.Equal(t, tc.approve, strings.Contains(page, `id="act-reject"`))
			_, page = r.do(t, "GET", "/payout?id="+parked.OrderID, tc.actor, nil)
			assert.Equal(t, tc.retry, strings.Contains(page, `id="act-retry"`))
			_, page = r.do(t, "GET", "/payouts", tc.actor, nil)
			assert.Equal(t, tc.approve, strings.Contains(page, `id="bulk-approve"`))
			assert.Equal(t, tc.retry, strings.Contains(page, `id="bulk-retry"`))
			if tc.actor == viewer {
				assert.NotContains(t, page, "<form method=\"post\"", "a viewer sees no action")
			}
			if !tc.approve {
				code, _ = r.do(t, "POST", "/payout/approve", tc.actor, url.Values{"id": {held.OrderID}})
				assert.Equal(t, http.StatusForbidden, code)
				code, _ = r.do(t, "GET", "/payout/confirm?action=approve&id="+held.OrderID, tc.actor, nil)
				assert.Equal(t, http.StatusForbidden, code)
			}
			if !tc.retry {
				code, _ = r.do(t, "POST", "/payout/retry", tc.actor, url.Values{"id": {parked.OrderID}, "note": {"x"}})
				assert.Equal(t, http.StatusForbidden, code)
			}
		})
	}
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, held.OrderID), "the refused POSTs changed nothing")
	assert.Equal(t, pgstore.StateParked, r.state(t, parked.OrderID))
	hist, err := r.q.History(context.Background(), held.OrderID)
	require.NoError(t, err)
	assert.Len(t, hist, 1, "only the enqueue")

	code, _ := r.do(t, "GET", "/payouts", "", nil)
	assert.Equal(t, http.StatusForbidden, code, "Authorize refused: no page")
}

// Every unsafe request from another origin is 403 and changes nothing,
// whoever the actor; the same POST from the console's own origin works.
func TestCrossOriginPOST(t *testing.T) {
	r := newRig(t)
	p := payout(1, "500")
	r.enqueue(t, p)
	form := url.Values{"id": {p.OrderID}, "note": {"ok"}}
	for _, h := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "https://evil.example"},
	} {
		code, page := r.do(t, "POST", "/payout/approve", alice, form, h...)
		assert.Equal(t, http.StatusForbidden, code, h)
		assert.Contains(t, page, "another site", h)
	}
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, p.OrderID))
	in, err := r.q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Empty(t, in.ApprovedBy, "nothing recorded")
	code, _ := r.do(t, "POST", "/payout/approve", alice, form, "Sec-Fetch-Site", "same-origin", "Origin", r.srv.URL)
	assert.Equal(t, http.StatusSeeOther, code)
}

// Read-only: no action is offered, and every POST is 403, even an
// approver's.
func TestReadOnly(t *testing.T) {
	r := newRig(t, func(c *console.Config) { c.ReadOnly = true })
	p := payout(1, "500")
	r.enqueue(t, p)
	_, page := r.do(t, "GET", "/payout?id="+p.OrderID, "ann:approver,operator", nil)
	assert.Contains(t, page, `id="read-only"`)
	assert.NotContains(t, page, `id="act-`)
	code, _ := r.do(t, "POST", "/payout/approve", "ann:approver,operator", url.Values{"id": {p.OrderID}})
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, p.OrderID))
}

// Server text is escaped, with control and bidi characters shown as
// \uXXXX instead of obeyed; links carry the mount prefix.
func TestEscapedText(t *testing.T) {
	r := newRig(t)
	p := payout(1, "10")
	r.enqueue(t, p)
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET state = 'parked', last_error = $2 WHERE order_id = $1",
		p.OrderID, "<script>alert(1)</script> \u202egnp.exe\u200b\x07")
	require.NoError(t, err)
	for _, path := range []string{"/payouts", "/payout?id=" + p.OrderID} {
		_, page := r.do(t, "GET", path, viewer, nil)
		assert.Contains(t, page, `&lt;script&gt;alert(1)&lt;/script&gt; \u202egnp.exe\u200b\u0007`, path)
		assert.NotContains(t, page, "<script>", path)
		assert.NotContains(t, page, "\u202e", path)
		assert.Contains(t, page, `href="/ops/static/style.css"`, path)
		assert.NotContains(t, page, `href="/payout`, path)
	}
	code, page := r.do(t, "GET", "/payout?id=%E2%80%AEevil", viewer, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, page, `\u202eevil`)
}

// No secret reaches a page: with the database unreachable, the page says
// only that an error was logged, never the connection string's password.
func TestNoSecretOnErrorPage(t *testing.T) {
	const password = "pa55-w0rd-of-the-db"
	pool, err := pgxpool.New(context.Background(), "postgres://ops:"+password+"@127.0.0.1:1/shop?connect_timeout=1")
	require.NoError(t, err)
	defer pool.Close()
	q, err := pgstore.NewQueue(context.Background(), pgstore.QueueConfig{Pool: pool})
	require.NoError(t, err)
	var logged strings.Builder
	h, err := console.New(console.Config{Queue: q, Authorize: testAuthorize,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	require.NoError(t, err)
	for _, path := range []string{"/payouts", "/payout?id=wd-1", "/payouts/bulk?action=approve"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set(actorHeader, alice)
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusInternalServerError, rec.Code, path)
		assert.Contains(t, rec.Body.String(), "in the server&#39;s log", path)
		assert.NotContains(t, rec.Body.String(), password, path)
		assert.NotContains(t, rec.Body.String(), "127.0.0.1:1", path)
	}
	assert.NotEmpty(t, logged.String(), "the errors went to the log")
}

// Keyset pages and the filters: every intent appears once across the
// pages; search finds by orderId, payout id or wallet.
func TestPayoutListPages(t *testing.T) {
	r := newRig(t, func(c *console.Config) { c.PageSize = 2 })
	var ps []cryptopay.CreatePayoutParams
	for i := range 5 {
		ps = append(ps, payout(i, "10"))
	}
	ps[4].WalletAddress = "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7"
	r.enqueue(t, ps...)
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET payout_id = 'po-77' WHERE order_id = $1", ps[3].OrderID)
	require.NoError(t, err)
	var seen []string
	next := "/payouts?state=queued"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5)
		code, page := r.do(t, "GET", next, viewer, nil)
		require.Equal(t, 200, code)
		seen = append(seen, orderIDsIn(page)...)
		next = ""
		if _, after, ok := strings.Cut(page, `id="next" href="/ops`); ok {
			next = html.UnescapeString(after[:strings.Index(after, `"`)])
		}
	}
	assert.Equal(t, []string{ps[0].OrderID, ps[1].OrderID, ps[2].OrderID, ps[3].OrderID, ps[4].OrderID}, seen)
	for q, want := range map[string]string{ps[2].OrderID: ps[2].OrderID, "po-77": ps[3].OrderID, ps[4].WalletAddress: ps[4].OrderID} {
		_, page := r.do(t, "GET", "/payouts?q="+url.QueryEscape(q), viewer, nil)
		assert.Equal(t, []string{want}, orderIDsIn(page), q)
	}
	_, page := r.do(t, "GET", "/payouts?state=parked", viewer, nil)
	assert.Empty(t, orderIDsIn(page))
	code, _ := r.do(t, "GET", "/payouts?state=bogus", viewer, nil)
	assert.Equal(t, http.StatusBadRequest, code)
}

// orderIDsIn lists the orderIds a list page links to, in order.
func orderIDsIn(page string) []string {
	var out []string
	for _, part := range strings.Split(page, `class="id" href="/ops/payout?id=`)[1:] {
		out = append(out, part[:strings.Index(part, `"`)])
	}
	return out
}

// The home page sends the reader to the list under the prefix the request
// came through, and never to another host.
func TestHomeRedirect(t *testing.T) {
	h, err := console.New(console.Config{Queue: &pgstore.Queue{}, Authorize: testAuthorize})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", h))
	for _, tc := range []struct {
		handler      http.Handler
		uri, path    string
		wantLocation string
	}{
		{mux, "/ops/", "/ops/", "/ops/payouts"},
		{h, "/", "/", "/payouts"},
		{h, "//evil.example/", "/", "/payouts"},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		req.RequestURI = tc.uri
		req.Header.Set(actorHeader, viewer)
		rec := httptest.NewRecorder()
		tc.handler.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusSeeOther, rec.Code, tc.uri)
		assert.Equal(t, tc.wantLocation, rec.Header().Get("Location"), tc.uri)
	}
}
