package cryptopay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// bigAccount is a fake server holding 100,000 older payouts, one a second
// (the last 28 hours of a busy account).
func bigAccount(t *testing.T) *cryptopaytest.Server {
	t.Helper()
	s := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1_000_000)))
	t.Cleanup(s.Close)
	require.NoError(t, s.SeedPayouts(100_000, "old-", time.Second))
	return s
}

func e2ePayout(orderID string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", Amount: decimal.RequireFromString("25.5"),
		Currency: "usdt", Network: "tron", CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: orderID}
}

// TestReconcileE2ECreatedPayout: on a 100,000-payout account, the payout
// whose answer was lost is found in at most 3 list requests.
func TestReconcileE2ECreatedPayout(t *testing.T) {
	s := bigAccount(t)
	c := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	ctx := context.Background()
	params := e2ePayout("wd-e2e-created")
	s.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	attempted := time.Now()
	_, err := c.CreatePayout(ctx, params)
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)

	res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: params.OrderID, AttemptedAt: attempted})
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutExists, res.Verdict, res.Reason)
	assert.Equal(t, params.OrderID, res.Payout.OrderID)
	assert.LessOrEqual(t, res.Requests, 3)
	assert.Equal(t, res.Requests, s.Requests(cryptopaytest.RouteListPayouts))

	item, found, err := findPayout(c, ctx, params.OrderID)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "25.5", item.Amount.String())
	assert.LessOrEqual(t, s.Requests(cryptopaytest.RouteListPayouts)-res.Requests, 3)
	assert.Equal(t, 1, s.PayoutsWithOrderID(params.OrderID))
}

// TestReconcileE2EMissingPayout: a create that never reached the server is
// reported as not created in a few requests (two looks, around the settle
// time), and sending it again then makes exactly one payout.
func TestReconcileE2EMissingPayout(t *testing.T) {
	s := bigAccount(t)
	c := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	ctx := context.Background()
	params := e2ePayout("wd-e2e-missing")
	s.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true}) // not processed
	attempted := time.Now()
	_, err := c.CreatePayout(ctx, params)
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)

	res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: params.OrderID, AttemptedAt: attempted, SettleTime: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, cryptopay.PayoutNotCreated, res.Verdict, res.Reason)
	// Each look reads the first page, then from the newest end back past
	// the attempt minus the 2-minute clock skew: 120 payouts at one a
	// second, 2 pages.
	assert.LessOrEqual(t, res.Requests, 6, "two looks of at most three requests")
	assert.Equal(t, res.Requests, s.Requests(cryptopaytest.RouteListPayouts))

	_, err = c.CreatePayout(ctx, params)
	require.NoError(t, err)
	assert.Equal(t, 1, s.PayoutsWithOrderID(params.OrderID))
}

// TestReconcileE2EInvalidUTF8: an orderId that JSON would alter is refused
// before sending, by CreatePayout and by both lookups.
func TestReconcileE2EInvalidUTF8(t *testing.T) {
	s := cryptopaytest.NewServer()
	t.Cleanup(s.Close)
	c := s.Client()
	ctx := context.Background()
	order := "wd-\xff\xfe-42"
	_, err := c.CreatePayout(ctx, e2ePayout(order))
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	_, _, err = findPayout(c, ctx, order)
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	_, err = c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: order, AttemptedAt: time.Now()})
	var ve *cryptopay.ValidationError
	assert.True(t, errors.As(err, &ve))
	assert.Zero(t, s.Requests(cryptopaytest.RouteCreatePayout)+s.Requests(cryptopaytest.RouteListPayouts))
	assert.Zero(t, s.PayoutCount())
}

// TestWaitForPayoutByOrderIDE2E: a payout whose create answer was lost is
// known only by its orderId (the list item has no payout id). The wait by
// orderId follows the list item's status through every change to the final
// one, and a payout the list does not hold ends the wait with ErrNotFound.
func TestWaitForPayoutByOrderIDE2E(t *testing.T) {
	s := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1000)))
	t.Cleanup(s.Close)
	c := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := e2ePayout("wd-e2e-follow")
	s.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	_, err := c.CreatePayout(ctx, params)
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
	res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: params.OrderID})
	require.NoError(t, err)
	require.Equal(t, cryptopay.PayoutExists, res.Verdict, res.Reason)
	require.Empty(t, res.Payout.ID, "the list item carries no payout id")
	ids := s.PayoutIDsWithOrderID(params.OrderID)
	require.Len(t, ids, 1)

	var seen []cryptopay.PayoutStatus
	final, err := c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{
		OrderID: params.OrderID, PollInterval: time.Millisecond, MaxPollInterval: time.Millisecond,
		OnStatusChange: func(p *cryptopay.Payout) {
			seen = append(seen, p.Status)
			switch p.Status { // the processor moves it on once the wait has seen each step
			case cryptopay.PayoutCreated:
				assert.NoError(t, s.SetPayoutStatus(ids[0], cryptopay.PayoutProcessing))
			case cryptopay.PayoutProcessing:
				assert.NoError(t, s.SetPayoutStatus(ids[0], cryptopay.PayoutPaid))
			}
		},
	})
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutPaid, final.Status)
	assert.Equal(t, params.OrderID, final.OrderID)
	assert.True(t, final.Amount.Equal(params.Amount))
	assert.Equal(t, []cryptopay.PayoutStatus{cryptopay.PayoutCreated, cryptopay.PayoutProcessing, cryptopay.PayoutPaid}, seen)
	assert.Zero(t, s.Requests(cryptopaytest.RouteGetPayout), "no payout id was known: the list was followed")

	list := s.Requests(cryptopaytest.RouteListPayouts)
	_, err = c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: "wd-never-sent", PollInterval: time.Millisecond})
	require.ErrorIs(t, err, cryptopay.ErrNotFound)
	assert.Equal(t, 2, s.Requests(cryptopaytest.RouteListPayouts)-list, "one whole-list read (its first and last page), then the wait ends")
}
