package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// ResolutionKind is how a payment that needed action was resolved.
type ResolutionKind string

// Resolution kinds.
const (
	// ResolutionRefunded: the payment was refunded by the refund
	// Resolution.RefundID (one of its own).
	ResolutionRefunded ResolutionKind = "refunded"
	// ResolutionAccepted: the merchant accepts it as paid (an
	// underpayment let go, an overpayment kept by agreement).
	ResolutionAccepted ResolutionKind = "accepted"
	// ResolutionWrittenOff: the money is written off (a customer who
	// never claimed, an amount too small to send).
	ResolutionWrittenOff ResolutionKind = "written_off"
)

// Resolution is one resolution of a tracked payment (Refunds.Resolve). A
// payment's resolutions are an append-only history: the latest is the
// one in force.
type Resolution struct {
	// OrderID is the payment's orderId.
	OrderID string
	// Kind is how it was resolved.
	Kind ResolutionKind
	// RefundID names the refund, for ResolutionRefunded only.
	RefundID string
	// ActorID is who resolved it; Note how and why (show it escaped).
	ActorID, Note string
	// At is the database's time of the resolution.
	At time.Time
}

// Resolve appends a resolution of orderID's tracked payment by actor,
// with note (required: one line of at most 1024 bytes). For
// ResolutionRefunded, refundID must name a refund of this payment (any
// other kind takes none). It changes nothing else: the tracker's status,
// anomaly and history stay as they are. Errors: ErrNotTracked,
// ErrRefundNotFound (a refund of another payment, or none), a
// *cryptopay.ValidationError for a bad kind, actor or note.
func (r *Refunds) Resolve(ctx context.Context, orderID string, kind ResolutionKind, refundID, actor, note string) error {
	_, err := r.resolve(ctx, r.cfg.Queue.cfg.Pool, Resolution{OrderID: orderID, Kind: kind, RefundID: refundID, ActorID: actor, Note: note})
	return err
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// resolve checks v and appends it through db; it returns it as recorded
// (the actor canonical, the note scrubbed, At the database's).
func (r *Refunds) resolve(ctx context.Context, db rowQuerier, v Resolution) (*Resolution, error) {
	actor, err := CanonicalActor(v.ActorID)
	if err != nil {
		return nil, err
	}
	if why := ids.Text(v.Note, maxErrorText); why != "" || v.Note == "" {
		return nil, &cryptopay.ValidationError{Field: "note", Reason: cmpOr(why, "is required: how the payment was resolved")}
	}
	switch kind := v.Kind; {
	case kind == ResolutionRefunded && v.RefundID == "":
		return nil, &cryptopay.ValidationError{Field: "refundID", Reason: "is required to resolve a payment as refunded"}
	case kind != ResolutionRefunded && v.RefundID != "":
		return nil, &cryptopay.ValidationError{Field: "refundID", Reason: "is given only with " + string(ResolutionRefunded)}
	case kind != ResolutionRefunded && kind != ResolutionAccepted && kind != ResolutionWrittenOff:
		return nil, &cryptopay.ValidationError{Field: "kind", Reason: fmt.Sprintf("%q is not a resolution", kind)}
	}
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	v.ActorID, v.Note = actor, scrubText(v.Note)
	var tracked, refundOK bool
	var at *time.Time
	err = db.QueryRow(ctx, r.sql.resolve, v.OrderID, string(v.Kind), v.RefundID, v.ActorID, v.Note).Scan(&tracked, &refundOK, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows), err == nil && !tracked:
		return nil, fmt.Errorf("%w: %q", ErrNotTracked, v.OrderID)
	case err != nil:
		return nil, fmt.Errorf("pgstore: resolving %q: %w", v.OrderID, err)
	case !refundOK || at == nil:
		return nil, fmt.Errorf("%w: %q among the refunds of %q", ErrRefundNotFound, v.RefundID, v.OrderID)
	}
	v.At = *at
	return &v, nil
}

// Resolutions returns the resolutions of orderID's payment, oldest first
// (the last is in force; empty if none).
func (r *Refunds) Resolutions(ctx context.Context, orderID string) ([]Resolution, error) {
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := r.cfg.Queue.cfg.Pool.Query(ctx, r.sql.resolutions, orderID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the resolutions of %q: %w", orderID, err)
	}
	var out []Resolution
	var v Resolution
	var kind string
	_, err = pgx.ForEachRow(rows, []any{&v.OrderID, &kind, &v.RefundID, &v.ActorID, &v.Note, &v.At}, func() error {
		v.Kind = ResolutionKind(kind)
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the resolutions of %q: %w", orderID, err)
	}
	return out, nil
}

// Unresolved returns the orderIds, in order, of tracked payments that need
// action (TrackedPayment.NeedsAction) and have no resolution, after the
// orderId after, at most limit (0: 100) of them.
func (r *Refunds) Unresolved(ctx context.Context, after string, limit int) ([]string, error) {
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := r.cfg.Queue.cfg.Pool.Query(ctx, r.sql.unresolved, after, pageLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing unresolved payments: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing unresolved payments: %w", err)
	}
	return out, nil
}

// UnresolvedPayments is Unresolved with each payment as the tracker holds
// it, in one query (a page of the console's unresolved list).
func (r *Refunds) UnresolvedPayments(ctx context.Context, after string, limit int) ([]TrackedPayment, error) {
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	return listRows(ctx, r.cfg.Queue.cfg.Pool, "unresolved payments", r.sql.unresolvedRows, scanTracked, after, pageLimit(limit))
}
