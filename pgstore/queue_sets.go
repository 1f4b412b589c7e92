package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A batch of the workers' records (see recorder) written in one set
// statement, each row told its outcome.

// sendSets sends a batch of changes in one statement and tells each row
// its outcome. Rows are sent in orderId order, so two batches (or a batch
// and a claim's attempt commit) lock shared rows in the same order. A
// statement the server refused changed nothing; a batch of several is
// then sent again row by row, so that one row's error is that row's only.
func (q *Queue) sendSets(ctx context.Context, batch []*setRow) {
	slices.SortFunc(batch, func(a, b *setRow) int { return cmp.Compare(a.orderID, b.orderID) })
	changed, err := q.execSets(ctx, batch)
	if pgErr := (*pgconn.PgError)(nil); len(batch) > 1 && errors.As(err, &pgErr) {
		for _, r := range batch {
			q.sendSets(ctx, []*setRow{r})
		}
		return
	}
	for i, r := range batch {
		switch {
		case err != nil:
			r.done <- err
		case changed[i]:
			r.done <- nil
		default:
			r.done <- errLostLease
		}
	}
}

// execSets runs the set statement for batch and reports which rows it
// changed, by index.
func (q *Queue) execSets(ctx context.Context, batch []*setRow) ([]bool, error) {
	n := len(batch)
	text := func(f func(r *setRow) string) []string {
		out := make([]string, n)
		for i, r := range batch {
			out[i] = f(r)
		}
		return out
	}
	flag := func(f func(r *setRow) bool) []bool {
		out := make([]bool, n)
		for i, r := range batch {
			out[i] = f(r)
		}
		return out
	}
	tokens, tries, after := make([][]byte, n), make([]int32, n), make([]int64, n)
	for i, r := range batch {
		tokens[i], tries[i], after[i] = r.token, int32(min(r.tries, 1<<30)), r.afterMicros
	}
	args := namedArgs{
		"order_id": text(func(r *setRow) string { return r.orderID }), "token": tokens,
		"to_state": text(func(r *setRow) string { return r.to }), "verdict": text(func(r *setRow) string { return r.verdict }),
		"error": text(func(r *setRow) string { return r.errText }), "tries": tries, "after": after,
		"payout_id":     text(func(r *setRow) string { return r.payoutID }),
		"payout_status": text(func(r *setRow) string { return r.payoutStatus }),
		"release":       flag(func(r *setRow) bool { return r.release }), "hold": text(func(r *setRow) string { return r.hold }),
		"due": flag(func(r *setRow) bool { return r.due }), "from_state": text(func(r *setRow) string { return r.from }),
		"logged": flag(func(r *setRow) bool { return r.logged }), "request_id": text(func(r *setRow) string { return r.requestID }),
		"fail_class": text(func(r *setRow) string { return r.failClass }),
		"fail_text":  text(func(r *setRow) string { return r.failText }),
	}
	rows, err := q.cfg.Pool.Query(ctx, q.sql.set, args)
	if err != nil {
		return nil, err
	}
	changed := make([]bool, n)
	var i int64
	_, err = pgx.ForEachRow(rows, []any{&i}, func() error {
		if i >= 1 && i <= int64(n) {
			changed[i-1] = true // WITH ORDINALITY counts from 1
		}
		return nil
	})
	return changed, err
}
