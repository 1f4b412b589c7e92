package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

// Payments: the list by anomaly, the detail, and an operator clearing an
// anomaly with a note that names them; a viewer cannot.
func TestPaymentAnomaly(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	pay, err := r.fake.Client().CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "c-1", CustomerIP: "203.0.113.9", OrderID: "ord-1"})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := r.tr.Track(ctx, tx, pay); err != nil {
			return err
		}
		_, err := r.tr.TrackOrder(ctx, tx, "ord-2")
		return err
	}))
	_, err = r.pool.Exec(ctx, "UPDATE "+r.tr.Table()+" SET anomaly = $2, needs_action = true WHERE order_id = $1", "ord-1", "a webhook named payment \u202eX")
	require.NoError(t, err)

	_, page := r.do(t, "GET", "/payments?anomaly=1", viewer, nil)
	assert.Contains(t, page, `href="/ops/payment?id=ord-1"`)
	assert.NotContains(t, page, "ord-2")
	assert.Contains(t, page, `named payment \u202eX`)
	assert.Contains(t, page, `<b id="h-payments">1</b>`)
	_, page = r.do(t, "GET", "/payments?q="+pay.ID, viewer, nil)
	assert.Contains(t, page, "ord-1", "search by payment id")
	_, page = r.do(t, "GET", "/payment?id=ord-1", viewer, nil)
	assert.NotContains(t, page, `id="act-clear-anomaly"`)
	_, page = r.do(t, "GET", "/payment?id=ord-1", operator, nil)
	assert.Contains(t, page, `id="act-clear-anomaly"`)

	code, _ := r.do(t, "POST", "/payment/clear-anomaly", viewer, url.Values{"id": {"ord-1"}, "note": {"x"}})
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}})
	assert.Equal(t, http.StatusBadRequest, code, "a note is required")
	tp, err := r.tr.Get(ctx, "ord-1")
	require.NoError(t, err)
	assert.NotEmpty(t, tp.Anomaly, "nothing cleared yet")

	shown := "a webhook named payment \u202eX"
	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"second payment refunded"}})
	assert.Equal(t, http.StatusConflict, code, "the form must say which anomaly was shown")
	_, page = r.do(t, "GET", "/payment/confirm?action=clear-anomaly&id=ord-1", operator, nil)
	assert.Contains(t, page, `name="anomaly" value="a webhook named payment `+"\u202e"+`X"`, "the confirmation carries the text shown")
	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"second payment refunded"}, "anomaly": {"another anomaly"}})
	assert.Equal(t, http.StatusConflict, code, "an anomaly other than the one shown is not cleared")
	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"second payment refunded"}, "anomaly": {shown}})
	assert.Equal(t, http.StatusSeeOther, code)
	tp, err = r.tr.Get(ctx, "ord-1")
	require.NoError(t, err)
	assert.Empty(t, tp.Anomaly)
	assert.True(t, strings.Contains(tp.Note, `by "olga"`), tp.Note)
	moves, err := r.tr.Moves(ctx, "ord-1")
	require.NoError(t, err)
	require.Len(t, moves, 1)
	assert.Equal(t, "olga", moves[0].ActorID, "the move names the console's actor")
	_, page = r.do(t, "GET", "/payment?id=ord-1", viewer, nil)
	assert.Contains(t, page, `<td class="mono actor">olga</td>`, "the detail page shows who cleared it")
	code, _ = r.do(t, "POST", "/payment/clear-anomaly", operator, url.Values{"id": {"ord-1"}, "note": {"again"}, "anomaly": {shown}})
	assert.Equal(t, http.StatusConflict, code, "nothing left to clear")
	code, _ = r.do(t, "GET", "/payment?id=nope", viewer, nil)
	assert.Equal(t, http.StatusNotFound, code)
}
