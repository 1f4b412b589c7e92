package cryptopay

// PaymentStatus is the state of a payment as the API reports it. A value the
// SDK does not know is kept as sent and is not terminal.
type PaymentStatus string

// Payment statuses named by the API.
const (
	// PaymentWaiting: created, waiting for the customer's transfer.
	PaymentWaiting PaymentStatus = "waiting"
	// PaymentConfirming: a transfer was seen and awaits confirmations.
	PaymentConfirming PaymentStatus = "confirming"
	// PaymentFailed: the payment failed. Terminal and final.
	PaymentFailed PaymentStatus = "failed"
	// PaymentLocked: held by the processor (for example a compliance check);
	// a person should look. Not terminal.
	PaymentLocked PaymentStatus = "locked"
	// PaymentRejected: refused by the processor. Terminal and final.
	PaymentRejected PaymentStatus = "rejected"
	// PaymentExpired: not paid before expiredAt. Terminal, not final: a
	// late transfer can still move it to a paid status.
	PaymentExpired PaymentStatus = "expired"
	// PaymentPaid: paid in full. Terminal, success; not final: a further
	// transfer makes it paid_over.
	PaymentPaid PaymentStatus = "paid"
	// PaymentPaidOver: paid more than payAmount. Terminal, final, success;
	// a person may need to refund the excess.
	PaymentPaidOver PaymentStatus = "paid_over"
	// PaymentPaidPartial: paid less than payAmount. Terminal, not a success,
	// not final: the customer can still send the rest (then paid or
	// paid_over); a person should decide what to do with the funds.
	PaymentPaidPartial PaymentStatus = "paid_partial"
)

// lifecycle is one row of a resource's status lifecycle table.
type lifecycle[S ~string] struct {
	terminal    bool // ends a wait (IsTerminal)
	success     bool // may ship goods (IsSuccess)
	needsAction bool // a person should look (NeedsAction)
	moves       []S  // where it can move next; none: final
}

// paymentLifecycle is THE table of payment statuses: the waits, the
// webhook handler's "API behind the event" check, the fake server and
// pgstore's tracker all read it (through the methods below). The moves are
// every change a processor can make, including the late ones: a transfer
// after expiry (expired -> paid, paid_partial, paid_over), the rest of a
// partial payment (paid_partial -> paid, paid_over) and a transfer on top of
// a paid one (paid -> paid_over).
var paymentLifecycle = map[PaymentStatus]lifecycle[PaymentStatus]{
	PaymentWaiting: {moves: []PaymentStatus{PaymentConfirming, PaymentLocked, PaymentFailed, PaymentRejected, PaymentExpired,
		PaymentPaid, PaymentPaidPartial, PaymentPaidOver}},
	PaymentConfirming: {moves: []PaymentStatus{PaymentLocked, PaymentFailed, PaymentRejected,
		PaymentPaid, PaymentPaidPartial, PaymentPaidOver}},
	PaymentLocked: {needsAction: true, moves: []PaymentStatus{PaymentConfirming, PaymentFailed, PaymentRejected,
		PaymentPaid, PaymentPaidPartial, PaymentPaidOver}},
	PaymentExpired: {terminal: true, moves: []PaymentStatus{PaymentConfirming, PaymentLocked,
		PaymentPaid, PaymentPaidPartial, PaymentPaidOver}},
	PaymentPaidPartial: {terminal: true, needsAction: true, moves: []PaymentStatus{PaymentConfirming, PaymentLocked,
		PaymentPaid, PaymentPaidOver}},
	PaymentPaid:     {terminal: true, success: true, moves: []PaymentStatus{PaymentPaidOver}},
	PaymentPaidOver: {terminal: true, success: true, needsAction: true},
	PaymentFailed:   {terminal: true},
	PaymentRejected: {terminal: true},
}

// String returns the status as sent on the wire.
func (s PaymentStatus) String() string { return string(s) }

// IsKnown reports whether s is one of the statuses the API names.
func (s PaymentStatus) IsKnown() bool { _, ok := paymentLifecycle[s]; return ok }

// IsTerminal reports whether the payment will not move on by itself, which
// ends a wait: paid, paid_over, paid_partial, failed, rejected and expired.
// Terminal is not final: see IsFinal.
func (s PaymentStatus) IsTerminal() bool { return paymentLifecycle[s].terminal }

// IsFinal reports whether no move out of s is possible: paid_over, failed
// and rejected. expired (a late transfer), paid_partial (the rest of the
// payment) and paid (a transfer on top) can still move to a paid status, so
// keep listening to webhooks, or track the payment (pgstore.Tracker).
func (s PaymentStatus) IsFinal() bool {
	r, ok := paymentLifecycle[s]
	return ok && len(r.moves) == 0
}

// CanMoveTo reports whether a payment in status s can move to next, by the
// lifecycle table (late moves included). Unknown statuses never move.
func (s PaymentStatus) CanMoveTo(next PaymentStatus) bool { return canMove(paymentLifecycle, s, next) }

// IsSuccess reports whether at least the requested amount was paid: paid or
// paid_over. paid_partial is not a success.
func (s PaymentStatus) IsSuccess() bool { return paymentLifecycle[s].success }

// NeedsAction reports whether a person should look at the payment: locked,
// paid_partial and paid_over.
func (s PaymentStatus) NeedsAction() bool { return paymentLifecycle[s].needsAction }

// PayoutStatus is the state of a payout as the API reports it. A value the
// SDK does not know is kept as sent and is not terminal.
type PayoutStatus string

// Payout statuses named by the API.
const (
	// PayoutCreated: accepted, not yet processed.
	PayoutCreated PayoutStatus = "created"
	// PayoutReview: held for manual review; a person should look.
	PayoutReview PayoutStatus = "review"
	// PayoutProcessing: being sent.
	PayoutProcessing PayoutStatus = "processing"
	// PayoutConfirming: sent, awaiting confirmations.
	PayoutConfirming PayoutStatus = "confirming"
	// PayoutPaid: delivered. Terminal, final, success.
	PayoutPaid PayoutStatus = "paid"
	// PayoutFailed: not delivered. Terminal and final.
	PayoutFailed PayoutStatus = "failed"
	// PayoutCancelled: cancelled before delivery. Terminal and final.
	PayoutCancelled PayoutStatus = "cancelled"
)

// payoutLifecycle is THE table of payout statuses (see paymentLifecycle).
// Every terminal payout status is final.
var payoutLifecycle = map[PayoutStatus]lifecycle[PayoutStatus]{
	PayoutCreated:    {moves: []PayoutStatus{PayoutReview, PayoutProcessing, PayoutFailed, PayoutCancelled}},
	PayoutReview:     {needsAction: true, moves: []PayoutStatus{PayoutProcessing, PayoutFailed, PayoutCancelled}},
	PayoutProcessing: {moves: []PayoutStatus{PayoutConfirming, PayoutPaid, PayoutFailed}},
	PayoutConfirming: {moves: []PayoutStatus{PayoutPaid, PayoutFailed}},
	PayoutPaid:       {terminal: true, success: true},
	PayoutFailed:     {terminal: true},
	PayoutCancelled:  {terminal: true},
}

// String returns the status as sent on the wire.
func (s PayoutStatus) String() string { return string(s) }

// IsKnown reports whether s is one of the statuses the API names.
func (s PayoutStatus) IsKnown() bool { _, ok := payoutLifecycle[s]; return ok }

// IsTerminal reports whether the payout is paid, failed or cancelled.
func (s PayoutStatus) IsTerminal() bool { return payoutLifecycle[s].terminal }

// IsFinal reports whether no move out of s is possible; for payouts that is
// every terminal status.
func (s PayoutStatus) IsFinal() bool {
	r, ok := payoutLifecycle[s]
	return ok && len(r.moves) == 0
}

// CanMoveTo reports whether a payout in status s can move to next, by the
// lifecycle table. Unknown statuses never move.
func (s PayoutStatus) CanMoveTo(next PayoutStatus) bool { return canMove(payoutLifecycle, s, next) }

// IsSuccess reports whether the payout was delivered (paid).
func (s PayoutStatus) IsSuccess() bool { return payoutLifecycle[s].success }

// NeedsAction reports whether a person should look at the payout: review.
func (s PayoutStatus) NeedsAction() bool { return payoutLifecycle[s].needsAction }

func canMove[S ~string](table map[S]lifecycle[S], from, to S) bool {
	for _, m := range table[from].moves {
		if m == to {
			return true
		}
	}
	return false
}
