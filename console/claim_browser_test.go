package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// The refund claim page (package pgstore/claim) in headless Chromium: it
// lives here because this module has the browser driver and pgstore takes
// no dependency for a test.

var claimKey = []byte("browser-claim-key-0123456789abcdef")

// claimSnapshot is every row of the refunds and the queue, as text.
func claimSnapshot(t *testing.T, r *rig, refunds string) string {
	t.Helper()
	var s string
	require.NoError(t, r.pool.QueryRow(context.Background(), "SELECT concat((SELECT string_agg(f::text, ';' ORDER BY id) FROM "+
		refunds+" f), '|', (SELECT string_agg(q::text, ';' ORDER BY order_id) FROM "+r.q.Table()+" q))").Scan(&s))
	return s
}

// claimPage opens link in ctx and returns the page's text once it shows
// sel.
func claimPage(t *testing.T, ctx context.Context, link, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(sel))))
	return text(t, ctx, "body")
}

// submitAddress types addr in the open claim form (empty) and submits
// it, then waits for sel.
func submitAddress(t *testing.T, ctx context.Context, addr, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#address-input"), addr),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS(sel))))
	return text(t, ctx, "body")
}

// TestClaimBrowser: a customer claims an overpayment's excess in the
// browser; an invalid address, a forged, an expired and a reused link are
// refused and change nothing; the page follows the refund through two
// approvals to paid.
func TestClaimBrowser(t *testing.T) {
	r := newRig(t)
	bctx := context.Background()
	refundsTable := pgstoretest.Name("refunds")
	refunds, err := pgstore.NewRefunds(bctx, pgstore.RefundsConfig{Queue: r.q, Tracker: r.tr, Table: refundsTable, CreateTable: true})
	require.NoError(t, err)
	_, err = r.pool.Exec(bctx, "INSERT INTO "+r.tr.Table()+` (order_id, payment_id, pay_amount, currency, network, state, status,
paid_amount, needs_action) VALUES ('order-9', 'pay-9', 40, 'usdt', 'tron', 'closed', 'paid_over', 43.75, true)`)
	require.NoError(t, err)
	f, _, err := refunds.Create(bctx, pgstore.RefundParams{OrderID: "order-9", Key: "ticket-1", Rule: pgstore.RefundExcess,
		CustomerID: "cust-9", Actor: "alice", Note: "excess"})
	require.NoError(t, err)
	h, err := claim.New(claim.Config{Refunds: refunds, Key: claimKey})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/refund", h)
	shop := httptest.NewServer(mux)
	t.Cleanup(shop.Close)
	link, err := claim.Link(shop.URL+"/refund", claimKey, f.ID, f.ClaimUntil)
	require.NoError(t, err)
	r.run(t)

	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)
	tab, early := b.tab(t, "customer"), b.tab(t, "customer")

	// Refused, nothing changed: a forged link, an expired one, an invalid
	// address.
	before := claimSnapshot(t, r, refundsTable)
	forged := strings.Replace(link, "t=", "t=A", 1)
	assert.Contains(t, claimPage(t, tab, forged, "#problem"), "This link is not valid")
	past, err := claim.Link(shop.URL+"/refund", claimKey, f.ID, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	assert.Contains(t, claimPage(t, tab, past, "#problem"), "This link has expired")
	page := claimPage(t, tab, link, "#claim")
	assert.Contains(t, page, "3.75 usdt")
	assert.Contains(t, submitAddress(t, tab, "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "#problem"), "not a valid tron address")
	claimPage(t, tab, link, "#claim") // the form again, empty
	assert.Equal(t, before, claimSnapshot(t, r, refundsTable), "the refusals changed nothing")

	// A second tab opens the form before the claim: its later submit is
	// a reused link.
	claimPage(t, early, link, "#claim")

	// The valid claim: the intent, held for approval.
	assert.Contains(t, submitAddress(t, tab, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", "#status"), "Awaiting approval")
	in, err := r.q.Get(bctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Equal(t, "3.75", in.Params.Amount.String())
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", in.Params.WalletAddress)
	statusURL, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	u, err := url.Parse(statusURL)
	require.NoError(t, err)
	assert.NotEqual(t, link, statusURL, "on to the status link")

	after := claimSnapshot(t, r, refundsTable)
	assert.Contains(t, submitAddress(t, early, "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8", "#problem"), "claimed already")
	assert.Equal(t, after, claimSnapshot(t, r, refundsTable), "the reused link changed nothing")

	// Four eyes, then the payout: the page follows it.
	require.NoError(t, r.q.Approve(bctx, f.ID, "bob", "ok"))
	require.NoError(t, r.q.Approve(bctx, f.ID, "carol", "ok"))
	r.waitState(t, f.ID, pgstore.StateCreated)
	assert.Contains(t, claimPage(t, tab, u.String(), "#status"), "Sent")
	r.payAtFake(t, f.ID)
	r.waitState(t, f.ID, pgstore.StatePaid)
	claimPage(t, tab, u.String(), "#status")
	assert.Equal(t, "Paid", text(t, tab, "#status"))
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(f.ID), "one payout")
}

// TestConsoleRefundBrowser: an operator refunds an overpayment from the
// needs-action list in the browser; the console shows the claim link,
// and the customer's claim through it becomes the payout held for
// approval.
func TestConsoleRefundBrowser(t *testing.T) {
	mux := http.NewServeMux()
	shop := httptest.NewServer(mux)
	t.Cleanup(shop.Close)
	r := newRig(t, func(c *console.Config) { c.ClaimURL, c.ClaimKey = shop.URL+"/refund", claimKey })
	h, err := claim.New(claim.Config{Refunds: r.rf, Key: claimKey})
	require.NoError(t, err)
	mux.Handle("/refund", h)
	r.trackAs(t, "order-7", cryptopay.PaymentPaidOver, "40", "43.75")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)
	ops, customer := b.tab(t, operator), b.tab(t, "customer")
	require.NoError(t, chromedp.Do(ops,
		chromedp.Navigate(r.base+"/payments?needs_action=1"),
		chromedp.Click(chromedp.CSS("#row-refund-order-7")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.SendKeys(chromedp.CSS("#idempotency-key"), "ticket-7"),
		chromedp.SendKeys(chromedp.CSS("#customer-id"), "cust-7"),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#claim-link")),
	))
	assert.Contains(t, text(t, ops, "#refund-amount"), "3.75 usdt on tron")
	link, err := chromedp.Run(ops, chromedp.Evaluate[string]("document.querySelector('#claim-link').value"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, shop.URL+"/refund?"), link)
	id := pgstore.RefundID("order-7", "ticket-7")
	res, err := r.rf.Resolutions(context.Background(), "order-7")
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, id, res[0].RefundID)

	claimPage(t, customer, link, "#claim")
	assert.Contains(t, submitAddress(t, customer, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", "#status"), "Awaiting approval")
	in, err := r.q.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Equal(t, "3.75", in.Params.Amount.String())
	assert.Equal(t, "olga", in.EnqueuedBy, "enqueued in the asker's name: their approval never counts")
}
