package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Reject needs a reason; one approver's rejection is final. Resolve binds
// a parked intent to the payout found at the processor, checked through
// the API: another payout's id is refused and changes nothing.
func TestRejectAndResolve(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	held, parked, other := payout(1, "500"), payout(2, "40"), payout(3, "41")
	r.enqueue(t, held, parked)
	code, _ := r.do(t, "POST", "/payout/reject", alice, url.Values{"id": {held.OrderID}})
	assert.Equal(t, http.StatusBadRequest, code, "a rejection needs a reason")
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, held.OrderID))
	code, _ = r.do(t, "POST", "/payout/reject", alice, url.Values{"id": {held.OrderID}, "reason": {"unknown customer"}})
	assert.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, pgstore.StateRejected, r.state(t, held.OrderID))

	// The payout exists at the processor (its create answer was lost, say).
	found, err := r.fake.Client().CreatePayout(ctx, parked)
	require.NoError(t, err)
	wrong, err := r.fake.Client().CreatePayout(ctx, other)
	require.NoError(t, err)
	_, err = r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = 'parked', hold = 'server_acted', attempts = 1 WHERE order_id = $1", parked.OrderID)
	require.NoError(t, err)
	_, page := r.do(t, "GET", "/payout/confirm?action=resolve&id="+parked.OrderID, operator, nil)
	assert.Contains(t, page, `name="payout-id"`)
	code, page = r.do(t, "POST", "/payout/resolve", operator, url.Values{"id": {parked.OrderID}, "payout-id": {wrong.ID}, "note": {"dashboard"}})
	assert.Equal(t, http.StatusBadRequest, code, page)
	assert.Contains(t, page, "orderId")
	assert.Equal(t, pgstore.StateParked, r.state(t, parked.OrderID))
	code, _ = r.do(t, "POST", "/payout/resolve", operator, url.Values{"id": {parked.OrderID}, "payout-id": {found.ID}, "note": {"dashboard shows it"}})
	assert.Equal(t, http.StatusSeeOther, code)
	in, err := r.q.Get(ctx, parked.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateCreated, in.State)
	assert.Equal(t, found.ID, in.PayoutID)
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(parked.OrderID), "nothing sent")
}

// The approvals stay on a payout's page once the intent is queued (and
// sent): who approved it, and when it had them all.
func TestPayoutPageKeepsApprovals(t *testing.T) {
	r := newRig(t)
	held := payout(1, "500")
	r.enqueue(t, held)
	for _, who := range []string{alice, bob} {
		code, page := r.do(t, "POST", "/payout/approve", who, url.Values{"id": {held.OrderID}, "note": {"ok"}})
		require.Equal(t, http.StatusSeeOther, code, page)
		if r.state(t, held.OrderID) != pgstore.StateNeedsApproval {
			break
		}
	}
	require.Equal(t, pgstore.StateQueued, r.state(t, held.OrderID))
	in, err := r.q.Get(context.Background(), held.OrderID)
	require.NoError(t, err)
	_, page := r.do(t, "GET", "/payout?id="+held.OrderID, viewer, nil)
	assert.Contains(t, page, `<dd id="approvals">`+strconv.Itoa(len(in.ApprovedBy))+` of `+strconv.Itoa(in.ApprovalsNeeded)+`: alice`)
	assert.Contains(t, page, `id="approved-at"`)
}
