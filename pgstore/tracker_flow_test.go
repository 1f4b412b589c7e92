package pgstore_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// The documented flow (docs/payment-tracker.md step 2, recordOrder) never
// leaves a payment at the API that the tracker does not follow: with the
// tracker's tables missing, tracking fails and no payment is created (it
// was created first, then left untracked, before); a refused create leaves
// nothing tracked; a create accepted is tracked with its payment; a lost
// create answer leaves the order tracked by its orderId.
func TestRecordOrderTracksBeforeCreate(t *testing.T) {
	srv := pgstoretest.Need(t)
	pool := srv.Pool(t, 8)
	ctx := context.Background()
	tests := []struct {
		name    string
		tables  bool
		amount  string
		fault   *cryptopaytest.Fault
		errIs   error
		state   pgstore.TrackState // "": not tracked
		created int                // payments at the API for the orderId
	}{
		{name: "no tables", amount: "25", errIs: pgstore.ErrSchema, created: 0},
		{name: "refused", tables: true, amount: "25", fault: &cryptopaytest.Fault{Status: http.StatusUnprocessableEntity},
			errIs: cryptopay.ErrInvalidRequest, created: 0},
		{name: "created", tables: true, amount: "25", state: pgstore.TrackOpen, created: 1},
		{name: "answer lost", tables: true, amount: "25", fault: &cryptopaytest.Fault{Status: http.StatusBadGateway, Process: true},
			errIs: cryptopay.ErrOutcomeUnknown, state: pgstore.TrackUnmatched, created: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := cryptopaytest.NewServer()
			t.Cleanup(fake.Close)
			client := fake.Client()
			tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: client, Table: pgstoretest.Name("flow"),
				CreateTable: tc.tables})
			require.NoError(t, err)
			if tc.fault != nil {
				fake.InjectFault(cryptopaytest.RouteCreatePayment, *tc.fault)
			}
			orderID := "order-" + tc.name[:4]
			p, err := recordOrder(ctx, pool, tr, client, orderID, decimal.RequireFromString(tc.amount), "")
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
			} else {
				require.NoError(t, err)
				require.NotNil(t, p)
			}
			assert.Len(t, fake.PaymentIDsWithOrderID(orderID), tc.created, "payments at the API")
			if !tc.tables {
				return
			}
			tp, err := tr.Get(ctx, orderID)
			if tc.state == "" {
				require.ErrorIs(t, err, pgstore.ErrNotTracked)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.state, tp.State)
			if tc.state == pgstore.TrackOpen {
				assert.Equal(t, p.ID, tp.PaymentID)
				assert.Equal(t, p.PayAmount.String(), tp.PayAmount.Decimal.String())
			}
		})
	}
}

// Untrack removes only an orderId tracked alone with nothing known of it:
// never one tracked with its payment.
func TestUntrack(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 0)
	ctx := context.Background()
	p := r.create(t, "ord-untrack-paid", "10")
	require.True(t, r.track(t, tr, p))
	untrack := func(orderID string) bool {
		var removed bool
		require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
			var err error
			removed, err = tr.Untrack(ctx, tx, orderID)
			return err
		}))
		return removed
	}
	assert.False(t, untrack(p.OrderID), "tracked with its payment: kept")
	_, err := tr.Get(ctx, p.OrderID)
	require.NoError(t, err)
	assert.False(t, untrack("ord-never-tracked"))

	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := tr.TrackOrder(ctx, tx, "ord-untrack-alone")
		return err
	}))
	assert.True(t, untrack("ord-untrack-alone"))
	_, err = tr.Get(ctx, "ord-untrack-alone")
	require.ErrorIs(t, err, pgstore.ErrNotTracked)
}
