package pgstore

// RefundState is where a refund stands before its payout intent.
type RefundState string

// Refund states.
const (
	// RefundAwaitingClaim: no address yet; the customer's claim (Claim)
	// gives it until ClaimUntil. Its amount is held against the payment
	// until then; an unclaimed refund past ClaimUntil holds nothing.
	RefundAwaitingClaim RefundState = "awaiting_claim"
	// RefundEnqueued: its payout intent (orderId Refund.ID) is in the
	// queue, held for approval when it was enqueued.
	RefundEnqueued RefundState = "enqueued"
)
