package pgstore

import "context"

// MoveRole is what a move needs of whoever makes it. The console's roles
// of the same names grant it.
type MoveRole string

// Move roles.
const (
	// MoveApprover decides on payouts held for approval.
	MoveApprover MoveRole = "approver"
	// MoveOperator retries, resolves and cancels payouts, and clears
	// payment anomalies.
	MoveOperator MoveRole = "operator"
)

// What a move acts on.
const (
	// ObjectPayout: a payout intent of the Queue.
	ObjectPayout = "payout"
	// ObjectPayment: a tracked payment of the Tracker.
	ObjectPayment = "payment"
)

// MoveField is one input a move asks for besides who makes it: a form
// field of the console, a flag of the CLI.
type MoveField struct {
	// Name is the form field's name and the CLI's flag ("note",
	// "reason", "payout-id", "anomaly").
	Name string
	// Label names it on a form.
	Label string
	// Usage is the CLI flag's help.
	Usage string
	// Required: the move is refused without it (a *cryptopay.ValidationError),
	// before anything changes.
	Required bool
	// Text: free text, written on a form as several lines (a note, a
	// reason); else one token (an id).
	Text bool
	// Seen: not typed, but what the confirmation showed the person (the
	// console carries it in the form; the CLI's flag is optional): the
	// move changes nothing if the record no longer says it.
	Seen bool
	// Choices, if any, are the only values it takes (a select on a form);
	// another is refused before anything changes.
	Choices []string
}

// MoveInput is what one move is given.
type MoveInput struct {
	// OrderID names the intent or the payment.
	OrderID string
	// By is who makes the move.
	By Operator
	// Values are the move's fields by MoveField.Name; text is kept to one
	// capped line.
	Values map[string]string
}

// Moved is what a move changed.
type Moved struct {
	// Intent is the payout intent after a payout's move.
	Intent *Intent
	// Cleared is the anomaly a payment's move cleared.
	Cleared string
	// Refund is the refund a refund move made (or found: RefundCreated
	// false, a retry with its idempotency key).
	Refund        *Refund
	RefundCreated bool
	// Resolution is the resolution a payment's move recorded (a refund
	// records one naming its refund).
	Resolution *Resolution
}

// Stores are what the moves act on: a nil one has no moves.
type Stores struct {
	Queue   *Queue
	Tracker *Tracker
	// Refunds makes the refund, accept and write-off moves of a payment.
	Refunds *Refunds
}

// Move is one operator's move: what it needs, what it applies to, what to
// tell the person before and after.
type Move struct {
	// Name names it: the console's action and the CLI's sub-command.
	Name string
	// Verb is its button's word.
	Verb string
	// On is what it moves: ObjectPayout or ObjectPayment.
	On string
	// Role is what the person needs.
	Role MoveRole
	// From are the states it applies to (a payout's move); To is where it
	// leads (for approve: once enough people approved).
	From []IntentState
	To   IntentState
	// Fields are its inputs.
	Fields []MoveField
	// Confirm is what the person must know before confirming it.
	Confirm string
	// Done says what it did ("approved").
	Done string
	// Bulk: it can move a set at once (DoMany).
	Bulk bool
	// NeedsAPI: the Queue needs a Client (the payout is read through the
	// API).
	NeedsAPI bool
	// Payments says which payments a payment's move applies to and what
	// it leads to (AppliesToPayment decides).
	Payments string
	// NeedsRefunds: the move needs Stores.Refunds.
	NeedsRefunds bool

	// hold says which intents it applies to by their hold (see
	// AppliesToIntent).
	hold moveHold

	// do is its statement; nil: the operator's move from From[0] to To
	// (Queue.operate), recording its one field's text. many is its bulk
	// statement.
	do      func(ctx context.Context, s Stores, in MoveInput) (Moved, error)
	applies func(p *TrackedPayment) bool
	many    func(ctx context.Context, q *Queue, ids []string, by Operator, note string) (BulkResult, error)
}

// moveHold says which intents a payout's move applies to by their hold:
// those the books check did not park (the zero value), only those it
// parked (HoldUnsentListed), or both.
type moveHold int

const (
	holdNotListed moveHold = iota
	holdListed
	holdAny
)

// note and reason: the two texts a move records; listed: what the books
// check said of the payout listed for an intent it parked.
var (
	listedField = MoveField{Name: "listed", Label: "Listed payout", Seen: true,
		Usage: "the intent's last error as you read it (it names the payout listed at the processor): nothing is done if the intent now says another"}
	// listedNeeded is listedField for a move that sends (release): the
	// words shown must come with it.
	listedNeeded = MoveField{Name: "listed", Label: "Listed payout", Seen: true, Required: true,
		Usage: "the intent's last error as you read it (required: it names the payout listed at the processor): nothing is done if the intent now says another"}
	noteField = MoveField{Name: "note", Label: "Note", Usage: "what is recorded with the move: who, and why", Text: true}
	needNote  = MoveField{Name: "note", Label: "Note", Usage: "what is recorded with the move: who checked, and how (required)", Required: true, Text: true}
)
