package pgstore

import (
	"context"
	"sync"
	"time"
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
