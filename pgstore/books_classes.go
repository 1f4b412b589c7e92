package pgstore

import "github.com/shopspring/decimal"

// What the books check reports: an item (BooksItem) per orderId or
// balance, and the class it concluded (BooksClass), which every section
// uses.

// BooksClass is what the books check concluded about one item.
type BooksClass string

// The classes of the books check, the drifts first. docs/books.md says
// what to do about each.
const (
	// BooksDoublePayment: more than one payout that can move money (not
	// failed, not cancelled) at the provider for one orderId, in the
	// intent's currency and network. Always drift; the first lines of the
	// report.
	BooksDoublePayment BooksClass = "double_payment"
	// BooksUnsentButListed: the provider lists a payout that can move
	// money (any status but failed and cancelled) for an intent the queue
	// has not sent: queued or needs_approval, or never attempted (and not
	// tied by an operator's Resolve to a payout). Always drift; the first
	// lines after the double payments. Unless BooksConfig.ReportOnly, the
	// check parks a queued or needs_approval one (HoldUnsentListed): the
	// workers never send it and Approve and Retry refuse it until an
	// operator releases, rejects or resolves it.
	BooksUnsentButListed BooksClass = "unsent_but_listed"
	// BooksPayoutDiffers: the provider's payout has another amount, wallet
	// or paid address than the queue's intent; or a payout for the orderId
	// is in another currency or network (an item of its own).
	BooksPayoutDiffers BooksClass = "payout_differs"
	// BooksStatusDiffers: one side is final and the other is not, past the
	// settle time; or both are final with different outcomes; or the
	// provider lists a payout for an intent the queue says was refused,
	// rejected or blocked after an attempt.
	BooksStatusDiffers BooksClass = "status_differs"
	// BooksProviderOnly: a payout at the provider whose orderId no intent
	// has: created outside the queue.
	BooksProviderOnly BooksClass = "provider_only"
	// BooksMissing: the queue holds the intent as created or paid, but the
	// provider does not list it, past the settle time.
	BooksMissing BooksClass = "missing_at_provider"
	// BooksTrackerDiffers: the tracker's recorded status or paid amount is
	// not what the provider says now, past the settle time.
	BooksTrackerDiffers BooksClass = "tracker_differs"
	// BooksTrackerBehind: the provider's payment is not what the tracker
	// recorded, and the tracker's read of it is overdue past the settle
	// time: no worker has read it. Start the tracker's workers; never book
	// it by hand (their read books it).
	BooksTrackerBehind BooksClass = "tracker_behind"
	// BooksCreditDiffers: what the tracker's history credited (the sum of
	// ToPaid - FromPaid) is not the provider's paid amount, past the
	// settle time.
	BooksCreditDiffers BooksClass = "credit_differs"
	// BooksLedgerDiffers: the merchant's own ledger (BooksConfig.LedgerSQL
	// or LedgerFunc) holds another sum than the tracker credited: an
	// OnChange that booked twice, or missed a change. Section "ledger": an
	// item of its own, beside the payment's. In section "payout_ledger":
	// the payout ledger (PayoutLedgerSQL or PayoutLedgerFunc) holds another
	// sum than the queue paid (an OnFinal that booked nothing, or twice).
	BooksLedgerDiffers BooksClass = "ledger_differs"
	// BooksLedgerOnly: the merchant's ledger (LedgerSQL) credits an
	// orderId the tracker does not know (section "ledger"), or its payout
	// ledger (PayoutLedgerSQL) books one the queue does not know (section
	// "payout_ledger").
	BooksLedgerOnly BooksClass = "ledger_only"
	// BooksRefundAbovePaid: a refunded payment's refunds paid out (each
	// refund paid counted once, at its recorded amount) more than the
	// tracker says it paid in. Section "refunds"; the payment's item.
	BooksRefundAbovePaid BooksClass = "refund_above_paid"
	// BooksRefundPaidTwice: the provider lists more than one paid payout
	// for one refund (its id is their orderId). Section "refunds"; the
	// refund's item, its delta the payouts beyond the first.
	BooksRefundPaidTwice BooksClass = "refund_paid_twice"
	// BooksRefundDiffers: a refund's payout has another amount, wallet or
	// paid address than the refund's row, or is in another currency or
	// network (an item of its own). Section "refunds"; the refund's item.
	BooksRefundDiffers BooksClass = "refund_payout_differs"
	// BooksBalanceDrift: the provider's balance of a currency and network
	// is not the last check's snapshot + what payments brought in (their
	// merchantAmount) - what payouts took out, beyond what is in flight.
	BooksBalanceDrift BooksClass = "balance_drift"
	// BooksOpening: the first check of a currency and network: the
	// provider's balance is recorded as the opening balance. Not drift.
	BooksOpening BooksClass = "opening_balance"
	// BooksAdjusted: a drift that adjustments (Books.Adjust) book to the
	// digit: listed apart, not drift. Its Detail names the drift's class.
	BooksAdjusted BooksClass = "adjusted"
	// BooksUndecided: the check could not decide (the payment could not be
	// read, its id is not known yet, a status the SDK does not know, a
	// paid payout with neither wallet nor paid address, a payout the list
	// cannot tell from two identical ones).
	BooksUndecided BooksClass = "undecided"
	// BooksInFlight: the two sides differ, but only as things in progress
	// do (within the settle time, or neither side final). Never drift.
	BooksInFlight BooksClass = "in_flight"
	// BooksMatched: both sides agree.
	BooksMatched BooksClass = "matched"
)

// IsDrift reports whether the class is a difference in the books (not
// matched, in flight, undecided, an opening balance or adjusted).
func (c BooksClass) IsDrift() bool {
	switch c {
	case BooksMatched, BooksInFlight, BooksUndecided, BooksOpening, BooksAdjusted:
		return false
	}
	return true
}

// BooksItem is one line of the books check: one orderId of one section,
// both sides' values and the class. Amounts are exact. Status, wallet and
// Detail text come partly from the provider: show it escaped.
type BooksItem struct {
	// Section is "payouts", "payout_ledger" (the merchant's payout ledger
	// against the queue's paid intents), "payments", "ledger" (the
	// merchant's ledger against the tracker's credits), "refunds" (a
	// refunded payment's paid amount against its refunds' payouts, and
	// each refund's drifts, OrderID the refund's id) or "balances".
	Section string
	// OrderID is the merchant's orderId ("" for a provider payout
	// without one, and for a balance: see Currency and Network).
	OrderID string
	// Class is what the check concluded.
	Class BooksClass
	// Ours and Theirs are the amounts on each side (invalid: that side
	// has none): the intent's amount and the provider's payout amount (the
	// sum of the payouts that can move money, for a double payment); the
	// credited sum and the provider's paid amount; the credited sum and
	// the merchant's ledger sum; a paid intent's amount (0 if final and
	// not paid) and the payout ledger's sum; the expected balance and the
	// provider's.
	Ours, Theirs decimal.NullDecimal
	// Delta is what to book for a drift item: Theirs - Ours (a missing
	// side counts 0), except: for BooksLedgerDiffers, the ledger's sum -
	// the credited (or paid) sum; for BooksStatusDiffers, the amount of
	// the one side that paid (plus the provider's, minus ours; 0 if
	// neither or both did); for BooksUnsentButListed and
	// BooksProviderOnly, the payout's amount; for a payout in another
	// currency or network, its amount if it can move money, else 0; for
	// BooksRefundPaidTwice, the paid payouts beyond the first. Zero
	// for an item that is not drift (matched, in flight, undecided, an
	// opening balance, adjusted): Ours and Theirs still show both sides.
	// docs/books.md says what it means for each class.
	Delta decimal.Decimal
	// Adjusted is the sum of the adjustments booked against the item
	// (Books.Adjust; invalid: none), already subtracted from Delta.
	Adjusted decimal.NullDecimal
	// Ledger is the merchant's ledger sum for the order (invalid: no
	// ledger given, or no entry).
	Ledger decimal.NullDecimal
	// OurStatus and TheirStatus are the queue's state or the tracker's
	// status, and the provider's status.
	OurStatus, TheirStatus string
	// Currency and Network are the provider's, else ours.
	Currency, Network string
	// OurWallet and TheirWallet are the payout's wallet on each side.
	OurWallet, TheirWallet string
	// Payouts is how many payouts the provider lists for the orderId.
	Payouts int
	// Detail says why, in words.
	Detail string
}
