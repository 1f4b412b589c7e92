package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cryptopay/cryptopay-go"
)

// The operators' moves, declared once, as data: the console builds its
// buttons, confirmation pages and bulk actions from Moves, and the CLI its
// commands and flags. Adding a move is one entry here and its statement.

var moves = []Move{
	{Name: "approve", Verb: "Approve", On: ObjectPayout, Role: MoveApprover, From: []IntentState{StateNeedsApproval}, To: StateQueued,
		Fields: []MoveField{noteField}, Bulk: true, Done: "approved",
		Confirm: "Four eyes: the payout is sent once the required number of different people have approved it.",
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			got, err := s.Queue.approve(ctx, in.OrderID, in.By, in.Values["note"])
			return Moved{Intent: got}, err
		},
		many: func(ctx context.Context, q *Queue, ids []string, by Operator, note string) (BulkResult, error) {
			return q.approveMany(ctx, ids, by, note)
		}},
	{Name: "reject", Verb: "Reject", On: ObjectPayout, Role: MoveApprover, From: []IntentState{StateNeedsApproval}, To: StateRejected,
		Fields: []MoveField{{Name: "reason", Label: "Reason", Usage: "why it is rejected, recorded with the intent (required)", Required: true, Text: true}},
		Done:   "rejected", Confirm: "Rejecting is final: nothing will be sent."},
	{Name: "retry", Verb: "Retry", On: ObjectPayout, Role: MoveOperator, From: []IntentState{StateParked}, To: StateQueued,
		Fields: []MoveField{needNote}, Bulk: true, Done: "retried",
		Confirm: "Only after checking with the processor (its dashboard, by orderId) that NO payout exists for this order: " +
			"retrying a payout that exists pays it twice.",
		many: func(ctx context.Context, q *Queue, ids []string, by Operator, note string) (BulkResult, error) {
			return q.retryMany(ctx, ids, by, note)
		}},
	{Name: "resolve", Verb: "Resolve", On: ObjectPayout, Role: MoveOperator, From: []IntentState{StateParked}, To: StateCreated,
		Fields: []MoveField{{Name: "payout-id", Label: "Payout id at the processor", Usage: "the payout's `id` in the processor's dashboard (required)", Required: true}, needNote},
		Done:   "resolved", NeedsAPI: true, hold: holdAny,
		Confirm: "Give the id of the payout you found at the processor for this orderId; it is read through the API and must match this intent.",
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			got, err := s.Queue.resolve(ctx, in.OrderID, in.Values["payout-id"], in.By, in.Values["note"])
			return Moved{Intent: got}, err
		}},
	{Name: "cancel", Verb: "Cancel", On: ObjectPayout, Role: MoveOperator, From: []IntentState{StateQueued}, To: StateRejected,
		Fields: []MoveField{{Name: "reason", Label: "Reason", Usage: "why it is cancelled, recorded with the intent (required)", Required: true, Text: true}},
		Done:   "cancelled",
		Confirm: "Cancelling a queued payout is final: it is rejected before any attempt is sent. A payout a worker has begun " +
			"sending is no longer queued and cannot be cancelled."},
	{Name: "release", Verb: "Release", On: ObjectPayout, Role: MoveOperator, From: []IntentState{StateParked}, To: StateQueued,
		Fields: []MoveField{listedNeeded, needNote}, Done: "released", hold: holdListed,
		Confirm: "Only for a payout the books check parked (hold unsent_but_listed), once you have checked at the processor that the payout " +
			"listed under this orderId is NOT this one (another system's, another order's): releasing sends it (it goes back to " +
			"needs_approval if it was held for approval), and if the listed payout is this one it is paid twice.",
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			got, err := s.Queue.moveListed(ctx, in.OrderID, in.By, in.Values["note"], in.Values["listed"], StateQueued)
			return Moved{Intent: got}, err
		}},
	{Name: "reject-listed", Verb: "Reject", On: ObjectPayout, Role: MoveOperator, From: []IntentState{StateParked}, To: StateRejected,
		Fields: []MoveField{listedField, {Name: "reason", Label: "Reason", Usage: "why it is rejected, recorded with the intent (required)", Required: true, Text: true}},
		Done:   "rejected", hold: holdListed,
		Confirm: "Only for a payout the books check parked (hold unsent_but_listed): rejecting is final, nothing will be sent, and " +
			"OnFinal runs with rejected. If the listed payout is exactly this intent's, resolve it with its id instead, so OnFinal " +
			"sees it paid.",
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			got, err := s.Queue.moveListed(ctx, in.OrderID, in.By, in.Values["reason"], in.Values["listed"], StateRejected)
			return Moved{Intent: got}, err
		}},
	{Name: "clear-anomaly", Verb: "Clear the anomaly", On: ObjectPayment, Role: MoveOperator,
		Fields: []MoveField{
			{Name: "anomaly", Label: "Anomaly", Usage: "the anomaly `text` you looked into: nothing is cleared if the payment now says another", Seen: true},
			{Name: "note", Label: "Note", Usage: "what is recorded with the payment: who looked, and what they found (required)", Required: true, Text: true}},
		Done: "cleared", Payments: "with an anomaly → anomaly cleared", applies: func(p *TrackedPayment) bool { return p.Anomaly != "" },
		Confirm: "Clearing only stops flagging the payment: no status is recorded and nothing is credited. A webhook for another " +
			"payment of this order means the customer may have paid that one: settle it first.",
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			cleared, err := s.Tracker.clearAnomaly(ctx, in.OrderID, in.By, in.Values["note"], in.Values["anomaly"])
			return Moved{Cleared: cleared}, err
		}},
	refundPaymentMove, resolveMove("accept", "Accept as paid", "accepted", ResolutionAccepted,
		"Accepting records that the merchant keeps the payment as it was paid (an underpayment let go, an overpayment kept by "+
			"agreement): nothing is sent, and the payment leaves the unresolved list."),
	resolveMove("write-off", "Write off", "written off", ResolutionWrittenOff,
		"Writing off records that the money is given up (a customer who never claimed, an amount too small to send): "+
			"nothing is sent, and the payment leaves the unresolved list."),
}

// init puts the payout moves' transitions into the state machine
// (moveDefs), so the machine, its diagram and the operators' guard
// (canMove) know each move from its one entry here.
func init() {
	var ops []moveDef
	for _, m := range moves {
		if m.On == ObjectPayout {
			ops = append(ops, moveDef{m.Name, byOperator, m.From, m.To})
		}
	}
	moveDefs = slices.Insert(moveDefs, operatorMovesAt, ops...)
}

// Moves returns every operator's move, in the order a page offers them
// (copies: changing one changes no move).
func Moves() []Move {
	out := make([]Move, len(moves))
	for i, m := range moves {
		out[i] = m.clone()
	}
	return out
}

// MoveNamed returns the move named name on what (ObjectPayout,
// ObjectPayment), or false.
func MoveNamed(on, name string) (Move, bool) {
	i := slices.IndexFunc(moves, func(m Move) bool { return m.On == on && m.Name == name })
	if i < 0 {
		return Move{}, false
	}
	return moves[i].clone(), true
}

// clone is m with its own From and Fields (and their Choices).
func (m Move) clone() Move {
	m.From, m.Fields = slices.Clone(m.From), slices.Clone(m.Fields)
	for i := range m.Fields {
		m.Fields[i].Choices = slices.Clone(m.Fields[i].Choices)
	}
	return m
}

// AppliesTo reports whether the move applies to an intent in state (a
// payout's move).
func (m Move) AppliesTo(state IntentState) bool { return slices.Contains(m.From, state) }

// AppliesToIntent reports whether the move applies to in now: to its
// state (AppliesTo), and to its hold: an intent the books check parked
// (HoldUnsentListed) takes only the moves that settle it (release,
// reject-listed, resolve), and release and reject-listed take no other.
// A page offers only these; the statements check it again.
func (m Move) AppliesToIntent(in *Intent) bool {
	i := slices.IndexFunc(moves, func(t Move) bool { return t.On == ObjectPayout && t.Name == m.Name })
	if i < 0 || in == nil || !moves[i].AppliesTo(in.State) {
		return false
	}
	switch moves[i].hold {
	case holdAny:
		return true
	case holdListed:
		return in.Hold == HoldUnsentListed
	}
	return in.Hold != HoldUnsentListed
}

// Do makes the move once, in one transaction, and returns what it
// changed. The move is the table's entry of m's name (Moves). Its required fields must be set (else a
// *cryptopay.ValidationError naming the field); a store the move needs
// that s lacks is ErrUnknownMove. The move's own errors are those of its
// statement: ErrIntentNotFound, ErrIntentState, ErrApprovalNotCounted,
// ErrNotTracked, ErrChanged, a *cryptopay.ValidationError.
func (m Move) Do(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
	m, err := m.ready(s)
	if err != nil {
		return Moved{}, err
	}
	if err := m.check(in.Values); err != nil {
		return Moved{}, err
	}
	if m.do != nil {
		return m.do(ctx, s, in)
	}
	got, err := s.Queue.operate(ctx, in.OrderID, in.By, in.Values[m.Fields[0].Name], m.From[0], m.To)
	return Moved{Intent: got}, err
}

// DoMany makes a bulk move (Bulk) on exactly the intents of ids, with
// one note, in transactions of BulkBatch: an intent that cannot move
// (another state now, or an approval that does not count) is skipped.
func (m Move) DoMany(ctx context.Context, s Stores, ids []string, by Operator, values map[string]string) (BulkResult, error) {
	m, err := m.ready(s)
	if err != nil {
		return BulkResult{}, err
	}
	if m.many == nil {
		return BulkResult{}, fmt.Errorf("%w: %s is not a bulk move", ErrUnknownMove, m.Name)
	}
	if err := m.check(values); err != nil {
		return BulkResult{}, err
	}
	return m.many(ctx, s.Queue, ids, by, values["note"])
}

// ready returns the table's entry of m (a Move built or changed by the
// caller moves nothing but what the table says), once s has its store.
func (m Move) ready(s Stores) (Move, error) {
	i := slices.IndexFunc(moves, func(t Move) bool { return t.On == m.On && t.Name == m.Name })
	switch {
	case i < 0:
		return m, fmt.Errorf("%w: %q on %q", ErrUnknownMove, m.Name, m.On)
	case m.On == ObjectPayout && s.Queue == nil, m.On == ObjectPayment && s.Tracker == nil:
		return m, fmt.Errorf("%w: %s needs the %s store", ErrUnknownMove, m.Name, m.On)
	case moves[i].NeedsRefunds && s.Refunds == nil:
		return m, fmt.Errorf("%w: %s needs the refunds store", ErrUnknownMove, m.Name)
	}
	return moves[i], nil
}

// Available reports whether s has every store the move needs (a page
// offers only those).
func (m Move) Available(s Stores) bool {
	_, err := m.ready(s)
	return err == nil
}

// AppliesToPayment reports whether a payment's move applies to p now
// (Payments says when).
func (m Move) AppliesToPayment(p *TrackedPayment) bool {
	i := slices.IndexFunc(moves, func(t Move) bool { return t.On == ObjectPayment && t.Name == m.Name })
	return i >= 0 && p != nil && moves[i].applies(p)
}

// check refuses values without a required field, or with a value not
// among a field's Choices.
func (m Move) check(values map[string]string) error {
	for _, f := range m.Fields {
		v := strings.TrimSpace(values[f.Name])
		switch {
		case f.Required && v == "":
			return &cryptopay.ValidationError{Field: f.Name, Reason: "is required: nothing was done"}
		case v != "" && len(f.Choices) > 0 && !slices.Contains(f.Choices, v):
			return &cryptopay.ValidationError{Field: f.Name, Reason: fmt.Sprintf("is one of %s: nothing was done", strings.Join(f.Choices, ", "))}
		}
	}
	return nil
}

// movesMarkdown is the table of the moves as docs/console.md shows it:
// one row per move, what it needs and what it tells the person.
func movesMarkdown() string {
	var b strings.Builder
	b.WriteString("| Move | On | Role | From → to | Inputs | Bulk | Confirmation |\n|---|---|---|---|---|---|---|\n")
	for _, m := range moves {
		fromTo := m.Payments
		if m.On == ObjectPayout {
			fromTo = strings.Join(stateNames(m.From), ", ") + " → " + string(m.To)
		}
		var in []string
		for _, f := range m.Fields {
			switch {
			case f.Seen:
				in = append(in, "`"+f.Name+"` (what was shown)")
			case len(f.Choices) > 0:
				in = append(in, "`"+f.Name+"` (required: "+strings.Join(f.Choices, ", ")+")")
			case f.Required:
				in = append(in, "`"+f.Name+"` (required)")
			default:
				in = append(in, "`"+f.Name+"`")
			}
		}
		bulk := ""
		if m.Bulk {
			bulk = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s | %s |\n", m.Name, m.On, m.Role, fromTo, strings.Join(in, ", "), bulk, m.Confirm)
	}
	return b.String()
}
