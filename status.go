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
	// PaymentFailed: the payment failed. Terminal.
	PaymentFailed PaymentStatus = "failed"
	// PaymentLocked: held by the processor (for example a compliance check);
	// a person should look. Not terminal.
	PaymentLocked PaymentStatus = "locked"
	// PaymentRejected: refused by the processor. Terminal.
	PaymentRejected PaymentStatus = "rejected"
	// PaymentExpired: not paid before expiredAt. Terminal, but a late transfer
	// can still move it to a paid status.
	PaymentExpired PaymentStatus = "expired"
	// PaymentPaid: paid in full. Terminal, success.
	PaymentPaid PaymentStatus = "paid"
	// PaymentPaidOver: paid more than payAmount. Terminal, success; a person
	// may need to refund the excess.
	PaymentPaidOver PaymentStatus = "paid_over"
	// PaymentPaidPartial: paid less than payAmount. Terminal, not a success;
	// a person should decide what to do with the funds received.
	PaymentPaidPartial PaymentStatus = "paid_partial"
)

// String returns the status as sent on the wire.
func (s PaymentStatus) String() string { return string(s) }

// IsTerminal reports whether the payment will not move on by itself: paid,
// paid_over, paid_partial, failed, rejected and expired. Terminal is not
// final forever: a late transfer can move an expired payment to paid.
func (s PaymentStatus) IsTerminal() bool {
	switch s {
	case PaymentPaid, PaymentPaidOver, PaymentPaidPartial, PaymentFailed, PaymentRejected, PaymentExpired:
		return true
	}
	return false
}

// IsSuccess reports whether at least the requested amount was paid: paid or
// paid_over. paid_partial is not a success.
func (s PaymentStatus) IsSuccess() bool {
	return s == PaymentPaid || s == PaymentPaidOver
}

// NeedsAction reports whether a person should look at the payment: locked,
// paid_partial and paid_over.
func (s PaymentStatus) NeedsAction() bool {
	return s == PaymentLocked || s == PaymentPaidPartial || s == PaymentPaidOver
}

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
	// PayoutPaid: delivered. Terminal, success.
	PayoutPaid PayoutStatus = "paid"
	// PayoutFailed: not delivered. Terminal.
	PayoutFailed PayoutStatus = "failed"
	// PayoutCancelled: cancelled before delivery. Terminal.
	PayoutCancelled PayoutStatus = "cancelled"
)

// String returns the status as sent on the wire.
func (s PayoutStatus) String() string { return string(s) }

// IsTerminal reports whether the payout is paid, failed or cancelled.
func (s PayoutStatus) IsTerminal() bool {
	return s == PayoutPaid || s == PayoutFailed || s == PayoutCancelled
}

// IsSuccess reports whether the payout was delivered (paid).
func (s PayoutStatus) IsSuccess() bool { return s == PayoutPaid }

// NeedsAction reports whether a person should look at the payout: review.
func (s PayoutStatus) NeedsAction() bool { return s == PayoutReview }
