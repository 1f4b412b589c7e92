package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// Tracking a payment: Track and TrackOrder, in the merchant's own
// transaction, and PaymentChanged, a webhook's wake-up.

// Track starts tracking the payment p (CreatePayment's answer) in tx, the
// merchant's own transaction: record the order and its payment in one
// commit (if tx rolls back, nothing is tracked). p's status (waiting) and
// paid amount are the payment's first known state (see firstState). The payment is keyed by
// its orderId. Tracking an orderId again with the same payment is a no-op
// (created false); with another payment id, amount, currency or network it
// is a *TrackConflictError and the tracked payment is unchanged. An
// orderId tracked by TrackOrder alone is completed by Track.
func (t *Tracker) Track(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) (created bool, err error) {
	switch {
	case tx == nil:
		return false, fmt.Errorf("%w: Track needs the caller's transaction", ErrInvalidOption)
	case p == nil:
		return false, &cryptopay.ValidationError{Field: "Payment", Reason: "is nil"}
	}
	if r := ids.Payment(p.ID); r != "" {
		return false, &cryptopay.ValidationError{Field: "ID", Reason: r}
	}
	if r := ids.Text(p.OrderID, 256); r != "" || p.OrderID == "" {
		return false, &cryptopay.ValidationError{Field: "OrderID", Reason: cmpOr(r, "is empty")}
	}
	if !p.PayAmount.IsPositive() {
		return false, &cryptopay.ValidationError{Field: "PayAmount", Reason: "must be greater than 0"}
	}
	if err := t.schema.check(ctx, tx); err != nil {
		return false, err
	}
	var expired *time.Time
	if !p.ExpiredAt.IsZero() {
		expired = &p.ExpiredAt
	}
	next := t.schedule(time.Now(), p.ExpiredAt, "", 0)
	if next.at == nil { // tracked after its horizon: read it once now
		now := time.Now()
		next.at = &now
	}
	status, paid := firstState(p)
	var inserted bool
	err = tx.QueryRow(ctx, t.sql.insert, namedArgs{"order_id": p.OrderID, "payment_id": p.ID,
		"pay_amount": p.PayAmount.String(), "currency": p.Currency, "network": p.Network, "expired_at": expired,
		"state": string(TrackOpen), "next_at": next.at, "status": status, "paid_amount": paid}).Scan(&inserted)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("pgstore: track %q: %w", p.OrderID, err)
	}
	have, err := scanTracked(tx.QueryRow(ctx, t.sql.getLock, p.OrderID))
	if err != nil {
		return false, fmt.Errorf("pgstore: track %q: reading the tracked payment: %w", p.OrderID, err)
	}
	if f := trackConflict(have, p); f != "" {
		return false, &TrackConflictError{OrderID: p.OrderID, Field: f}
	}
	if have.PaymentID != "" {
		return false, nil
	}
	// Tracked by orderId alone: this completes it.
	if _, err := tx.Exec(ctx, t.sql.complete, p.OrderID, p.ID, p.PayAmount.String(), p.Currency, p.Network, expired, next.at,
		status, paid); err != nil {
		return false, fmt.Errorf("pgstore: track %q: %w", p.OrderID, err)
	}
	return false, nil
}

// firstState is the status and paid amount Track records as the payment's
// first known state: a create answer's (waiting, nothing paid), so the
// first change reads waiting -> paid. A payment that already shows money
// (Track given a later read) is recorded as not yet seen ("", none), so
// its first read books all of its paid amount.
func firstState(p *cryptopay.Payment) (string, *string) {
	if p.Status != cryptopay.PaymentWaiting || !paidOrZero(p.PaidAmount).IsZero() {
		return "", nil
	}
	return string(p.Status), nullText(p.PaidAmount)
}

// trackConflict names the first datum of p that differs from the tracked
// payment have ("" if none; data have lacks do not differ).
func trackConflict(have *TrackedPayment, p *cryptopay.Payment) string {
	switch {
	case have.PaymentID != "" && !strings.EqualFold(have.PaymentID, p.ID):
		return "PaymentID"
	case have.PayAmount.Valid && !have.PayAmount.Decimal.Equal(p.PayAmount):
		return "PayAmount"
	case have.Currency != "" && have.Currency != p.Currency:
		return "Currency"
	case have.Network != "" && have.Network != p.Network:
		return "Network"
	}
	return ""
}

// TrackOrder starts tracking, in tx, the payment of an order whose create
// request had an unknown outcome (ErrOutcomeUnknown): the API has no
// payment search, so it waits in TrackUnmatched, unread, until its first
// authenticated webhook reaches PaymentChanged with the payment's id (or
// Track gives it). Tracking an orderId that is tracked already is a no-op
// (created false).
func (t *Tracker) TrackOrder(ctx context.Context, tx pgx.Tx, orderID string) (created bool, err error) {
	if tx == nil {
		return false, fmt.Errorf("%w: TrackOrder needs the caller's transaction", ErrInvalidOption)
	}
	if r := ids.Text(orderID, 256); r != "" || orderID == "" {
		return false, &cryptopay.ValidationError{Field: "OrderID", Reason: cmpOr(r, "is empty")}
	}
	if err := t.schema.check(ctx, tx); err != nil {
		return false, err
	}
	var inserted bool
	err = tx.QueryRow(ctx, t.sql.insertOrder, orderID, string(TrackUnmatched)).Scan(&inserted)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	}
	return false, fmt.Errorf("pgstore: track order %q: %w", orderID, err)
}

// Untrack stops tracking, in tx, an orderId that TrackOrder tracked before
// its payment was created, when the create was refused (an error that is
// not ErrOutcomeUnknown: nothing exists at the API). It removes the order
// only while it is unmatched and nothing is known of it (no payment id, no
// change, no anomaly): it reports false, changing nothing, for an orderId
// not tracked or tracked with a payment (a webhook gave one: keep
// following it).
func (t *Tracker) Untrack(ctx context.Context, tx pgx.Tx, orderID string) (removed bool, err error) {
	if tx == nil {
		return false, fmt.Errorf("%w: Untrack needs the caller's transaction", ErrInvalidOption)
	}
	if err := t.schema.check(ctx, tx); err != nil {
		return false, err
	}
	err = tx.QueryRow(ctx, t.sql.untrack, orderID).Scan(&removed)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	}
	return false, fmt.Errorf("pgstore: untrack order %q: %w", orderID, err)
}

// PaymentChanged wakes the tracked payment of p's orderId (call it from the
// webhook handler's OnPayment callback, whose payment the handler re-read
// through the API): it is read again at once instead of at its next poll.
// It only wakes the payment; the status is read from the API, never taken
// from p. A payment tracked by orderId alone (TrackUnmatched) takes p.ID as
// its id here; if the tracker's read of that id shows another orderId, the
// id is dropped and the payment flagged (Anomaly) and unmatched again,
// waiting for its own webhook: nothing is credited from p. A payment with
// another id than the one tracked for the
// order is not followed: the tracked payment is flagged (Anomaly,
// NeedsAction) for a person. An orderId that is not tracked is ignored.
func (t *Tracker) PaymentChanged(ctx context.Context, p *cryptopay.Payment) error {
	if p == nil || p.OrderID == "" || ids.Payment(p.ID) != "" {
		return nil
	}
	if err := t.CheckSchema(ctx); err != nil {
		return err
	}
	tag, err := t.cfg.Pool.Exec(ctx, t.sql.wake, p.OrderID, p.ID, string(TrackOpen), string(TrackUnmatched))
	if err != nil {
		return fmt.Errorf("pgstore: waking tracked payment %q: %w", p.OrderID, err)
	}
	if tag.RowsAffected() == 0 {
		anomaly := scrubText("a webhook named payment " + p.ID + " for this order; the tracked payment has another id")
		if _, err := t.cfg.Pool.Exec(ctx, t.sql.otherPayment, p.OrderID, p.ID, anomaly); err != nil {
			return fmt.Errorf("pgstore: flagging tracked payment %q: %w", p.OrderID, err)
		}
		return nil
	}
	t.poke()
	return nil
}
