package console_test

import (
	"context"
	"net/http"
	"net/url"
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

	form := url.Values{"action": {"approve"}, "currency": {"usdt"}, "count": {"4"}, "note": {"batch 12"}}
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
	code, _ := r.do(t, "POST", "/payouts/bulk", operator, url.Values{"action": {"retry"}, "count": {"2"}, "note": {"checked"}})
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
