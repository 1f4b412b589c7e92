package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// BulkBatch is how many intents ApproveMany and RetryMany move in one
// transaction (one round trip each): a long list commits in several
// transactions, so a failure part way keeps the batches before it.
const BulkBatch = 100

// BulkResult is what ApproveMany or RetryMany did.
type BulkResult struct {
	// Done counts the moves recorded: approvals counted, or intents
	// queued for a new attempt.
	Done int
	// Queued lists the intents now StateQueued (for ApproveMany, those
	// whose approval was the last one needed).
	Queued []string
	// Skipped lists the intents that did not move: no longer in the
	// required state, unknown, or (ApproveMany) an approval that does not
	// count (the actor enqueued or approved it already).
	Skipped []string
}

// ApproveMany is Approve of every intent in orderIDs by actor, with the
// same note, in transactions of BulkBatch intents (two round trips each:
// the four-eyes read of the locked rows, then the approvals):
// each approval is in the intent's history, counted under the same
// four-eyes rule, and an intent that cannot be approved by this actor is
// skipped, not an error. An error (the database) stops it: the result
// says what the committed batches did.
func (q *Queue) ApproveMany(ctx context.Context, orderIDs []string, actor, note string) (BulkResult, error) {
	return q.approveMany(ctx, orderIDs, Operator{ID: actor}, note)
}

// approveMany is ApproveMany by an operator.
func (q *Queue) approveMany(ctx context.Context, orderIDs []string, by Operator, note string) (BulkResult, error) {
	who, err := by.canonical()
	if err != nil {
		return BulkResult{}, err
	}
	role := ""
	return q.bulk(ctx, orderIDs, StateNeedsApproval, func(id string) (string, []any) {
		return q.sql.approve, []any{id, who.ID, scrubNote(note), q.cfg.Approvals, who.principal(role)}
	}, func(tx pgx.Tx, part []string) (map[string]bool, error) {
		locked, err := q.lockApprovals(ctx, tx, part)
		counts := make(map[string]bool, len(locked))
		for _, r := range locked {
			role = r.role
			counts[r.orderID] = r.whyNot(who) == nil
		}
		return counts, err
	})
}

// RetryMany is Retry of every parked intent in orderIDs by actor, with the
// same note, in transactions of BulkBatch intents. The same warning as
// Retry's, for each: only intents checked with the processor, or a payout
// that exists is paid twice. An intent no longer parked is skipped.
func (q *Queue) RetryMany(ctx context.Context, orderIDs []string, actor, note string) (BulkResult, error) {
	return q.retryMany(ctx, orderIDs, Operator{ID: actor}, note)
}

// retryMany is RetryMany by an operator.
func (q *Queue) retryMany(ctx context.Context, orderIDs []string, by Operator, note string) (BulkResult, error) {
	who, err := by.canonical()
	if err != nil {
		return BulkResult{}, err
	}
	return q.bulk(ctx, orderIDs, StateParked, func(id string) (string, []any) {
		return q.sql.operate, []any{id, string(StateParked), string(StateQueued), scrubNote(note), false, who.ID, false}
	}, nil)
}

// bulk runs one row-returning statement per intent, BulkBatch to a
// transaction, and reports the transitions after each commit. pick, if
// set, runs first in each transaction and says which of the batch's
// intents may move (the others are skipped).
func (q *Queue) bulk(ctx context.Context, orderIDs []string, from IntentState, stmt func(id string) (string, []any),
	pick func(tx pgx.Tx, part []string) (map[string]bool, error)) (BulkResult, error) {
	var res BulkResult
	if err := q.CheckSchema(ctx); err != nil {
		return res, err
	}
	for start := 0; start < len(orderIDs); start += BulkBatch {
		part := orderIDs[start:min(start+BulkBatch, len(orderIDs))]
		var moved []*Intent
		var fresh []bool
		err := pgx.BeginFunc(ctx, q.cfg.Pool, func(tx pgx.Tx) error {
			may := func(string) bool { return true }
			if pick != nil {
				ok, err := pick(tx, part)
				if err != nil {
					return err
				}
				may = func(id string) bool { return ok[id] }
			}
			var err error
			moved, fresh, err = sendMoves(ctx, tx, part, may, stmt)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("pgstore: moving intents %d to %d of %d: %w", start+1, start+len(part), len(orderIDs), err)
		}
		q.tally(&res, part, moved, fresh, from)
	}
	if len(res.Queued) > 0 {
		q.poke()
	}
	return res, nil
}

// tally adds one committed batch to res and reports its transitions.
func (q *Queue) tally(res *BulkResult, part []string, moved []*Intent, fresh []bool, from IntentState) {
	for i, in := range moved {
		if in == nil {
			res.Skipped = append(res.Skipped, part[i])
			continue
		}
		res.Done++
		if fresh[i] {
			q.observe(Transition{OrderID: in.Params.OrderID, To: from})
		}
		if in.State == StateQueued {
			res.Queued = append(res.Queued, in.Params.OrderID)
			q.observe(Transition{OrderID: in.Params.OrderID, From: from, To: StateQueued, Attempts: in.Attempts, PayoutID: in.PayoutID})
		}
	}
}

// sendMoves sends stmt for every intent of part that may move, in one
// batch (none when none may), and returns what each returned, in part's
// order: nil for an intent that did not move.
func sendMoves(ctx context.Context, tx pgx.Tx, part []string, may func(id string) bool, stmt func(id string) (string, []any)) ([]*Intent, []bool, error) {
	moved, fresh := make([]*Intent, len(part)), make([]bool, len(part))
	b := &pgx.Batch{}
	for _, id := range part {
		if may(id) {
			sql, args := stmt(id)
			b.Queue(sql, args...)
		}
	}
	if b.Len() == 0 {
		return moved, fresh, nil
	}
	br := tx.SendBatch(ctx, b)
	for i, id := range part {
		if !may(id) {
			continue
		}
		in, err := scanIntent(br.QueryRow(), &fresh[i])
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			_ = br.Close()
			return nil, nil, err
		}
		moved[i] = in
	}
	return moved, fresh, br.Close()
}
