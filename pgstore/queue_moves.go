package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// Approve records actor's approval of an intent in StateNeedsApproval,
// with note, in its history. Four eyes: the intent moves to StateQueued
// (Intent.ApprovedAt) only when Intent.ApprovalsNeeded distinct actors
// have approved it (QueueConfig.Approvals; an approving Queue with a
// larger one raises it); until then it stays held, and nothing is sent.
// Actors are compared in their canonical form (CanonicalActor): the
// actor who enqueued it (EnqueueBy) does not count, and an actor
// approving twice, under any spelling of the same id, counts once: either
// is ErrApprovalNotCounted and changes nothing. So does a second approval
// by the same principal (Operator): Approve names none, so its principal
// is the database role and actor; a tool that authenticates its users
// passes them through the approve move of Moves instead. An intent in
// another state is ErrIntentState; an invalid actor a
// *cryptopay.ValidationError (Field "actor"). Approvals survive worker
// restarts (they are columns, not memory). Once queued, it is sent
// subject to the other guardrails.
func (q *Queue) Approve(ctx context.Context, orderID, actor, note string) error {
	_, err := q.approve(ctx, orderID, Operator{ID: actor}, note)
	return err
}

// approve is Approve by an operator, returning the intent it changed.
func (q *Queue) approve(ctx context.Context, orderID string, by Operator, note string) (*Intent, error) {
	who, err := by.canonical()
	if err != nil {
		return nil, err
	}
	return q.apply(ctx, orderID, move{
		from: StateNeedsApproval, what: "approving", sql: q.sql.approve,
		args: func(role string) []any {
			return []any{orderID, who.ID, scrubNote(note), q.cfg.Approvals, who.principal(role)}
		},
		check: func(tx pgx.Tx) (string, error) {
			locked, err := q.lockApprovals(ctx, tx, []string{orderID})
			if err != nil {
				return "", err
			}
			if len(locked) == 0 {
				return "", fmt.Errorf("%w: %q", ErrIntentNotFound, orderID)
			}
			return locked[0].role, locked[0].whyNot(who)
		},
		whyNot: func(pgx.Tx) error { return fmt.Errorf("%w: %q is not %s", ErrIntentState, orderID, StateNeedsApproval) },
	})
}

// approvalRow is what an approval checks of an intent, read under its
// row lock, so two approvers are serialized and the second sees the
// first's approval.
type approvalRow struct {
	orderID    string
	state      IntentState
	enqueuedBy string
	hold       string
	approvedBy []string
	principals []string // the principals of the approvals (none for approvals recorded before principals were)
	role       string   // the database's session_user
}

// lockApprovals locks and reads the intents of orderIDs that exist, in
// orderId order (two bulk approvals lock in one order: no deadlock).
func (q *Queue) lockApprovals(ctx context.Context, tx pgx.Tx, orderIDs []string) ([]approvalRow, error) {
	rows, err := tx.Query(ctx, q.sql.lockApprovals, orderIDs)
	if err != nil {
		return nil, err
	}
	var out []approvalRow
	var r approvalRow
	var state string
	_, err = pgx.ForEachRow(rows, []any{&r.orderID, &state, &r.hold, &r.enqueuedBy, &r.approvedBy, &r.principals, &r.role}, func() error {
		r.state = IntentState(state)
		out = append(out, r)
		return nil
	})
	return out, err
}

// whyNot says why who's approval of r would not count: the intent is not
// held for approval, who enqueued it or approved it already (actor ids
// compared in canonical form, rows written before ids were canonical
// too), or who's principal approved it already under another actor id.
// nil: it counts.
func (r approvalRow) whyNot(who Operator) error {
	switch {
	case r.hold == HoldUnsentListed:
		return listedErr(r.orderID)
	case r.state != StateNeedsApproval:
		return fmt.Errorf("%w: %q is not %s", ErrIntentState, r.orderID, StateNeedsApproval)
	case actorKey(r.enqueuedBy) == who.ID:
		return fmt.Errorf("%w: %q enqueued %q, and needs another person's approval", ErrApprovalNotCounted, who.ID, r.orderID)
	case slices.ContainsFunc(r.approvedBy, func(by string) bool { return actorKey(by) == who.ID }):
		return fmt.Errorf("%w: %q approved %q already; it needs another person's approval", ErrApprovalNotCounted, who.ID, r.orderID)
	case slices.Contains(r.principals, who.principal(r.role)):
		return fmt.Errorf("%w: %s approved %q already, under another actor id; it needs another person's approval",
			ErrApprovalNotCounted, who.principal(r.role), r.orderID)
	}
	return nil
}

// move is one operator's statement (it returns the intent and whether it
// was fresh) and what goes with it.
type move struct {
	from IntentState
	what string // the error's words: "approving", "parked -> queued for"
	sql  string
	// args are the statement's arguments, given the database role check
	// read ("" without check). check, if set, runs first in the move's
	// transaction: an error refuses the move. whyNot says why the
	// statement changed no row; inTx, if set, runs after it in its
	// transaction (OnFinal).
	args   func(role string) []any
	check  func(tx pgx.Tx) (role string, err error)
	whyNot func(tx pgx.Tx) error
	inTx   func(tx pgx.Tx, in *Intent) error
}

// apply runs m in one transaction and reports its transitions once it
// committed.
func (q *Queue) apply(ctx context.Context, orderID string, m move) (*Intent, error) {
	if err := q.CheckSchema(ctx); err != nil {
		return nil, err
	}
	var in *Intent
	var fresh bool
	err := pgx.BeginFunc(ctx, q.cfg.Pool, func(tx pgx.Tx) error {
		var role string
		if m.check != nil {
			var err error
			if role, err = m.check(tx); err != nil {
				return err
			}
		}
		var err error
		in, err = scanIntent(tx.QueryRow(ctx, m.sql, m.args(role)...), &fresh)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return m.whyNot(tx)
		case err != nil || m.inTx == nil:
			return err
		}
		return m.inTx(tx, in)
	})
	if err != nil {
		if errors.Is(err, ErrIntentNotFound) || errors.Is(err, ErrIntentState) || errors.Is(err, ErrApprovalNotCounted) {
			return nil, err
		}
		return nil, fmt.Errorf("pgstore: %s %q: %w", m.what, orderID, err)
	}
	if fresh { // its first change: the enqueue is reported here (see enqueued)
		q.observe(Transition{OrderID: orderID, To: m.from})
	}
	if in.State != m.from {
		q.observe(Transition{OrderID: orderID, From: m.from, To: in.State, Attempts: in.Attempts, PayoutID: in.PayoutID})
		q.poke()
	}
	return in, nil
}

// Retry moves a parked intent back to StateQueued, so a new attempt is
// sent, and clears its Hold. Call it only after checking with the processor that the parked
// attempt created no payout (search its dashboard for the orderId): the
// queue could not tell, and a Retry of a payout that does exist pays it
// twice. actor (who checked) and note (how) are recorded.
func (q *Queue) Retry(ctx context.Context, orderID, actor, note string) error {
	_, err := q.operate(ctx, orderID, Operator{ID: actor}, note, StateParked, StateQueued)
	return err
}

// Reject moves an intent from StateNeedsApproval to StateRejected (final),
// running QueueConfig.OnFinal in the same transaction. A Queue without
// OnFinal (an operator's tool) leaves the callback due instead: a Run with
// OnFinal runs it, exactly once. actor and note are recorded; one
// person's rejection is enough.
func (q *Queue) Reject(ctx context.Context, orderID, actor, note string) error {
	_, err := q.operate(ctx, orderID, Operator{ID: actor}, note, StateNeedsApproval, StateRejected)
	return err
}

// Resolve records, for a parked intent, the payout an operator found at
// the processor (its dashboard, by orderId), for a parked intent the
// queue could not decide: a 2xx it could not match (HoldServerActed), a
// list it could not read or prove. Nothing is sent. The queue's own read
// of payoutID through the API (QueueConfig.Client) must name the intent's
// orderId, amount, currency, network and wallet address, and no other
// intent may hold that payout id; then the intent moves to StateCreated
// with it, and the workers follow it to its final status (OnFinal runs
// there). actor (who checked) and note (how) are recorded. Errors: ErrInvalidOption
// without a Client, ErrIntentNotFound, ErrIntentState (not parked), a
// *cryptopay.ValidationError (Field "payoutID") when the payout does not
// match. A payout created under another orderId (a server that altered
// it) is refused: the intent cannot be tied to it by this check.
func (q *Queue) Resolve(ctx context.Context, orderID, payoutID, actor, note string) error {
	_, err := q.resolve(ctx, orderID, payoutID, Operator{ID: actor}, note)
	return err
}

// resolve is Resolve by an operator, returning the intent it changed.
func (q *Queue) resolve(ctx context.Context, orderID, payoutID string, by Operator, note string) (*Intent, error) {
	who, err := by.canonical()
	if err != nil {
		return nil, err
	}
	if q.api == nil {
		return nil, fmt.Errorf("%w: Resolve needs QueueConfig.Client (the payout is read through the API)", ErrInvalidOption)
	}
	if why := ids.Text(payoutID, 128); why != "" || payoutID == "" {
		return nil, &cryptopay.ValidationError{Field: "payoutID", Reason: cmpOr(why, "is empty")}
	}
	in, err := q.Get(ctx, orderID)
	if err != nil {
		return nil, err
	}
	if in.State != StateParked {
		return nil, fmt.Errorf("%w: %q is not %s", ErrIntentState, orderID, StateParked)
	}
	got, err := q.api.get(ctx, payoutID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading payout %q for intent %q: %w", payoutID, orderID, err)
	}
	if why := payoutMismatch(got, payoutID, in.Params); why != "" {
		return nil, &cryptopay.ValidationError{Field: "payoutID", Reason: why}
	}
	var holder string
	switch err := q.cfg.Pool.QueryRow(ctx, q.sql.payoutHolder, got.ID, orderID).Scan(&holder); {
	case err == nil:
		return nil, &cryptopay.ValidationError{Field: "payoutID", Reason: fmt.Sprintf("is the payout of intent %q already", holder)}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("pgstore: resolving %q: %w", orderID, err)
	}
	return q.apply(ctx, orderID, move{
		from: StateParked, what: "resolving", sql: q.sql.resolve,
		args: func(string) []any {
			return []any{orderID, noNUL(got.ID), noNUL(string(got.Status)), scrubNote(note), who.ID}
		},
		whyNot: func(pgx.Tx) error {
			return fmt.Errorf("%w: %q is no longer %s, or its payout id was taken meanwhile", ErrIntentState, orderID, StateParked)
		},
	})
}

// listedErr is the refusal of a move on an intent the books check parked
// (HoldUnsentListed): it matches ErrUnsentButListed and ErrIntentState.
func listedErr(orderID string) error {
	return fmt.Errorf("%w: %w: %q is parked until an operator has looked at the payout listed for it (its last error names it): "+
		"release it (the listed payout is another one), reject it, or resolve it with the listed payout's id", ErrIntentState,
		ErrUnsentButListed, orderID)
}

// payoutMismatch says how the payout the API returned differs from the
// intent's parameters ("" if it is the intent's).
func payoutMismatch(got *cryptopay.Payout, id string, p cryptopay.CreatePayoutParams) string {
	switch {
	case got.ID != id:
		return "the API answered with another payout"
	case got.OrderID != p.OrderID:
		return fmt.Sprintf("names orderId %q, not the intent's", scrubText(got.OrderID))
	case !got.Amount.Equal(p.Amount):
		return fmt.Sprintf("is for %s, not the intent's %s", got.Amount, p.Amount)
	case !strings.EqualFold(got.Currency, p.Currency) || !strings.EqualFold(got.Network, p.Network):
		return fmt.Sprintf("is in %s on %s, not the intent's %s on %s", scrubText(got.Currency), scrubText(got.Network), p.Currency, p.Network)
	case !address.Same(p.Network, got.WalletAddress, p.WalletAddress):
		return "pays another wallet address than the intent's"
	}
	return ""
}

// operate is an operator's move from one state to another: under the row
// lock, in one transaction with OnFinal when the new state is final. It
// clears the lease, so a worker that holds the intent cannot record
// anything over it. It never moves an intent the books check parked
// (HoldUnsentListed: see moveListed).
func (q *Queue) operate(ctx context.Context, orderID string, by Operator, note string, from, to IntentState) (*Intent, error) {
	if !canMove(from, to, byOperator) {
		return nil, fmt.Errorf("pgstore: no operator's transition %s -> %s", from, to)
	}
	who, err := by.canonical()
	if err != nil {
		return nil, err
	}
	return q.apply(ctx, orderID, q.operateMove(ctx, orderID, who, note, from, &to, false))
}

// operateMove is the operate statement's move from one state to *to
// (read when the move runs: a check may set it), of an intent the books
// check parked (listed) or of one it did not.
func (q *Queue) operateMove(ctx context.Context, orderID string, who Operator, note string, from IntentState, to *IntentState, listed bool) move {
	final := to.IsFinal()
	m := move{
		from: from, what: fmt.Sprintf("%s -> %s for", from, *to), sql: q.sql.operate,
		args: func(string) []any {
			due := to.IsFinal() && q.cfg.OnFinal == nil
			return []any{orderID, string(from), string(*to), scrubNote(note), due, who.ID, listed}
		},
		whyNot: func(tx pgx.Tx) error {
			in, gerr := scanIntent(tx.QueryRow(ctx, q.sql.get, orderID))
			switch {
			case errors.Is(gerr, pgx.ErrNoRows):
				return fmt.Errorf("%w: %q", ErrIntentNotFound, orderID)
			case gerr == nil && in.Hold == HoldUnsentListed && !listed:
				return listedErr(orderID)
			}
			return fmt.Errorf("%w: %q is not %s", ErrIntentState, orderID, from)
		},
	}
	if final && q.cfg.OnFinal != nil {
		m.inTx = func(tx pgx.Tx, in *Intent) error {
			return guard("OnFinal", func() error { return q.cfg.OnFinal(ctx, tx, in) })
		}
	}
	return m
}
