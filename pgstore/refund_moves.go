package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// The moves that resolve a payment needing action (Refunds): refund it,
// accept it as paid, or write it off. Each records a Resolution.

// needsResolution is when they apply: the payment needs action (its
// status is paid_over, paid_partial or locked, or it has an anomaly: a
// payment paid late or after it expired is flagged so). Refunds' rules
// refuse a refund the payment cannot take (ErrRefundRule,
// ErrNothingToRefund).
func needsResolution(p *TrackedPayment) bool { return p.NeedsAction }

// refundPayments is the docs' "which payments → what" of the three.
const refundPayments = "needing action (paid_over, paid_partial, late, expired then paid) → "

// refundPaymentMove refunds a payment: Refunds.Create, and its
// resolution ResolutionRefunded naming the refund, in one transaction.
var refundPaymentMove = Move{Name: "refund", Verb: "Refund", On: ObjectPayment, Role: MoveOperator, NeedsRefunds: true,
	Payments: refundPayments + "refunded", applies: needsResolution, Done: "refunded",
	Fields: []MoveField{
		{Name: "rule", Label: "Rule", Usage: "how the amount is found: excess (of a paid_over), all_paid (a paid_partial, expired or late payment) or amount (required)",
			Required: true, Choices: []string{string(RefundExcess), string(RefundAllPaid), string(RefundAmount)}},
		{Name: "amount", Label: "Amount (rule amount only)", Usage: "the `amount`, with --rule amount, in the payment's currency"},
		{Name: "idempotency-key", Label: "Idempotency key (a ticket number)", Usage: "idempotency `key` (a ticket number): the same key again makes nothing new (required)", Required: true},
		{Name: "customer-id", Label: "Customer id", Usage: "the customer's `id`, the payout's customerId (required)", Required: true},
		{Name: "wallet", Label: "Wallet address (empty: the customer claims it)", Usage: "the customer's wallet `address`, if known (else the customer claims it through the claim link)"},
		{Name: "customer-ip", Label: "Customer IP (with a wallet)", Usage: "the payout's customerIp, required with --wallet"},
		{Name: "claim-for", Label: "Claim open for (e.g. 72h; default 168h)", Usage: "how long the claim stays open, a Go `duration` (default 168h)"},
		noteField},
	Confirm: "The refund is a payout in the payment's currency and network (shown above), of the amount its rule gives: excess " +
		"is paid minus the amount due, all_paid everything paid, amount the amount typed; less what its refunds hold already, and " +
		"never above what it paid. Its payout is held for approval by another person (four eyes). Without a wallet the customer " +
		"gives it through the claim link. The payment is resolved as refunded, naming the refund.",
	do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) { return s.Refunds.refundMove(ctx, in) }}

// resolveMove records kind for a payment needing action, with the
// move's required note.
func resolveMove(name, verb, done string, kind ResolutionKind, confirm string) Move {
	return Move{Name: name, Verb: verb, On: ObjectPayment, Role: MoveApprover, NeedsRefunds: true,
		Payments: refundPayments + string(kind), applies: needsResolution, Done: done, Confirm: confirm,
		Fields: []MoveField{{Name: "note", Label: "Note", Usage: "what is recorded with the resolution: who decided, and why (required)", Required: true, Text: true}},
		do: func(ctx context.Context, s Stores, in MoveInput) (Moved, error) {
			v, err := s.Refunds.resolve(ctx, s.Refunds.cfg.Queue.cfg.Pool, Resolution{OrderID: in.OrderID, Kind: kind, ActorID: in.By.ID, Note: in.Values["note"]})
			return Moved{Resolution: v}, err
		}}
}

// refundMove makes the refund in: the refund and, in its transaction,
// its resolution (once: a retry with the same key finds both).
func (r *Refunds) refundMove(ctx context.Context, in MoveInput) (Moved, error) {
	p, err := refundParamsOf(in)
	if err != nil {
		return Moved{}, err
	}
	var res *Resolution
	f, created, err := r.createThen(ctx, p, func(tx pgx.Tx, f *Refund, created bool) error {
		var err error
		if !created {
			if res, err = scanResolution(tx.QueryRow(ctx, r.sql.refundResolved, f.OrderID, f.ID)); !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		note := strings.TrimSpace(cmpOr(p.Note, fmt.Sprintf("refund of %s %s", f.Amount, f.Currency)))
		res, err = r.resolve(ctx, tx, Resolution{OrderID: f.OrderID, Kind: ResolutionRefunded, RefundID: f.ID, ActorID: p.Actor, Note: note})
		return err
	})
	if err != nil {
		return Moved{}, err
	}
	return Moved{Refund: f, RefundCreated: created, Resolution: res}, nil
}

// refundParamsOf reads a refund move's fields.
func refundParamsOf(in MoveInput) (RefundParams, error) {
	v := in.Values
	p := RefundParams{OrderID: in.OrderID, Key: v["idempotency-key"], Rule: RefundRule(v["rule"]), WalletAddress: v["wallet"],
		CustomerID: v["customer-id"], CustomerIP: v["customer-ip"], Actor: in.By.ID, Note: v["note"]}
	if s := strings.TrimSpace(v["amount"]); s != "" {
		d, err := decimal.NewFromString(s)
		if err != nil {
			return p, &cryptopay.ValidationError{Field: "amount", Reason: fmt.Sprintf("%q is not a decimal amount", s)}
		}
		p.Amount = d
	}
	if s := strings.TrimSpace(v["claim-for"]); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return p, &cryptopay.ValidationError{Field: "claim-for", Reason: fmt.Sprintf("%q is not a positive duration (72h)", s)}
		}
		p.ClaimFor = d
	}
	return p, nil
}

// scanResolution reads one row of the resolutions' columns.
func scanResolution(row pgx.Row) (*Resolution, error) {
	var v Resolution
	var kind string
	if err := row.Scan(&v.OrderID, &kind, &v.RefundID, &v.ActorID, &v.Note, &v.At); err != nil {
		return nil, err
	}
	v.Kind = ResolutionKind(kind)
	return &v, nil
}
