package claim_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	tronAddr  = "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"
	otherTron = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
	btcAddr   = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
)

var key = []byte("claim-test-key-0123456789abcdef-0123")

// world is a claim test's database: the queue, the tracker and the
// refunds on fresh tables, two payments overpaid, and the claim page.
type world struct {
	pool    *pgxpool.Pool
	queue   *pgstore.Queue
	refunds *pgstore.Refunds
	tables  [3]string
	h       http.Handler
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Need(t).Pool(t, 8)
	w := &world{pool: pool, tables: [3]string{pgtest.Name("intents"), pgtest.Name("tracked"), pgtest.Name("refunds")}}
	var err error
	w.queue, err = pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: w.tables[0], CreateTable: true})
	require.NoError(t, err)
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: w.tables[1], CreateTable: true})
	require.NoError(t, err)
	w.refunds, err = pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: w.queue, Tracker: tr, Table: w.tables[2], CreateTable: true})
	require.NoError(t, err)
	for _, o := range []string{"o1", "o2"} {
		_, err = pool.Exec(ctx, "INSERT INTO "+w.tables[1]+` (order_id, payment_id, pay_amount, currency, network, state, status,
paid_amount, needs_action) VALUES ($1, $2, 10, 'usdt', 'tron', 'closed', 'paid_over', 12.5, true)`, o, "pay-"+o)
		require.NoError(t, err)
	}
	w.h, err = claim.New(claim.Config{Refunds: w.refunds, Key: key})
	require.NoError(t, err)
	return w
}

// refund makes an unclaimed refund of orderID's excess and returns it
// with its claim link's query.
func (w *world) refund(t *testing.T, orderID string) (*pgstore.Refund, string) {
	t.Helper()
	return w.claimable(t, pgstore.RefundParams{OrderID: orderID, Key: "k", Rule: pgstore.RefundExcess, CustomerID: "cust-" + orderID, Actor: "alice"})
}

// claimable makes the unclaimed refund p and returns it with its claim
// link's query.
func (w *world) claimable(t testing.TB, p pgstore.RefundParams) (*pgstore.Refund, string) {
	t.Helper()
	f, _, err := w.refunds.Create(context.Background(), p)
	require.NoError(t, err)
	link, err := claim.Link("https://shop.example/refund", key, f.ID, f.ClaimUntil)
	require.NoError(t, err)
	u, err := url.Parse(link)
	require.NoError(t, err)
	return f, "?" + u.RawQuery
}

// snapshot is every row of the refunds and the queue, as text.
func (w *world) snapshot(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, w.pool.QueryRow(context.Background(), "SELECT concat((SELECT string_agg(r::text, ';' ORDER BY id) FROM "+
		w.tables[2]+" r), '|', (SELECT string_agg(q::text, ';' ORDER BY order_id) FROM "+w.tables[0]+" q))").Scan(&s))
	return s
}

func (w *world) do(method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/refund"+target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, req)
	return rec
}

func TestClaimHappyPath(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	f, q := w.refund(t, "o1")
	rec := w.do("GET", q, "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), "2.5 usdt")
	assert.Contains(t, rec.Body.String(), `<form method="post" id="claim">`)
	assert.Equal(t, "default-src 'none'; style-src 'sha256-", rec.Header().Get("Content-Security-Policy")[:38])
	assert.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"))

	rec = w.do("POST", q, "address="+tronAddr)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	next := rec.Header().Get("Location")
	require.True(t, strings.HasPrefix(next, "?t="))
	in, err := w.queue.Get(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Equal(t, tronAddr, in.Params.WalletAddress)
	assert.Equal(t, "2.5", in.Params.Amount.String())
	assert.Equal(t, "192.0.2.1", in.Params.CustomerIP, "httptest's client")

	// The status link follows the payout; the page reads its state.
	for _, tt := range []struct{ state, word string }{
		{"needs_approval", "Awaiting approval"}, {"queued", "Being sent"}, {"created", "Sent"}, {"paid", "Paid"}, {"failed", "Failed"},
	} {
		_, err := w.pool.Exec(ctx, "UPDATE "+w.tables[0]+" SET state = $2 WHERE order_id = $1", f.ID, tt.state)
		require.NoError(t, err)
		rec = w.do("GET", next, "")
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Contains(t, rec.Body.String(), `<p class="status" id="status">`+tt.word+`</p>`, tt.state)
		assert.NotContains(t, rec.Body.String(), "<form")
	}
	// The claim link, used, still shows the refund; it cannot claim again.
	rec = w.do("GET", q, "")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `id="status"`)
}

func TestClaimRefusals(t *testing.T) {
	w := newWorld(t)
	f, q := w.refund(t, "o1")
	_, q2 := w.refund(t, "o2")
	tok := strings.TrimPrefix(q, "?t=")
	tok, _ = url.QueryUnescape(tok)
	past, err := claim.Sign(key, f.ID, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	otherKey, err := claim.Sign([]byte("another-key-0123456789abcdef-0123"), f.ID, f.ClaimUntil)
	require.NoError(t, err)
	unknown, err := claim.Sign(key, "refund-nobody", f.ClaimUntil)
	require.NoError(t, err)
	flip := []byte(tok)
	flip[len(flip)-2] ^= 1 // one bit of the MAC
	tests := []struct {
		name, method, target, body string
		hdr                        []string
		code                       int
		says                       string
	}{
		{"no token", "POST", "", "address=" + tronAddr, nil, http.StatusForbidden, "not valid"},
		{"a MAC one bit off", "POST", "?t=" + url.QueryEscape(string(flip)), "address=" + tronAddr, nil, http.StatusForbidden, "not valid"},
		{"another key's token", "POST", "?t=" + url.QueryEscape(otherKey), "address=" + tronAddr, nil, http.StatusForbidden, "not valid"},
		{"an expired token", "POST", "?t=" + url.QueryEscape(past), "address=" + tronAddr, nil, http.StatusGone, "expired"},
		{"an expired token, read", "GET", "?t=" + url.QueryEscape(past), "", nil, http.StatusGone, "expired"},
		{"a refund that does not exist", "GET", "?t=" + url.QueryEscape(unknown), "", nil, http.StatusForbidden, "not valid"},
		{"a token too long", "GET", "?t=" + strings.Repeat("A", 5000), "", nil, http.StatusForbidden, "not valid"},
		{"a bitcoin address for a tron refund", "POST", q, "address=" + btcAddr, nil, http.StatusUnprocessableEntity, "not a valid tron address"},
		{"no address", "POST", q, "address=", nil, http.StatusUnprocessableEntity, "Enter the address"},
		{"a body too large", "POST", q, "address=" + strings.Repeat("T", 4096), nil, http.StatusRequestEntityTooLarge, "too large"},
		{"from another site", "POST", q, "address=" + tronAddr, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "this page"},
		{"another method", "PUT", q, "address=" + tronAddr, nil, http.StatusMethodNotAllowed, "only shows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.snapshot(t)
			rec := w.do(tt.method, tt.target, tt.body, tt.hdr...)
			assert.Equal(t, tt.code, rec.Code)
			assert.Contains(t, rec.Body.String(), tt.says)
			assert.NotContains(t, rec.Body.String(), "cust-", "no customer's data")
			assert.NotContains(t, rec.Body.String(), "o2")
			assert.Equal(t, before, w.snapshot(t), "nothing changed")
		})
	}

	// Reused: the first claim stands, the second changes nothing.
	require.Equal(t, http.StatusSeeOther, w.do("POST", q, "address="+tronAddr).Code)
	before := w.snapshot(t)
	rec := w.do("POST", q, "address="+otherTron) // a replay, another address
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Contains(t, rec.Body.String(), "claimed already")
	assert.Equal(t, before, w.snapshot(t))
	in, err := w.queue.Get(context.Background(), f.ID)
	require.NoError(t, err)
	assert.Equal(t, tronAddr, in.Params.WalletAddress)

	// The used link shows the address claimed; o2's page shows o2 only.
	rec = w.do("GET", q, "")
	assert.Contains(t, rec.Body.String(), tronAddr)
	assert.NotContains(t, rec.Body.String(), otherTron)
	rec = w.do("GET", q2, "")
	assert.NotContains(t, rec.Body.String(), tronAddr, "o1's address is not on o2's page")
}

func TestClaimStatusLinkCannotClaim(t *testing.T) {
	w := newWorld(t)
	_, q := w.refund(t, "o1")
	rec := w.do("POST", q, "address="+tronAddr)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	status := rec.Header().Get("Location")
	before := w.snapshot(t)
	rec = w.do("POST", status, "address="+otherTron)
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Equal(t, before, w.snapshot(t))
}

func TestClaimClosedInTheDatabase(t *testing.T) {
	w := newWorld(t)
	f, q := w.refund(t, "o1")
	_, err := w.pool.Exec(context.Background(), "UPDATE "+w.tables[2]+" SET claim_until = now() - interval '1 second' WHERE id = $1", f.ID)
	require.NoError(t, err)
	before := w.snapshot(t)
	rec := w.do("POST", q, "address="+tronAddr) // the token has not expired; the claim has
	assert.Equal(t, http.StatusGone, rec.Code)
	assert.Equal(t, before, w.snapshot(t))
	assert.Equal(t, http.StatusGone, w.do("GET", q, "").Code)
}

func TestNewAndLinkRefuse(t *testing.T) {
	_, err := claim.New(claim.Config{Key: key})
	assert.Error(t, err, "no Refunds")
	_, err = claim.Link("https://shop.example/r", []byte("short"), "refund-1", time.Now())
	assert.Error(t, err, "a short key")
	_, err = claim.Link("/relative", key, "refund-1", time.Now())
	assert.Error(t, err, "a relative base")
	l, err := claim.Link("https://shop.example/r?lang=de", key, "refund-1", time.Now())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(l, "https://shop.example/r?lang=de&t="))
}
