package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Retry budgets. A Claim fails fast, so the handler answers 503 and the
// sender retries; a Complete or Release records an outcome that must not be
// lost, so it retries (within its context) while the server restarts. Each
// statement is safe to repeat: a repeat carries the same lease token.
const (
	claimAttempts  = 3
	settleAttempts = 40
	firstBackoff   = 10 * time.Millisecond
	maxBackoff     = 500 * time.Millisecond
)

// Claim implements webhook.DedupeStore: it takes key for this store's
// lease length unless another delivery holds an unexpired lease on it
// (DedupeInProgress) or it was completed within the done TTL (DedupeSeen).
// An error (the server is unreachable after a few quick attempts) makes the
// handler answer 503.
func (s *DedupeStore) Claim(ctx context.Context, key string) (webhook.DedupeClaim, error) {
	tok := newToken()
	var (
		inserted            bool
		done, expired, ours *bool
		takenOver           bool
	)
	err := retry(ctx, claimAttempts, func() error {
		return s.pool.QueryRow(ctx, s.sqlClaim, []byte(key), tok, s.lease.Microseconds()).Scan(&inserted, &done, &expired, &ours)
	})
	if err == nil && !inserted && isTrue(expired) && !isTrue(ours) {
		err = retry(ctx, claimAttempts, func() error {
			return s.pool.QueryRow(ctx, s.sqlTakeOver, []byte(key), tok, s.lease.Microseconds()).Scan(&takenOver, &done)
		})
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("pgstore: claim: %w", err)
	// ours: a repeated attempt whose first try took the key.
	case inserted || takenOver || isTrue(ours):
		s.hold(key, tok)
		return webhook.DedupeClaimed, nil
	case isTrue(done):
		return webhook.DedupeSeen, nil
	default:
		return webhook.DedupeInProgress, nil
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// Complete implements webhook.DedupeStore: it marks key done for the done
// TTL if this instance's lease on it still holds (or nobody took the key
// over since it expired). Otherwise it changes nothing and returns an error
// wrapping webhook.ErrDedupeLeaseLost: another delivery holds the key and
// the callback may have run twice. After a transactional callback
// (OnPayment, OnPayout) the outcome is already recorded and Complete only
// forgets the claim. After any other error (the server unreachable, ctx
// ended) the claim is kept, so Complete may be called again.
func (s *DedupeStore) Complete(ctx context.Context, key string) error {
	l := s.take(key)
	switch {
	case l == nil:
		return fmt.Errorf("pgstore: complete: %w", webhook.ErrDedupeLeaseLost)
	case l.settled:
		return nil
	}
	var n int64
	err := retry(ctx, settleAttempts, func() error {
		tag, err := s.pool.Exec(ctx, s.sqlComplete, []byte(key), l.token, s.doneTTL.Microseconds())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		s.restore(key, l) // the caller may try again (the handler does, after a hang-up)
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("pgstore: complete: %w", webhook.ErrDedupeLeaseLost)
	}
	s.maybeCleanup(ctx)
	return nil
}

// Release implements webhook.DedupeStore: it frees key if this
// instance's lease on it still holds, so the next delivery may claim it.
// Otherwise it changes nothing and returns an error wrapping
// webhook.ErrDedupeLeaseLost. After any other error the claim is kept,
// so Release may be called again.
func (s *DedupeStore) Release(ctx context.Context, key string) error {
	l := s.take(key)
	switch {
	case l == nil:
		return fmt.Errorf("pgstore: release: %w", webhook.ErrDedupeLeaseLost)
	case l.settled:
		return nil
	}
	var (
		n        int64
		attempts int
	)
	err := retry(ctx, settleAttempts, func() error {
		attempts++
		tag, err := s.pool.Exec(ctx, s.sqlRelease, []byte(key), l.token)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		s.restore(key, l)
		return fmt.Errorf("pgstore: release: %w", err)
	}
	// A repeated attempt finds nothing when the first one deleted the row
	// but its answer was lost.
	if n == 0 && attempts == 1 {
		return fmt.Errorf("pgstore: release: %w", webhook.ErrDedupeLeaseLost)
	}
	return nil
}

// Cleanup deletes every expired row (expired leases and done keys past
// their TTL) in batches, and returns how many it deleted. Claim already
// reuses an expired row in place, so Cleanup only reclaims space; run it
// from a periodic job if WithCleanupEvery is 0 or traffic is low.
func (s *DedupeStore) Cleanup(ctx context.Context) (int64, error) {
	const batch = 10_000
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.sqlCleanup, batch)
		if err != nil {
			return total, fmt.Errorf("pgstore: cleanup: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < batch {
			return total, nil
		}
	}
}

// maybeCleanup deletes a bounded batch of expired rows when this instance
// has not done so for cleanupEvery. Errors are ignored: Cleanup is only
// housekeeping.
func (s *DedupeStore) maybeCleanup(ctx context.Context) {
	if s.cleanupEvery <= 0 {
		return
	}
	last, now := s.lastCleanup.Load(), time.Now().UnixNano()
	if time.Duration(now-last) < s.cleanupEvery || !s.lastCleanup.CompareAndSwap(last, now) {
		return
	}
	_, _ = s.pool.Exec(ctx, s.sqlCleanup, cleanupBatch)
}

// hold records this instance's new lease on key, and forgets leases so old
// that no Complete can be waiting for them any more (a callback that never
// returned), so the map stays small.
func (s *DedupeStore) hold(key string, tok []byte) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[key] = &lease{token: tok, at: now}
	if len(s.held) < s.sweepAt {
		return
	}
	stale := now.Add(-2*s.lease - time.Minute)
	for k, l := range s.held {
		if l.at.Before(stale) {
			delete(s.held, k)
		}
	}
	s.sweepAt = max(1024, 2*len(s.held))
}

// take removes and returns this instance's lease on key, or nil.
func (s *DedupeStore) take(key string) *lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held[key]
	delete(s.held, key)
	return l
}

// restore gives back a lease taken by a Complete or Release that failed,
// unless a newer claim on key replaced it meanwhile.
func (s *DedupeStore) restore(key string, l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[key]; !ok {
		s.held[key] = l
	}
}

// token returns this instance's lease token on key, or nil.
func (s *DedupeStore) token(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.held[key]; l != nil {
		return l.token
	}
	return nil
}

// settle marks this instance's lease on key as recorded by a transaction.
func (s *DedupeStore) settle(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.held[key]; l != nil {
		l.settled = true
	}
}

// retry runs fn up to attempts times while it fails with a transient error
// and ctx is live, backing off exponentially.
func retry(ctx context.Context, attempts int, fn func() error) error {
	wait := firstBackoff
	for i := 1; ; i++ {
		err := fn()
		if err == nil || i >= attempts || !transient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// transient reports whether err may pass on a retry: the connection failed,
// or the server is shutting down, starting or overloaded. Context errors
// and other SQL errors are final.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"53300",          // too_many_connections
			"40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exceptions
	}
	return true
}
