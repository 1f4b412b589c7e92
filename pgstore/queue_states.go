package pgstore

import (
	"fmt"
	"slices"
	"strings"
)

// The intent's state machine, in one place: the states, which of them the
// workers claim, which are final, and every named transition with who
// makes it. IsFinal, States, the claim's and the due index's SQL, the
// operators' moves, the worker's guard on every record and the diagram in
// docs/payout-queue.md (TestStateDiagramInDocs) all come from these
// tables.

// IntentState is where a payout intent stands. The final states are
// StatePaid, StateFailed, StateRefused, StateRejected and StateBlocked.
type IntentState string

// Intent states.
const (
	// StateNeedsApproval: above the approval threshold; waits for Approve
	// or Reject. Nothing is sent meanwhile. An intent enters it at Enqueue
	// (by the enqueuing process's threshold) or, not yet approved, when a
	// worker (by its own threshold) is about to send it.
	StateNeedsApproval IntentState = "needs_approval"
	// StateQueued: due to be sent (again, after a "not created" verdict).
	StateQueued IntentState = "queued"
	// StateSending: an attempt was committed; its create request may be
	// in flight. Found by another worker (the lease ran out), it is
	// reconciled, never resent on a guess.
	StateSending IntentState = "sending"
	// StateReconciling: the create request's outcome is unknown (no answer,
	// a timeout, a 5xx ...); the payout list is read before anything else.
	StateReconciling IntentState = "reconciling"
	// StateParked: reconciliation could not decide (the list was
	// unreadable or inconsistent), or the intent has a Hold (a 2xx answer
	// that could not be matched, or MaxAttempts reached). It is reconciled
	// again with backoff (a payout found by its orderId is followed) and
	// never resent without a "not created" verdict (none at all with a
	// Hold) or an operator's Retry. Every entry into this state reaches
	// QueueConfig.Observer.
	StateParked IntentState = "parked"
	// StateCreated: the payout exists; it is followed to its final status.
	StateCreated IntentState = "created"
	// StatePaid: the payout is paid. Final.
	StatePaid IntentState = "paid"
	// StateFailed: the payout failed or was cancelled (PayoutStatus says
	// which); the processor did not deliver it. Final.
	StateFailed IntentState = "failed"
	// StateRefused: the API refused the create request definitely (a 4xx
	// other than 408 and 429, or parameters the SDK refused before
	// sending); LastError says why. Nothing was created. Final.
	StateRefused IntentState = "refused"
	// StateRejected: an operator rejected it (Reject). Final.
	StateRejected IntentState = "rejected"
	// StateBlocked: a guardrail (MaxAmount, the address check) stopped it
	// before sending; LastError says which. Final.
	StateBlocked IntentState = "blocked"
)

// IsFinal reports whether the state is final: the intent will not move
// again. QueueConfig.OnFinal has run for it unless Intent.CallbackDue.
func (s IntentState) IsFinal() bool {
	d, ok := stateOf(s)
	return ok && d.final
}

// States lists every state, in their usual order.
func States() []IntentState {
	out := make([]IntentState, len(stateDefs))
	for i, d := range stateDefs {
		out[i] = d.state
	}
	return out
}

// stateDef is one state: whether workers claim it (open) and whether it
// is final.
type stateDef struct {
	state       IntentState
	open, final bool
}

// stateDefs lists every state, in their usual order.
var stateDefs = []stateDef{
	{StateNeedsApproval, false, false},
	{StateQueued, true, false},
	{StateSending, true, false},
	{StateReconciling, true, false},
	{StateParked, true, false},
	{StateCreated, true, false},
	{StatePaid, false, true},
	{StateFailed, false, true},
	{StateRefused, false, true},
	{StateRejected, false, true},
	{StateBlocked, false, true},
}

// Who makes a transition.
const (
	byEnqueue  = "enqueue"
	byWorker   = "worker"
	byOperator = "operator"
	byBooks    = "books"
)

// HoldUnsentListed (Intent.Hold): the books check (Books) found a payout
// that can move money listed at the provider under the orderId of this
// intent, which the queue had not sent (queued or needs_approval), and
// parked it; LastError names the listed payout. Sending it could pay
// twice, so no worker claims it (not even to reconcile it), and Approve
// and Retry refuse it (ErrUnsentButListed) until an operator resolves it:
// the release move (the listed payout is another one: back to the state
// it was parked from), reject-listed (nothing will be sent), or Resolve
// (the listed payout is this intent's: followed, never sent).
const HoldUnsentListed = "unsent_but_listed"

// claimableSQL is the SQL predicate of the intents the workers claim: in
// an open state, and not parked by the books check (HoldUnsentListed).
func claimableSQL() string {
	return "state IN (" + openStatesSQL() + ") AND hold <> '" + HoldUnsentListed + "'"
}

// moveDef is one named transition: from any of from to to, made by by.
type moveDef struct {
	name string
	by   string
	from []IntentState // nil: from nothing (the enqueue)
	to   IntentState
}

// beforeSend are the states from which a worker may commit an attempt:
// queued, and an attempt reconciled as "not created". Not sending: an
// intent found in sending is first recorded reconciling (taken over), so
// every attempt is a change of state.
var beforeSend = []IntentState{StateQueued, StateReconciling, StateParked}

// moveDefs lists every transition: the enqueue's, the workers', and the
// operators', which moves.go inserts from its table of moves (at
// operatorMovesAt) when the package starts. A record that keeps the state
// (a poll, a backoff) is no transition.
var moveDefs = []moveDef{
	{"enqueue", byEnqueue, nil, StateQueued},
	{"enqueue above the approval threshold", byEnqueue, nil, StateNeedsApproval},
	{"enqueue stopped by a guardrail", byEnqueue, nil, StateBlocked},
	{"listed at the provider, never sent", byBooks, []IntentState{StateQueued, StateNeedsApproval}, StateParked},
	{"release (it was held for approval)", byOperator, []IntentState{StateParked}, StateNeedsApproval},
	{"hold for approval", byWorker, beforeSend, StateNeedsApproval},
	{"block", byWorker, beforeSend, StateBlocked},
	{"hold by velocity", byWorker, beforeSend[1:], StateQueued},
	{"commit an attempt", byWorker, beforeSend, StateSending},
	{"answered: created", byWorker, []IntentState{StateSending}, StateCreated},
	{"answered: refused", byWorker, []IntentState{StateSending}, StateRefused},
	{"answered 401 or 403: queued until the key works", byWorker, []IntentState{StateSending}, StateQueued},
	{"no answer", byWorker, []IntentState{StateSending}, StateReconciling},
	{"taken over", byWorker, []IntentState{StateSending}, StateReconciling},
	{"answered 2xx, not matched", byWorker, []IntentState{StateSending}, StateParked},
	{"answered or found: final", byWorker, []IntentState{StateSending, StateReconciling, StateParked}, StatePaid},
	{"answered or found: final", byWorker, []IntentState{StateSending, StateReconciling, StateParked}, StateFailed},
	{"found by the list", byWorker, []IntentState{StateReconciling, StateParked}, StateCreated},
	{"undecided, held or at MaxAttempts", byWorker, []IntentState{StateReconciling}, StateParked},
	{"followed to the end", byWorker, []IntentState{StateCreated}, StatePaid},
	{"followed to the end", byWorker, []IntentState{StateCreated}, StateFailed},
}

// operatorMovesAt is where the operators' transitions go in moveDefs:
// after the enqueue's and the books check's.
const operatorMovesAt = 5

func stateOf(s IntentState) (stateDef, bool) {
	for _, d := range stateDefs {
		if d.state == s {
			return d, true
		}
	}
	return stateDef{}, false
}

// canMove reports whether by may move an intent from one state to another
// (a record that keeps the state always may).
func canMove(from, to IntentState, by string) bool {
	if from == to && from != "" {
		return true
	}
	for _, m := range moveDefs {
		if m.to == to && m.by == by && (from == "" && m.from == nil || slices.Contains(m.from, from)) {
			return true
		}
	}
	return false
}

// openStatesSQL is the SQL list of the states the workers claim.
func openStatesSQL() string {
	var b strings.Builder
	for _, d := range stateDefs {
		if d.open {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "'%s'", d.state)
		}
	}
	return b.String()
}

// stateDiagram is the machine as a Mermaid state diagram, as
// docs/payout-queue.md shows it: one line per transition (moves that share
// their ends and actor are one line, their names joined).
func stateDiagram() string {
	type edge struct {
		from, to IntentState
		by       string
	}
	var order []edge
	names := map[edge][]string{}
	for _, m := range moveDefs {
		froms := m.from
		if froms == nil {
			froms = []IntentState{""}
		}
		for _, f := range froms {
			e := edge{f, m.to, m.by}
			if _, ok := names[e]; !ok {
				order = append(order, e)
			}
			if !slices.Contains(names[e], m.name) {
				names[e] = append(names[e], m.name)
			}
		}
	}
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	for _, e := range order {
		from := string(e.from)
		if from == "" {
			from = "[*]"
		}
		fmt.Fprintf(&b, "    %s --> %s: %s (%s)\n", from, e.to, strings.Join(names[e], "; "), e.by)
	}
	for _, d := range stateDefs {
		if d.final {
			fmt.Fprintf(&b, "    %s --> [*]\n", d.state)
		}
	}
	return b.String()
}
