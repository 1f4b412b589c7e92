package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// A bulk approve is confirmed by typing the count of what the filter
// matches now: a wrong count moves nothing; each approver's bulk approval
// counts once per intent, so two approvers queue them all.
func TestBulkApprove(t *testing.T) {
	r := newRig(t)
	var ps []cryptopay.CreatePayoutParams
	for i := range 5 {
		ps = append(ps, payout(i, "500.5"))
	}
	r.enqueue(t, append(ps, payout(9, "10"))...) // the last is queued: no approval needed
	code, page := r.do(t, "GET", "/payouts/bulk?action=approve&currency=usdt", alice, nil)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "<b>5</b> intent(s)")
	assert.Contains(t, page, "2502.5 usdt", "the total, exact")

	form := r.bulkForm(t, alice, "action=approve&currency=usdt")
	form.Set("count", "4")
	form.Set("note", "batch 12")
	code, page = r.do(t, "POST", "/payouts/bulk", alice, form)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, page, "5 intents match now")
	assert.Equal(t, 0, r.approvals(t), "a wrong count approves nothing")
	for _, who := range []string{viewer, operator} {
		code, _ = r.do(t, "POST", "/payouts/bulk", who, form)
		assert.Equal(t, http.StatusForbidden, code, who)
	}

	form.Set("count", "5")
	code, page = r.do(t, "POST", "/payouts/bulk", alice, form)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "5 done, 0 now queued")
	code, page = r.do(t, "POST", "/payouts/bulk", alice, form)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "0 done, 0 now queued to be sent, 5 skipped", "alice again: counted once")
	code, page = r.do(t, "POST", "/payouts/bulk", bob, form)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "5 done, 5 now queued")
	assert.Equal(t, 10, r.approvals(t), "each approval in the history")
	for _, p := range ps {
		assert.Equal(t, pgstore.StateQueued, r.state(t, p.OrderID))
	}
}

// bulkForm is the bulk confirmation page's form for query, as actor's
// browser would post it: its hidden fields (the action, the filter, the
// set's orderIds and totals).
func (r *rig) bulkForm(t testing.TB, actor, query string) url.Values {
	t.Helper()
	code, page := r.do(t, "GET", "/payouts/bulk?"+query, actor, nil)
	require.Equal(t, http.StatusOK, code, page)
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	return form
}

// approvals counts the approvals in the queue's history.
func (r *rig) approvals(t *testing.T) int {
	var n int
	require.NoError(t, r.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM "+r.q.Table()[:len(r.q.Table())-1]+`_history" WHERE note LIKE 'approval %'`).Scan(&n))
	return n
}

// More matches than BulkMax: refused, nothing moved; a bulk retry takes
// parked intents only.
func TestBulkLimitsAndRetry(t *testing.T) {
	r := newRig(t, func(c *console.Config) { c.BulkMax = 2 })
	ps := []cryptopay.CreatePayoutParams{payout(1, "10"), payout(2, "10"), payout(3, "10")}
	r.enqueue(t, ps...)
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET state = 'parked' WHERE order_id <> $1", ps[2].OrderID)
	require.NoError(t, err)
	_, page := r.do(t, "GET", "/payouts/bulk?action=retry", operator, nil)
	assert.Contains(t, page, "<b>2</b> intent(s)")
	form := r.bulkForm(t, operator, "action=retry")
	form.Set("count", "2")
	form.Set("note", "checked")
	code, _ := r.do(t, "POST", "/payouts/bulk", operator, form)
	assert.Equal(t, http.StatusOK, code)
	for _, p := range ps {
		assert.Equal(t, pgstore.StateQueued, r.state(t, p.OrderID))
	}
	_, err = r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET state = 'parked'")
	require.NoError(t, err)
	_, page = r.do(t, "GET", "/payouts/bulk?action=retry", operator, nil)
	assert.Contains(t, page, `id="too-many"`)
	code, _ = r.do(t, "POST", "/payouts/bulk", operator, url.Values{"action": {"retry"}, "count": {"3"}})
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, pgstore.StateParked, r.state(t, ps[0].OrderID), "nothing moved")
	code, _ = r.do(t, "GET", "/payouts/bulk?action=nuke", operator, nil)
	assert.Equal(t, http.StatusBadRequest, code)
}

// A bulk move confirms a set, not a count: when the intents that match
// are no longer the ones the page listed (one rejected and a larger one
// arrived: the same count; one more parked with server_acted), or the
// form names others, the answer is 409 with the new set, and nothing
// moves. A retry moves only what the page listed.
func TestBulkSetChanged(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	small, big := payout(1, "150"), payout(2, "90000")
	r.enqueue(t, small)
	form := r.bulkForm(t, alice, "action=approve&currency=usdt")
	assert.Equal(t, []string{small.OrderID}, form["ids"])
	assert.Equal(t, []string{"usdt 150"}, form["total"])
	form.Set("count", "1")
	require.NoError(t, r.q.Reject(ctx, small.OrderID, "bob", "duplicate"))
	r.enqueue(t, big)
	code, page := r.do(t, "POST", "/payouts/bulk", alice, form)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, page, `id="changed"`)
	assert.Contains(t, page, "90000 usdt", "the new set, shown")
	assert.Contains(t, page, `name="ids" value="`+big.OrderID+`"`, "and offered to confirm")
	assert.Equal(t, 0, r.approvals(t), "nothing moved")

	form = r.bulkForm(t, alice, "action=approve&currency=usdt")
	form.Set("count", "1")
	for name, forged := range map[string]url.Values{
		"another id":    {"ids": {"wd-999999"}},
		"an id more":    {"ids": {big.OrderID, "wd-999999"}},
		"another total": {"total": {"usdt 150"}},
		"no set":        {"ids": nil, "total": nil},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		for k, v := range forged {
			f[k] = v
		}
		code, _ = r.do(t, "POST", "/payouts/bulk", alice, f)
		assert.Equal(t, http.StatusConflict, code, name)
	}
	assert.Equal(t, 0, r.approvals(t), "nothing moved")
	code, page = r.do(t, "POST", "/payouts/bulk", alice, form)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "1 done")
	_, page = r.do(t, "GET", "/payout?id="+big.OrderID, viewer, nil)
	assert.Contains(t, page, `<dd id="principals">alice as database role &#34;postgres&#34;</dd>`, "the approval's principal: the signed-in user on the console's role")

	// Retry: the page listed one parked intent; another is parked (the
	// server acted) before the POST.
	a, b := payout(3, "10"), payout(4, "10")
	r.enqueue(t, a, b)
	_, err := r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = 'parked' WHERE order_id = $1", a.OrderID)
	require.NoError(t, err)
	form = r.bulkForm(t, operator, "action=retry")
	form.Set("count", "1")
	form.Set("note", "checked")
	_, err = r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = 'parked', hold = 'server_acted' WHERE order_id = $1", b.OrderID)
	require.NoError(t, err)
	form.Set("count", "2")
	code, _ = r.do(t, "POST", "/payouts/bulk", operator, form)
	assert.Equal(t, http.StatusConflict, code, "even with the count of what matches now")
	assert.Equal(t, pgstore.StateParked, r.state(t, a.OrderID))
	assert.Equal(t, pgstore.StateParked, r.state(t, b.OrderID), "the intent the page did not list did not move")
}
