package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/console"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// trackAs writes orderID's payment as the tracker records it: status,
// pay and paid amounts in usdt on tron, needing action as its status
// says.
func (r *rig) trackAs(t testing.TB, orderID string, status cryptopay.PaymentStatus, pay, paid string) {
	t.Helper()
	_, err := r.pool.Exec(context.Background(), "INSERT INTO "+r.tr.Table()+` (order_id, payment_id, pay_amount, currency, network, state,
status, paid_amount, needs_action, changes) VALUES ($1, $2, $3::numeric, 'usdt', 'tron', 'closed', $4, $5::numeric, $6, 1)`,
		orderID, "pay-"+orderID, pay, string(status), paid, status.NeedsAction())
	require.NoError(t, err)
}

// claimBase is where the tests' claim page would be mounted.
const claimBase = "https://shop.example/refund"

// A payment that needs action offers refund, accept and write off, on
// its page and in the list, to the roles that may make them; a refund
// from the console records the refund, its held payout and its
// resolution, and shows the claim link; accept and write-off record a
// resolution with actor and note, and the payment leaves the unresolved
// list.
func TestPaymentRefundMoves(t *testing.T) {
	r := newRig(t, func(c *console.Config) { c.ClaimURL, c.ClaimKey = claimBase, claimKey })
	ctx := context.Background()
	r.trackAs(t, "over", cryptopay.PaymentPaidOver, "100", "100.500001")
	r.trackAs(t, "partial", cryptopay.PaymentPaidPartial, "100", "40")
	r.trackAs(t, "short", cryptopay.PaymentPaidPartial, "100", "99")
	r.trackAs(t, "ontime", cryptopay.PaymentPaid, "100", "100")
	const both = "ann:approver,operator"

	_, page := r.do(t, "GET", "/payment?id=over", both, nil)
	for _, name := range []string{"refund", "accept", "write-off"} {
		assert.Contains(t, page, `id="act-`+name+`"`, name)
	}
	_, page = r.do(t, "GET", "/payment?id=ontime", both, nil)
	assert.NotContains(t, page, `id="act-refund"`, "paid in time and in full: nothing to resolve")
	_, page = r.do(t, "GET", "/payment?id=over", operator, nil)
	assert.Contains(t, page, `id="act-refund"`)
	assert.NotContains(t, page, `id="act-accept"`, "accepting needs the approver role")
	_, page = r.do(t, "GET", "/payments?needs_action=1", both, nil)
	assert.Contains(t, page, `id="row-refund-over"`, "the needs-action list offers the moves")
	assert.Contains(t, page, `id="row-write-off-short"`)
	_, page = r.do(t, "GET", "/payments?unresolved=1", viewer, nil)
	assert.Contains(t, page, `href="/ops/payment?id=over"`)
	assert.NotContains(t, page, "ontime")
	assert.NotContains(t, page, `id="row-refund-over"`, "a viewer is offered no move")

	code, page := r.do(t, "GET", "/payment/confirm?action=refund&id=over", operator, nil)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "100.500001 paid of 100 usdt on tron", "the confirmation names the amounts and the currency")
	assert.Contains(t, page, `<select name="rule" id="rule" required><option>excess</option>`)
	code, _ = r.do(t, "GET", "/payment/confirm?action=refund&id=ontime", operator, nil)
	assert.Equal(t, http.StatusConflict, code)

	form := url.Values{"id": {"over"}, "rule": {"excess"}, "idempotency-key": {"T-1"}, "customer-id": {"c-1"}, "note": {"customer asked"}}
	code, _ = r.do(t, "POST", "/payment/refund", alice, form)
	assert.Equal(t, http.StatusForbidden, code, "refunding needs the operator role")
	code, page = r.do(t, "POST", "/payment/refund", operator, form)
	require.Equal(t, http.StatusOK, code, page)
	id := pgstore.RefundID("over", "T-1")
	f, err := r.rf.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "0.500001", f.Amount.String())
	assert.Contains(t, page, "0.500001 usdt on tron")
	_, link, ok := strings.Cut(page, `id="claim-link" size="90" readonly value="`)
	require.True(t, ok, page)
	link, _, _ = strings.Cut(html.UnescapeString(link), `"`)
	assert.True(t, strings.HasPrefix(link, claimBase+"?"), link)
	res, err := r.rf.Resolutions(ctx, "over")
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, []string{"refunded", id, "olga", "customer asked"}, []string{string(res[0].Kind), res[0].RefundID, res[0].ActorID, res[0].Note})

	code, page = r.do(t, "POST", "/payment/refund", operator, url.Values{"id": {"partial"}, "rule": {"all_paid"}, "idempotency-key": {"T-2"},
		"customer-id": {"c-2"}, "wallet": {"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"}, "customer-ip": {"203.0.113.7"}})
	require.Equal(t, http.StatusOK, code, page)
	assert.NotContains(t, page, `id="claim-link"`, "a refund given its wallet has no claim")
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, pgstore.RefundID("partial", "T-2")), "its payout is held for approval")

	code, _ = r.do(t, "POST", "/payment/write-off", operator, url.Values{"id": {"short"}, "note": {"x"}})
	assert.Equal(t, http.StatusForbidden, code, "writing off needs the approver role")
	code, _ = r.do(t, "POST", "/payment/accept", alice, url.Values{"id": {"short"}})
	assert.Equal(t, http.StatusBadRequest, code, "a note is required")
	code, _ = r.do(t, "POST", "/payment/accept", alice, url.Values{"id": {"short"}, "note": {"1 usdt short, let go"}})
	assert.Equal(t, http.StatusSeeOther, code)
	res, err = r.rf.Resolutions(ctx, "short")
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, []string{"accepted", "alice", "1 usdt short, let go"}, []string{string(res[0].Kind), res[0].ActorID, res[0].Note})
	_, page = r.do(t, "GET", "/payments?unresolved=1", viewer, nil)
	assert.NotContains(t, page, `href="/ops/payment?id=short"`, "resolved: off the unresolved list")
	assert.NotContains(t, page, `href="/ops/payment?id=over"`)
	_, page = r.do(t, "GET", "/payment?id=over", viewer, nil)
	assert.Contains(t, page, `class="mono claim-link"`, "the payment's page keeps the link of a refund awaiting its claim")
}

// Without a claim page configured, a refund without wallet says how to
// make the link with the CLI.
func TestPaymentRefundWithoutClaimURL(t *testing.T) {
	r := newRig(t)
	r.trackAs(t, "over", cryptopay.PaymentPaidOver, "100", "101")
	code, page := r.do(t, "POST", "/payment/refund", operator, url.Values{"id": {"over"}, "rule": {"excess"}, "idempotency-key": {"T 1"},
		"customer-id": {"c-1"}})
	require.Equal(t, http.StatusOK, code, page)
	assert.NotContains(t, page, `id="claim-link"`)
	assert.Contains(t, page, "cryptopay payment refund over --rule excess --idempotency-key &#39;T 1&#39; --customer-id c-1 --claim-url URL")
	_, err := console.New(console.Config{Tracker: r.tr, Authorize: testAuthorize, ClaimURL: claimBase})
	assert.ErrorIs(t, err, console.ErrInvalidConfig, "a claim URL without its key")
}
