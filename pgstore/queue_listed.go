package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// parked is what parkListed found and did: the state the intent was in;
// held, whether it is parked with HoldUnsentListed now (by this call, or
// by an earlier one: was is then StateParked); reworded, an earlier park
// whose words (what is listed) this call brought up to date; released, an
// operator released it from the books check's last park, whose words
// began with same, and it stays as they left it. Neither held nor
// released: a worker began sending it, or it changed, meanwhile.
type parked struct {
	was                      IntentState
	held, reworded, released bool
}

// parkListed parks the intent orderID with HoldUnsentListed and why (the
// listed payouts, in words, beginning with same: what they were created
// with, up to the standing one's status) if it is still unsent: queued or
// needs_approval.
func (q *Queue) parkListed(ctx context.Context, orderID, why, same string) (parked, error) {
	var p parked
	if err := q.CheckSchema(ctx); err != nil {
		return p, err
	}
	var in *Intent
	var fresh bool
	why, same = scrubNote(why), scrubNote(same) // as the history keeps them
	// READ COMMITTED whatever the database's default, as the proof above
	// assumes (under a stricter one the race ends in a serialization
	// error instead: nothing is sent either).
	err := pgx.BeginTxFunc(ctx, q.cfg.Pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var state, hold, last, from string
		if err := tx.QueryRow(ctx, q.sql.lockListed, orderID).Scan(&state, &hold, &last, &from); err != nil {
			return err
		}
		if p.was = IntentState(state); p.was != StateQueued && p.was != StateNeedsApproval {
			p.held = p.was == StateParked && hold == HoldUnsentListed
			if !p.held || strings.HasPrefix(last, same) {
				return nil
			}
			p.reworded = true
			_, err := tx.Exec(ctx, q.sql.reword, orderID, why)
			return err
		}
		if err := tx.QueryRow(ctx, q.sql.releasedFor, orderID, same).Scan(&p.released); err != nil || p.released {
			return err
		}
		var err error
		in, err = scanIntent(tx.QueryRow(ctx, q.sql.park, orderID, state, why), &fresh)
		return err
	})
	if err != nil {
		return parked{was: p.was}, fmt.Errorf("pgstore: parking %q: %w", orderID, err)
	}
	if in == nil {
		return p, nil
	}
	if fresh { // its first change: the enqueue is reported here (see enqueued)
		q.observe(Transition{OrderID: orderID, To: p.was})
	}
	q.observe(Transition{OrderID: orderID, From: p.was, To: StateParked, Attempts: in.Attempts, PayoutID: in.PayoutID})
	p.held = true
	return p, nil
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
