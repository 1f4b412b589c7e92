package pgstore

import (
	"context"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

// payoutAPI is everything the payout queue asks of the SDK: create, read by
// id, and the orderId lookup that decides whether an attempt created a
// payout. Keeping it to these three calls, in this one file, is what lets
// the SDK's names change without touching the queue.
type payoutAPI interface {
	// create also returns the API's request id of the answer, if any.
	create(ctx context.Context, p cryptopay.CreatePayoutParams) (*cryptopay.Payout, string, error)
	get(ctx context.Context, id string) (*cryptopay.Payout, error)
	// lookup says whether a payout with orderID exists, from the payout
	// list, given when the attempt was made (see cryptopay.ReconcilePayout).
	lookup(ctx context.Context, orderID string, attemptedAt time.Time) (*cryptopay.ReconcileResult, error)
}

// sdkAPI is payoutAPI over a *cryptopay.Client.
type sdkAPI struct {
	c            *cryptopay.Client
	settle, skew time.Duration
}

func (a sdkAPI) create(ctx context.Context, p cryptopay.CreatePayoutParams) (*cryptopay.Payout, string, error) {
	var resp cryptopay.Response
	pay, err := a.c.CreatePayout(ctx, p, cryptopay.WithResponseInto(&resp))
	return pay, resp.RequestID, err
}

func (a sdkAPI) get(ctx context.Context, id string) (*cryptopay.Payout, error) {
	return a.c.GetPayout(ctx, id)
}

func (a sdkAPI) lookup(ctx context.Context, orderID string, attemptedAt time.Time) (*cryptopay.ReconcileResult, error) {
	return a.c.ReconcilePayout(ctx, cryptopay.ReconcileParams{
		OrderID: orderID, AttemptedAt: attemptedAt, SettleTime: a.settle, ClockSkew: a.skew,
	})
}
