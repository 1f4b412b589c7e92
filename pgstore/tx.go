package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
)

// ErrNoEventRow is returned by a transactional callback that
// could not lock its event's row: the row kept disappearing, which only a
// concurrent Cleanup or Release can cause. The handler answers 500 and the
// sender retries.
var ErrNoEventRow = errors.New("pgstore: event row vanished while locking it")

// OnPayment returns a webhook.Config.OnPayment callback that runs fn inside
// a transaction on store's pool which also records the event as done: the
// merchant's writes made through tx and the done mark commit together, or
// neither does. Use it with webhook.Config.Dedupe set to the same store:
//
//	cfg := webhook.Config{
//		Secret:    secret,
//		Client:    client,
//		Dedupe:    store,
//		OnPayment: pgstore.OnPayment(store, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
//			_, err := tx.Exec(ctx, "UPDATE orders SET paid = true WHERE id = $1", p.OrderID)
//			return err
//		}),
//	}
//
// For each call it begins a READ COMMITTED transaction, locks the event's
// row (SELECT ... FOR UPDATE, inserting it if missing), returns nil at once
// if the event is already done, runs fn, marks the event done and commits.
// An error or panic from fn, a cancelled ctx, or a lost connection rolls
// everything back and the handler releases the claim, so a redelivery runs
// fn again. Concurrent deliveries of one event queue on the row lock: one
// commits, the others then see it done.
//
// fn must do all its effects through tx (other databases, e-mails and HTTP
// calls are outside the guarantee) and must not commit or roll tx back. It
// runs under a deadline of the store's lease, and the server ends the
// session if the transaction sits idle for longer than the lease (SET
// LOCAL idle_in_transaction_session_timeout), so a frozen replica cannot
// hold the row lock for ever. Meanwhile other deliveries' Claims of the
// same event answer in progress at once (they do not wait for the lock).
// A nil store or fn gives a callback that always fails (the sender keeps
// retrying).
func OnPayment(store *DedupeStore, fn func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error) func(context.Context, *cryptopay.Payment) error {
	return func(ctx context.Context, p *cryptopay.Payment) error {
		switch {
		case store == nil || fn == nil:
			return fmt.Errorf("%w: OnPayment needs a store and a callback", ErrInvalidOption)
		case p == nil:
			return errors.New("pgstore: nil payment")
		}
		return store.inTx(ctx, "payment/"+strings.ToLower(p.ID)+"/"+string(p.Status), func(ctx context.Context, tx pgx.Tx) error {
			return fn(ctx, tx, p)
		})
	}
}

// OnPayout is OnPayment for payouts (webhook.Config.OnPayout).
func OnPayout(store *DedupeStore, fn func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payout) error) func(context.Context, *cryptopay.Payout) error {
	return func(ctx context.Context, p *cryptopay.Payout) error {
		switch {
		case store == nil || fn == nil:
			return fmt.Errorf("%w: OnPayout needs a store and a callback", ErrInvalidOption)
		case p == nil:
			return errors.New("pgstore: nil payout")
		}
		return store.inTx(ctx, "payout/"+p.ID+"/"+string(p.Status), func(ctx context.Context, tx pgx.Tx) error {
			return fn(ctx, tx, p)
		})
	}
}

// inTx runs fn in a transaction that also marks key done; see OnPayment.
// The key is the one the webhook.Handler claims for the same event, so the
// handler's Complete afterwards only forgets the claim.
func (s *DedupeStore) inTx(ctx context.Context, key string, fn func(context.Context, pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.lease)
	defer cancel()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: s.beginTx})
	if err != nil {
		return fmt.Errorf("pgstore: begin: %w", err)
	}
	// After a Commit this is a no-op; after an error or a panic in fn it
	// rolls back (a dead connection has rolled back already).
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.lease)
		defer rcancel()
		_ = tx.Rollback(rctx)
	}()
	done, err := s.lockEvent(ctx, tx, key)
	if err != nil {
		return err
	}
	if done {
		s.settle(key)
		return nil
	}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.sqlMarkDone, []byte(key), s.doneTTL.Microseconds()); err != nil {
		return fmt.Errorf("pgstore: marking the event done: %w", err)
	}
	// If the answer to COMMIT is lost, the error makes the sender retry;
	// the redelivery finds the event done if the commit happened.
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: commit: %w", err)
	}
	s.settle(key)
	return nil
}

// lockEvent locks key's row in tx, inserting a busy one if there is none,
// and reports whether the event is done (and not yet expired).
func (s *DedupeStore) lockEvent(ctx context.Context, tx pgx.Tx, key string) (bool, error) {
	tok := s.token(key)
	if tok == nil {
		tok = newToken()
	}
	for range 3 {
		var done bool
		err := tx.QueryRow(ctx, s.sqlLock, []byte(key)).Scan(&done)
		if err == nil {
			return done, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("pgstore: locking the event: %w", err)
		}
		// No row: this store did not claim the event (or a cleanup deleted
		// an expired claim). Insert one; a concurrent insert makes this a
		// no-op, and the next SELECT locks that row once it is committed.
		if _, err := tx.Exec(ctx, s.sqlInsertBusy, []byte(key), tok, s.lease.Microseconds()); err != nil {
			return false, fmt.Errorf("pgstore: inserting the event: %w", err)
		}
	}
	return false, ErrNoEventRow
}
