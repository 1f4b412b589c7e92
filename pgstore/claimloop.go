package pgstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimLoop is the worker loop the payout queue and the payment tracker
// share. It waits for a free slot of concurrency, lets gather take more,
// claims up to that many items, and steps each on its own goroutine, which
// frees its slot when done. A claim that came back short means nothing
// more is due: the loop then sleeps PollInterval (poll) or until wake. It
// returns ctx's error once every step in hand has returned.
func claimLoop[T any](ctx context.Context, concurrency int, poll time.Duration, wake <-chan struct{},
	gather func(ctx context.Context, slots chan struct{}) int,
	claim func(ctx context.Context, n int) []T,
	step func(ctx context.Context, item T)) error {
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		n := gather(ctx, slots)
		batch := claim(ctx, n)
		for range n - len(batch) {
			<-slots
		}
		for _, item := range batch {
			wg.Go(func() {
				defer func() { <-slots }()
				step(ctx, item)
			})
		}
		if len(batch) == n {
			continue // there may be more due
		}
		timer := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// takeFree takes every slot free right now, after the one already held,
// and returns how many are held (the tracker's gather: its steps are one
// read each, so it claims for what is free without waiting for more).
func takeFree(_ context.Context, slots chan struct{}) int {
	n := 1
	for n < cap(slots) {
		select {
		case slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// claimGated is a worker loop's claim: up to n items through claim, one
// per window while the API refuses the key (see keyGate). A failed claim
// is logged as claiming what and hands out what it read.
func claimGated[T any](ctx context.Context, w *watch, what string, n int, claim func(context.Context, int) ([]T, error)) []T {
	if n = w.key.claims(n); n == 0 {
		return nil // the API refuses the key: wait for the next probe
	}
	batch, err := claim(ctx, n)
	if err != nil && ctx.Err() == nil {
		w.warn(ctx, "pgstore: claiming "+what, slog.String("error", err.Error()))
	}
	return batch
}

// claimRows runs a claim statement, which leases up to n due rows to this
// worker for lease under a new token (its parameters: n, the lease in
// microseconds, the token, then more), and scans each row with the token
// and the row's deadline: the worker stops using a row a tenth of the
// lease before the lease ends by the clock of this machine, started before
// the claim.
func claimRows[T any](ctx context.Context, pool *pgxpool.Pool, sql string, n int, lease time.Duration,
	scan func(rows pgx.Rows, token []byte, deadline time.Time) (T, error), more ...any) ([]T, error) {
	start := time.Now()
	token := newToken()
	rows, err := pool.Query(ctx, sql, append([]any{n, lease.Microseconds(), token}, more...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	deadline := start.Add(lease - lease/10)
	var out []T
	for rows.Next() {
		v, err := scan(rows, token, deadline)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
