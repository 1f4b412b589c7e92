package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Intents the books check found listed at the provider though the queue
// never sent them (BooksUnsentButListed): parked with HoldUnsentListed, so
// that no worker sends them and no person approves or retries them, until
// an operator has looked (the release and reject-listed moves, or
// Resolve).
//
// Why a worker that claimed such an intent cannot send it once it is
// parked: a worker sends only after committing its attempt, an UPDATE
// that needs the row still in the state the worker claimed (queued) and
// still leased to it. The park locks the row (FOR UPDATE), reads its state,
// and only if it is still queued or needs_approval moves it to parked and
// clears the lease, in one transaction committed durably. The row lock
// orders the two: a park committed first leaves the attempt's UPDATE (which
// waited for the lock and, under READ COMMITTED, re-checks its WHERE on the
// row the park left) matching no row, so the worker drops the intent and
// sends nothing; an attempt committed first is read by the park as
// sending, and nothing is parked (parkListed says so). The workers' other
// records need the lease too, and the claim skips the hold.

// parkListed parks the intent orderID with HoldUnsentListed and why (the
// listed payout, in words) if it is still unsent: queued or
// needs_approval. It returns the state it found the intent in, and
// whether the intent is parked with HoldUnsentListed now (by this call, or
// by an earlier one: was is then StateParked). held false: a worker began
// sending it, or it changed, meanwhile; or released: an operator released
// it from the books check's last park, whose words began with same (the
// listed payout as created, without its status), and it stays as they
// left it.
func (q *Queue) parkListed(ctx context.Context, orderID, why, same string) (was IntentState, held, released bool, err error) {
	if err := q.CheckSchema(ctx); err != nil {
		return "", false, false, err
	}
	var in *Intent
	var fresh bool
	why = scrubNote(why)
	err = pgx.BeginFunc(ctx, q.cfg.Pool, func(tx pgx.Tx) error {
		var state, hold, last, from string
		if err := tx.QueryRow(ctx, q.sql.lockListed, orderID).Scan(&state, &hold, &last, &from); err != nil {
			return err
		}
		if was = IntentState(state); was != StateQueued && was != StateNeedsApproval {
			held = was == StateParked && hold == HoldUnsentListed
			return nil
		}
		if err := tx.QueryRow(ctx, q.sql.releasedFor, orderID, scrubNote(same)).Scan(&released); err != nil || released {
			return err
		}
		var err error
		in, err = scanIntent(tx.QueryRow(ctx, q.sql.park, orderID, state, why), &fresh)
		return err
	})
	if err != nil {
		return was, false, false, fmt.Errorf("pgstore: parking %q: %w", orderID, err)
	}
	if in == nil {
		return was, held, released, nil
	}
	if fresh { // its first change: the enqueue is reported here (see enqueued)
		q.observe(Transition{OrderID: orderID, To: was})
	}
	q.observe(Transition{OrderID: orderID, From: was, To: StateParked, Attempts: in.Attempts, PayoutID: in.PayoutID})
	return was, true, false, nil
}

// moveListed is an operator's move of an intent the books check parked
// (HoldUnsentListed): to StateRejected (reject-listed), or back to the
// state it was parked from (release: StateQueued, or StateNeedsApproval
// if it was held for approval, or if that is not recorded). seen, if
// given, is the intent's last error as the person was shown it (it names
// the listed payout): if the intent says another now, nothing changes
// (ErrChanged).
func (q *Queue) moveListed(ctx context.Context, orderID string, by Operator, note, seen string, to IntentState) (*Intent, error) {
	if !canMove(StateParked, to, byOperator) {
		return nil, fmt.Errorf("pgstore: no operator's transition %s -> %s", StateParked, to)
	}
	who, err := by.canonical()
	if err != nil {
		return nil, err
	}
	m := q.operateMove(ctx, orderID, who, note, StateParked, &to, true)
	release := to == StateQueued
	m.check = func(tx pgx.Tx) (string, error) {
		var state, hold, last, from string
		switch err := tx.QueryRow(ctx, q.sql.lockListed, orderID).Scan(&state, &hold, &last, &from); {
		case errors.Is(err, pgx.ErrNoRows):
			return "", fmt.Errorf("%w: %q", ErrIntentNotFound, orderID)
		case err != nil:
			return "", err
		case state != string(StateParked) || hold != HoldUnsentListed:
			return "", fmt.Errorf("%w: %q is not parked by the books check (it is %s)", ErrIntentState, orderID, state)
		case seen != "" && last != seen:
			return "", fmt.Errorf("%w: the payout listed for %q is no longer the one shown; nothing was done: look at it again",
				ErrChanged, orderID)
		}
		if release && IntentState(from) != StateQueued {
			to = StateNeedsApproval
		}
		return "", nil
	}
	return q.apply(ctx, orderID, m)
}
