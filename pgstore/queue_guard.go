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

// Guardrails stop payouts before they are sent. All are opt-in (a nil map
// or func is off). Currency keys are the params' Currency ("usdt"),
// compared case-insensitively. They guard against a bug or a compromised
// caller draining the balance; they are checked by the worker before every
// create request, so an intent enqueued before a limit was lowered is held
// to the new limit.
type Guardrails struct {
	// MaxAmount caps one payout per currency. An intent above its cap is
	// blocked (StateBlocked, final) before anything is sent.
	MaxAmount map[string]decimal.Decimal
	// Velocity caps, per currency, the total of the payouts attempted
	// within VelocityWindow, this one included. An intent that would pass
	// the cap stays queued and is tried again after BackoffMin, with the
	// reason in LastError. The check and the reservation run under a
	// per-currency advisory lock, so replicas cannot pass the cap together.
	// An attempt counts until the window has passed, even if its payout
	// later fails (refusals by the API do not count).
	Velocity map[string]decimal.Decimal
	// VelocityWindow is the rolling window of Velocity (default 24 h).
	VelocityWindow time.Duration
	// AllowedAddresses, if not nil, lists the only wallet addresses paid
	// to (compared exactly); any other is blocked.
	AllowedAddresses []string
	// CheckAddress, if set, is asked before each create request; an error
	// blocks the intent, with the error's text recorded (do not put
	// secrets in it). It must be deterministic for a given intent: a check
	// that fails only sometimes blocks at random.
	CheckAddress func(ctx context.Context, p cryptopay.CreatePayoutParams) error
	// ApprovalAbove holds an intent whose amount is above the threshold of
	// its currency in StateNeedsApproval until Approve or Reject. It is
	// checked at Enqueue (so the merchant sees the hold at once) and again
	// by the worker before it commits an attempt: an intent enqueued by a
	// process without the threshold (the CLI's payout batch, say) is held
	// by the worker that would send it, unless an operator approved it.
	ApprovalAbove map[string]decimal.Decimal

	allowed map[string]struct{}
}

// DefaultVelocityWindow is Guardrails.VelocityWindow's default.
const DefaultVelocityWindow = 24 * time.Hour

// ErrGuardrail matches every *GuardrailError.
var ErrGuardrail = errors.New("pgstore: stopped by a guardrail")

// GuardrailError says which guardrail stops a payout intent. It matches
// ErrGuardrail.
type GuardrailError struct {
	// Rule is "max_amount", "velocity", "address" or "approval".
	Rule string
	// Reason says why, with the amounts and the cap.
	Reason string
}

// Error returns the rule and the reason.
func (e *GuardrailError) Error() string { return "pgstore: guardrail " + e.Rule + ": " + e.Reason }

// Is matches ErrGuardrail.
func (e *GuardrailError) Is(target error) bool { return target == ErrGuardrail }

// check normalises the maps and refuses negative caps.
func (g *Guardrails) check() error {
	for name, m := range map[string]*map[string]decimal.Decimal{"MaxAmount": &g.MaxAmount, "Velocity": &g.Velocity, "ApprovalAbove": &g.ApprovalAbove} {
		if *m == nil {
			continue
		}
		low := make(map[string]decimal.Decimal, len(*m))
		for k, v := range *m {
			if v.IsNegative() {
				return fmt.Errorf("%w: Guardrails.%s[%q] is negative", ErrInvalidOption, name, k)
			}
			low[strings.ToLower(k)] = v
		}
		*m = low
	}
	if g.VelocityWindow < 0 {
		return fmt.Errorf("%w: Guardrails.VelocityWindow is negative", ErrInvalidOption)
	}
	setDefault(&g.VelocityWindow, DefaultVelocityWindow)
	if g.AllowedAddresses != nil {
		g.allowed = make(map[string]struct{}, len(g.AllowedAddresses))
		for _, a := range g.AllowedAddresses {
			g.allowed[a] = struct{}{}
		}
	}
	return nil
}

func capOf(m map[string]decimal.Decimal, currency string) (decimal.Decimal, bool) {
	v, ok := m[strings.ToLower(currency)]
	return v, ok
}

// needsApproval reports whether p is above its currency's approval
// threshold.
func (g *Guardrails) needsApproval(p cryptopay.CreatePayoutParams) bool {
	limit, ok := capOf(g.ApprovalAbove, p.Currency)
	return ok && p.Amount.GreaterThan(limit)
}

// approvalHold is the approval guardrail's answer for in before it is
// sent: nil if in is not above its currency's threshold or was approved.
func (g *Guardrails) approvalHold(in *Intent) *GuardrailError {
	if !in.ApprovedAt.IsZero() || !g.needsApproval(in.Params) {
		return nil
	}
	return g.approvalError(in.Params)
}

// approvalError says that p is above its currency's approval threshold.
func (g *Guardrails) approvalError(p cryptopay.CreatePayoutParams) *GuardrailError {
	limit, _ := capOf(g.ApprovalAbove, p.Currency)
	return &GuardrailError{Rule: "approval", Reason: fmt.Sprintf("%s %s is above the approval threshold of %s", p.Amount, p.Currency, limit)}
}

// stop returns the guardrail (cap or address) that blocks p for good, or
// nil.
func (g *Guardrails) stop(ctx context.Context, p cryptopay.CreatePayoutParams) *GuardrailError {
	if limit, ok := capOf(g.MaxAmount, p.Currency); ok && p.Amount.GreaterThan(limit) {
		return &GuardrailError{Rule: "max_amount", Reason: fmt.Sprintf("%s %s is above the cap of %s per payout", p.Amount, p.Currency, limit)}
	}
	if g.allowed != nil {
		if _, ok := g.allowed[p.WalletAddress]; !ok {
			return &GuardrailError{Rule: "address", Reason: "the wallet address is not on the allow-list"}
		}
	}
	if g.CheckAddress != nil {
		if err := g.CheckAddress(ctx, p); err != nil {
			return &GuardrailError{Rule: "address", Reason: errText(err)}
		}
	}
	return nil
}

// velocityCheck reads, in tx and under the currency's advisory lock (held
// until tx ends), what the currency has reserved within the window apart
// from orderID, and says whether amount still fits under the cap.
func (q *Queue) velocityCheck(ctx context.Context, tx pgx.Tx, p cryptopay.CreatePayoutParams, limit decimal.Decimal) (*GuardrailError, error) {
	g := &q.cfg.Guardrails
	if _, err := tx.Exec(ctx, q.sql.velocityLock, "cryptopay_velocity:"+q.Table()+":"+strings.ToLower(p.Currency)); err != nil {
		return nil, err
	}
	var s string
	if err := tx.QueryRow(ctx, q.sql.velocitySum, p.Currency, g.VelocityWindow.Microseconds(), p.OrderID).Scan(&s); err != nil {
		return nil, err
	}
	used, err := decimal.NewFromString(s)
	if err != nil {
		return nil, err
	}
	return g.velocityStop(p, used, limit), nil
}

// velocityStop is the velocity guardrail's answer for p when used is
// already reserved within the window: nil if p still fits under limit.
func (g *Guardrails) velocityStop(p cryptopay.CreatePayoutParams, used, limit decimal.Decimal) *GuardrailError {
	if total := used.Add(p.Amount); total.GreaterThan(limit) {
		return &GuardrailError{Rule: "velocity", Reason: fmt.Sprintf("%s %s would bring the last %v to %s, above the cap of %s",
			p.Amount, p.Currency, g.VelocityWindow, total, limit)}
	}
	return nil
}

// GuardStop is one intent that CheckGuardrails says a guardrail would
// stop or hold.
type GuardStop struct {
	// Index is the intent's index in the slice checked.
	Index int
	// OrderID names the intent.
	OrderID string
	// Err says which guardrail and why.
	Err *GuardrailError
}

// CheckGuardrails is a dry run: it reports, without changing anything,
// which of ps the guardrails would stop (max_amount, address), hold
// (velocity: the currency's reservations within the window now, plus the
// earlier intents of ps) or send to approval. It cannot see what other
// replicas reserve meanwhile; the worker's check before sending is the one
// that holds.
func (q *Queue) CheckGuardrails(ctx context.Context, ps []cryptopay.CreatePayoutParams) ([]GuardStop, error) {
	g := &q.cfg.Guardrails
	var stops []GuardStop
	used := make(map[string]decimal.Decimal)
	for i, p := range ps {
		if e := g.stop(ctx, p); e != nil {
			stops = append(stops, GuardStop{Index: i, OrderID: p.OrderID, Err: e})
			continue
		}
		if g.needsApproval(p) {
			stops = append(stops, GuardStop{Index: i, OrderID: p.OrderID, Err: g.approvalError(p)})
		}
		limit, ok := capOf(g.Velocity, p.Currency)
		if !ok {
			continue
		}
		cur := strings.ToLower(p.Currency)
		u, seen := used[cur]
		if !seen {
			var s string
			err := q.cfg.Pool.QueryRow(ctx, q.sql.velocitySum, p.Currency, g.VelocityWindow.Microseconds(), "").Scan(&s)
			if err != nil {
				return nil, fmt.Errorf("pgstore: reading the velocity of %s: %w", p.Currency, err)
			}
			if u, err = decimal.NewFromString(s); err != nil {
				return nil, err
			}
		}
		if e := g.velocityStop(p, u, limit); e != nil {
			stops = append(stops, GuardStop{Index: i, OrderID: p.OrderID, Err: e})
			used[cur] = u
			continue
		}
		used[cur] = u.Add(p.Amount)
	}
	return stops, nil
}
