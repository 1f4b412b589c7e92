package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Every move of pgstore's table is reachable from the console: a button
// on the page of a record in a state it applies to, a confirmation page
// that names it and posts it, a route that takes the POST (done, or
// refused for want of its required fields: never 404), and, for a bulk move,
// the list's bulk link.
func TestEveryMoveReachable(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const everyone = "ann:approver,operator"
	records := map[pgstore.IntentState]string{}
	for i, state := range pgstore.States() {
		p := payout(100+i, "40")
		r.enqueue(t, p)
		_, err := r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = $2 WHERE order_id = $1", p.OrderID, string(state))
		require.NoError(t, err)
		records[state] = p.OrderID
	}
	listed := payout(99, "40") // parked by the books check: only the moves that settle it apply
	r.enqueue(t, listed)
	_, err := r.pool.Exec(ctx, "UPDATE "+r.q.Table()+" SET state = 'parked', hold = $2, last_error = 'listed' WHERE order_id = $1",
		listed.OrderID, pgstore.HoldUnsentListed)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := r.tr.TrackOrder(ctx, tx, "ord-m")
		return err
	}))
	_, err = r.pool.Exec(ctx, "UPDATE "+r.tr.Table()+" SET anomaly = 'A', needs_action = true WHERE order_id = 'ord-m'")
	require.NoError(t, err)
	for _, m := range pgstore.Moves() {
		id := "ord-m"
		if m.On == pgstore.ObjectPayout {
			id = records[m.From[0]]
			if !m.AppliesToIntent(&pgstore.Intent{State: m.From[0]}) {
				id = listed.OrderID
			}
		}
		_, page := r.do(t, "GET", "/"+m.On+"?id="+url.QueryEscape(id), everyone, nil)
		assert.Contains(t, page, `id="act-`+m.Name+`"`, "%s: the button", m.Name)
		code, page := r.do(t, "GET", "/"+m.On+"/confirm?action="+m.Name+"&id="+url.QueryEscape(id), everyone, nil)
		assert.Equal(t, http.StatusOK, code, m.Name)
		assert.Contains(t, page, `action="/ops/`+m.On+`/`+m.Name+`"`, "%s: the confirmation's form", m.Name)
		assert.Contains(t, page, html.EscapeString(m.Confirm), m.Name)
		code, _ = r.do(t, "POST", "/"+m.On+"/"+m.Name, everyone, url.Values{"id": {id}})
		assert.Contains(t, []int{http.StatusSeeOther, http.StatusBadRequest}, code, "%s: the route (done, or refused for want of its fields)", m.Name)
		if m.Bulk {
			_, page = r.do(t, "GET", "/payouts", everyone, nil)
			assert.Contains(t, page, `id="bulk-`+m.Name+`"`, "%s: the bulk link", m.Name)
		}
	}
	_, page := r.do(t, "GET", "/payout?id="+url.QueryEscape(listed.OrderID), everyone, nil)
	assert.NotContains(t, page, `id="act-retry"`, "an intent the books check parked offers no retry")
	_, page = r.do(t, "GET", "/payout?id="+url.QueryEscape(records[pgstore.StateParked]), everyone, nil)
	assert.NotContains(t, page, `id="act-release"`, "nor is another parked intent released")
}
