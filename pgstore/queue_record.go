package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// setRow is one worker's change of a held intent, as the set statement
// takes it (see queueSQL.set).
type setRow struct {
	orderID, to, verdict, errText string
	token                         []byte
	tries                         int
	afterMicros                   int64
	payoutID, payoutStatus        string
	release, due, logged          bool
	hold, from, requestID         string
	failClass, failText           string
	done                          chan error // buffered: the sender never waits for the worker
}

// recorder sends the workers' changes (Queue.set) in batches, a group
// commit: a change waits only while another batch is on the wire, then
// goes with every change that waited, in one statement. At low load each
// change is a statement of its own; under load one statement records
// many intents, each row only by its own lease holder and with its own
// history row, committed together. The worker that sends a batch is one
// of those waiting; none waits for a timer, and none sends more than one
// batch.
type recorder struct {
	mu      sync.Mutex
	pending []*setRow
	turn    chan struct{} // held (capacity 1) by the worker sending a batch
}

func newRecorder() recorder { return recorder{turn: make(chan struct{}, 1)} }

// record adds r to the next batch and returns its outcome: nil once
// committed, errLostLease if the row was not this worker's to change, or
// the statement's error. send sends a batch and tells each row its
// outcome.
func (rc *recorder) record(ctx context.Context, r *setRow, send func(context.Context, []*setRow)) error {
	rc.mu.Lock()
	rc.pending = append(rc.pending, r)
	rc.mu.Unlock()
	for {
		select {
		case err := <-r.done:
			return err
		default:
		}
		select {
		case err := <-r.done:
			return err
		case rc.turn <- struct{}{}:
			// Any batch sent before has told its rows: r is either told
			// or in this one.
			rc.mu.Lock()
			batch := rc.pending
			rc.pending = nil
			rc.mu.Unlock()
			if len(batch) > 0 {
				send(ctx, batch)
			}
			<-rc.turn
		}
	}
}

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
