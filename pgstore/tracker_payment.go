package pgstore

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// What the tracker keeps of a payment and hands out: its state
// (TrackState), the payment as tracked (TrackedPayment), a recorded change
// (PaymentChange) and an operator's move on it (OperatorMove).

// TrackState is where a tracked payment stands for the tracker (not the
// payment's status: see TrackedPayment.Status).
type TrackState string

// Tracker states.
const (
	// TrackUnmatched: tracked by orderId alone (the create answer was
	// lost); the payment's id is unknown, so nothing can be read. Its first
	// authenticated webhook (Tracker.PaymentChanged) gives the id.
	TrackUnmatched TrackState = "unmatched"
	// TrackOpen: before expiredAt; read every OpenEvery and on every
	// webhook.
	TrackOpen TrackState = "open"
	// TrackLate: past expiredAt and not settled (expired, paid_partial,
	// still waiting ...); read less and less often, up to Horizon after
	// expiredAt, to catch late transfers.
	TrackLate TrackState = "late"
	// TrackClosed: a final status, a success, or past the horizon: no more
	// polls. A webhook (PaymentChanged) still wakes a payment whose status
	// can move, so a transfer after the horizon is still credited.
	TrackClosed TrackState = "closed"
)

// TrackedPayment is a payment as the tracker holds it.
type TrackedPayment struct {
	// OrderID is the merchant's orderId (the key).
	OrderID string
	// PaymentID is the payment's id; empty while TrackUnmatched.
	PaymentID string
	// State is where the tracker stands with it.
	State TrackState
	// Status is the latest status recorded: Track's payment's (waiting, a
	// create answer) until a read shows another; "" for a payment tracked
	// by orderId alone until its first read.
	Status cryptopay.PaymentStatus
	// PaidAmount is the latest paid amount recorded (invalid: none).
	PaidAmount decimal.NullDecimal
	// MerchantAmount is the provider's merchantAmount (what the payment
	// brought to the balance) at the latest recorded change (invalid:
	// none, or recorded before the tracker kept it).
	MerchantAmount decimal.NullDecimal
	// PayAmount, Currency and Network are the payment's, as tracked.
	PayAmount         decimal.NullDecimal
	Currency, Network string
	// ExpiredAt is the payment's expiredAt (zero while unknown).
	ExpiredAt time.Time
	// NeedsAction says a person should look: the status needs action
	// (locked, paid_partial, paid_over) or Anomaly is set.
	NeedsAction bool
	// Anomaly describes what the tracker refused to record, or recorded
	// but a person should check (docs/payment-tracker.md, "Keeping your
	// books"): an answer for another payment or order, or in another
	// currency, network or payAmount; an unknown status; a move the
	// lifecycle table does not allow; a paid amount that is negative, went
	// down, or disagrees with the status; an expiredAt other than tracked;
	// an id the API does not know; a webhook for another payment of this
	// order. A new anomaly is added to those not yet cleared, never put in
	// their place (up to 4 KiB of text, NeedsAction set whatever the
	// length); they stay until an operator clears them (ClearAnomaly).
	// Server text: show it escaped.
	Anomaly string
	// Note is the operator's note of the latest ClearAnomaly, with the
	// anomaly it cleared ("" if none). Show it escaped.
	Note string
	// Changes counts the recorded changes (the history's length).
	Changes int
	// NextAt is when it is next read (zero: not polled).
	NextAt time.Time
	// LastFailure is the latest failed read or OnChange of the payment
	// (a wrong API key, the API down, a callback that failed or
	// panicked); its Count is reset by the next read that succeeds.
	LastFailure Failure
	// TrackedAt and UpdatedAt are the database's times of Track and of the
	// latest change.
	TrackedAt, UpdatedAt time.Time
}

// PaymentChange is one recorded change of a tracked payment's status or
// paid amount, as TrackerConfig.OnChange, TrackerConfig.Observer and
// Tracker.History give it.
type PaymentChange struct {
	// OrderID and PaymentID name the payment.
	OrderID, PaymentID string
	// Seq is the change's number in the payment's history (1 first).
	Seq int
	// From and To are the statuses before and after (From is Track's
	// payment's status, waiting, for the first change of a payment tracked
	// by its create answer; "" for one tracked by orderId alone). They are
	// equal when only the paid amount changed.
	From, To cryptopay.PaymentStatus
	// FromPaid and ToPaid are the paid amounts before and after (invalid:
	// none). The merchant's ledger moves by ToPaid - FromPaid (Delta).
	FromPaid, ToPaid decimal.NullDecimal
	// MerchantAmount is the provider's merchantAmount after the change
	// (invalid: the answer had none). The books check's balance rolls
	// forward by its moves.
	MerchantAmount decimal.NullDecimal
	// Late is true when the change came after the payment's expiredAt (a
	// late transfer: expired -> paid, or a payment reached after expiry).
	Late bool
	// At is when it was recorded (the database's clock).
	At time.Time
	// Payment is the API's payment the change was read from (nil in
	// History).
	Payment *cryptopay.Payment
}

// Credits reports whether the change matters to money and so reaches
// TrackerConfig.OnChange: the paid amount changed (whatever the status:
// waiting, confirming and locked included), or the new status is terminal
// or needs action (paid, paid_over, paid_partial, locked, expired,
// failed, rejected), late moves included. Every change of the paid amount
// reaches OnChange, once: the sum of Delta over them is the paid amount
// the tracker last recorded from the API.
func (c *PaymentChange) Credits() bool {
	return !c.Delta().IsZero() || c.To.IsTerminal() || c.To.NeedsAction()
}

// Delta is the change's move of the merchant's ledger: ToPaid - FromPaid,
// an amount not given counting as zero. Book it on every change; ship the
// goods on the status (To.IsSuccess), not on the amount.
func (c *PaymentChange) Delta() decimal.Decimal {
	return paidOrZero(c.ToPaid).Sub(paidOrZero(c.FromPaid))
}

// paidOrZero is a paid amount, zero when none was given.
func paidOrZero(d decimal.NullDecimal) decimal.Decimal {
	if !d.Valid {
		return decimal.Zero
	}
	return d.Decimal
}

// MoveAction names an operator's move on a tracked payment.
type MoveAction string

// MoveClearAnomaly is ClearAnomaly's move.
const MoveClearAnomaly MoveAction = "clear_anomaly"

// OperatorMove is one operator's move on a tracked payment (Moves). Moves
// are kept apart from the history (History, PaymentChange): they record
// who acted, never a credit, so they change neither the books nor what
// reaches OnChange.
type OperatorMove struct {
	// At is the database's time of the move.
	At time.Time
	// ActorID is who made it: the actor ClearAnomaly was given (the
	// console's actor, the CLI's --actor), in canonical form
	// (CanonicalActor).
	ActorID string
	// Action is what was done.
	Action MoveAction
	// Anomaly is the anomaly it cleared (server text: show it escaped).
	Anomaly string
	// Note is the operator's note (show it escaped).
	Note string
}
