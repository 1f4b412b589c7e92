package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// A mount prefix a browser could read as another host is refused by New
// (a typed error), and one read from a request is never written into a
// link or a redirect.
func TestMountPrefix(t *testing.T) {
	q := &pgstore.Queue{}
	for _, p := range []string{`/\evil.example`, "//evil.example", "/ops//x", "ops", "/ops/", "/ops/../x", "/./ops",
		"/o ps", "/ops?x=1", "/ops#x", "/%2F%2Fevil", "/\u202eops", "/ops\r\nSet-Cookie:x"} {
		t.Run("refused "+p, func(t *testing.T) {
			_, err := console.New(console.Config{Queue: q, Authorize: testAuthorize, Prefix: p})
			var pe *console.PrefixError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Prefix)
			assert.ErrorIs(t, err, console.ErrInvalidConfig)
		})
	}
	for _, p := range []string{"", "/ops", "/a/b-c_d.e~f"} {
		_, err := console.New(console.Config{Queue: q, Authorize: testAuthorize, Prefix: p})
		assert.NoError(t, err, p)
	}

	derived, err := console.New(console.Config{Queue: q, Authorize: testAuthorize})
	require.NoError(t, err)
	configured, err := console.New(console.Config{Queue: q, Authorize: testAuthorize, Prefix: "/ops"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		handler      http.Handler
		uri          string
		wantLocation string
	}{
		{"backslash prefix from the request", http.StripPrefix(`/\evil.example`, derived), `/\evil.example/`, "/payouts"},
		{"backslashes from the request", http.StripPrefix(`/\\evil.example`, derived), `/\\evil.example/`, "/payouts"},
		{"a plain prefix from the request", http.StripPrefix("/ops", derived), "/ops/", "/ops/payouts"},
		{"the configured prefix wins", http.StripPrefix(`/\evil.example`, configured), `/\evil.example/`, "/ops/payouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.Path, req.RequestURI = tc.uri, tc.uri
			req.Header.Set(actorHeader, viewer)
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, req)
			require.Equal(t, http.StatusSeeOther, rec.Code)
			assert.Equal(t, tc.wantLocation, rec.Header().Get("Location"))
		})
	}
}

// A note of several lines (a text area sends \r\n) is kept, its breaks as
// \n, and shown with them; another control character is still refused.
func TestMultiLineNote(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		for _, id := range []string{"ord-1", "ord-2"} {
			if _, err := r.tr.TrackOrder(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err := r.pool.Exec(ctx, "UPDATE "+r.tr.Table()+" SET anomaly = 'a second payment', needs_action = true")
	require.NoError(t, err)

	code, _ := r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"checked the dashboard\r\nsecond payment refunded"},
		"anomaly": {"a second payment"}})
	require.Equal(t, http.StatusSeeOther, code)
	moves, err := r.tr.Moves(ctx, "ord-1")
	require.NoError(t, err)
	require.Len(t, moves, 1)
	assert.Equal(t, "checked the dashboard\nsecond payment refunded", moves[0].Note)
	_, page := r.do(t, "GET", "/payment?id=ord-1", viewer, nil)
	assert.Contains(t, page, `<td class="note">checked the dashboard`+"\n"+`second payment refunded</td>`)

	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-2"}, "note": {"checked\x07the dashboard"}, "anomaly": {"a second payment"}})
	assert.Equal(t, http.StatusBadRequest, code, "another control character is refused")
	tp, err := r.tr.Get(ctx, "ord-2")
	require.NoError(t, err)
	assert.NotEmpty(t, tp.Anomaly, "nothing cleared")

	held := payout(1, "500")
	r.enqueue(t, held)
	code, _ = r.do(t, "POST", "/payout/approve", alice, url.Values{"id": {held.OrderID}, "note": {"KYC checked\r\ncall with the customer"}})
	require.Equal(t, http.StatusSeeOther, code)
	_, page = r.do(t, "GET", "/payout?id="+held.OrderID, viewer, nil)
	assert.Contains(t, page, "KYC checked\ncall with the customer</td>", "the approval's note keeps its lines")
}

// The search boxes show what was searched like all text: a bidi override
// is written out as \u202e, never echoed raw.
func TestSearchBoxEscaped(t *testing.T) {
	r := newRig(t)
	for _, path := range []string{"/payouts", "/payments"} {
		code, page := r.do(t, "GET", path+"?q=%E2%80%AEevil%07", viewer, nil)
		require.Equal(t, http.StatusOK, code, path)
		assert.NotContains(t, page, "\u202e", path)
		assert.NotContains(t, page, "\x07", path)
		assert.Contains(t, page, `value="\u202eevil\u0007"`, path)
	}
	code, page := r.do(t, "GET", "/payouts?currency=%E2%80%AEusdt&network=%E2%80%8Btron", viewer, nil)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, page, "\u202e")
	assert.NotContains(t, page, "\u200b")
}

// queryCounter is a pgx QueryTracer that counts the statements a pool
// runs.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingConsole is a console on the rig's queue table through a pool
// that counts its statements.
func (r *rig) countingConsole(t *testing.T) (http.Handler, *queryCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgstoretest.Need(t).DSN())
	require.NoError(t, err)
	counter := &queryCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q, err := pgstore.NewQueue(context.Background(), pgstore.QueueConfig{Pool: pool, Table: strings.Trim(r.q.Table(), `"`)})
	require.NoError(t, err)
	h, err := console.New(console.Config{Queue: q, Authorize: testAuthorize})
	require.NoError(t, err)
	return h, counter
}

// The bulk pages check the role before any work: a refused actor costs
// no statement (before, the confirmation page listed up to 10,000
// intents first).
func TestBulkRoleCheckedFirst(t *testing.T) {
	r := newRig(t)
	r.enqueue(t, payout(1, "500"), payout(2, "600"))
	h, counter := r.countingConsole(t)
	serve := func(method, target, actor string, form url.Values) int {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req := httptest.NewRequest(method, target, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set(actorHeader, actor)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		name, method, target, actor string
		form                        url.Values
	}{
		{"an operator's bulk approve page", "GET", "/payouts/bulk?action=approve", operator, nil},
		{"an approver's bulk retry page", "GET", "/payouts/bulk?action=retry", alice, nil},
		{"a viewer's bulk approve page", "GET", "/payouts/bulk?action=approve&currency=usdt", viewer, nil},
		{"a viewer's bulk approve", "POST", "/payouts/bulk", viewer, url.Values{"action": {"approve"}, "count": {"2"}}},
		{"an operator's bulk approve", "POST", "/payouts/bulk", operator, url.Values{"action": {"approve"}, "count": {"2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter.n.Store(0)
			assert.Equal(t, http.StatusForbidden, serve(tc.method, tc.target, tc.actor, tc.form))
			assert.Zero(t, counter.n.Load(), "statements before the refusal")
		})
	}
	counter.n.Store(0)
	assert.Equal(t, http.StatusOK, serve("GET", "/payouts/bulk?action=approve", alice, nil))
	assert.Positive(t, counter.n.Load(), "the counter counts: an approver's page reads the intents")
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, payout(1, "500").OrderID), "nothing moved")
}
