package cryptopay

import (
	"context"
	"time"
)

// ReconcileVerdict is what ReconcilePayout concluded about a payout whose
// creation had an unknown outcome.
type ReconcileVerdict int

const (
	// PayoutExists: the API lists a payout with the orderId. Do not create
	// it again.
	PayoutExists ReconcileVerdict = iota + 1
	// PayoutNotCreated: the list, read after the settle time, holds no
	// payout with the orderId and covers every payout created since the
	// attempt (minus the clock-skew margin). Creating it again is safe.
	PayoutNotCreated
	// PayoutStillUnknown: the evidence does not decide (the list is
	// inconsistent or did not reach back far enough). Do not resend; try
	// again later or ask a person.
	PayoutStillUnknown
)

// String names the verdict.
func (v ReconcileVerdict) String() string {
	switch v {
	case PayoutExists:
		return "exists"
	case PayoutNotCreated:
		return "not_created"
	case PayoutStillUnknown:
		return "still_unknown"
	}
	return "invalid"
}

// ReconcileParams says which payout to look for and when it was attempted.
type ReconcileParams struct {
	// OrderID is the orderId the payout was created with. Required.
	OrderID string
	// AttemptedAt is when the create request was first sent. Required: the
	// search stops once the list reaches payouts older than it (minus
	// ClockSkew).
	AttemptedAt time.Time
	// SettleTime is how long after AttemptedAt the list is trusted to show a
	// payout that was created (0: DefaultReconcileSettleTime). A search that
	// finds nothing before then waits and looks again.
	SettleTime time.Duration
	// ClockSkew is the margin allowed between this machine's clock and the
	// server's createdAt (0: DefaultReconcileClockSkew).
	ClockSkew time.Duration
}

// Defaults for ReconcilePayout.
const (
	DefaultReconcileSettleTime = 5 * time.Second
	DefaultReconcileClockSkew  = 2 * time.Minute
)

// ReconcileResult is ReconcilePayout's answer.
type ReconcileResult struct {
	// Verdict is what the evidence shows.
	Verdict ReconcileVerdict
	// Payout is the list item found, when Verdict is PayoutExists.
	Payout *PayoutListItem
	// Requests counts the list requests made.
	Requests int
	// Reason says, in words, why the verdict is what it is.
	Reason string
}

// ReconcilePayout is the way out of ErrOutcomeUnknown for CreatePayout.
// Implemented in payouts.go.
func (c *Client) ReconcilePayout(ctx context.Context, params ReconcileParams, opts ...RequestOption) (*ReconcileResult, error) {
	return c.reconcilePayout(ctx, params, opts)
}
