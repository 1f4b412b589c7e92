package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// Guardrails stop payouts before they are sent. All are opt-in (a nil map
// or func is off). Currency keys are canonical currency keys ("usdt":
// lower-case, no surrounding space), compared byte for byte with the
// intent's Currency, which Enqueue requires canonical too: NewQueue
// refuses a key such as "USDT" or "usdt " with the canonical spelling
// named, so a cap can never miss an intent by its spelling. They guard
// against a bug or a compromised caller draining the balance. One code
// path checks them at Enqueue, in CheckGuardrails (a dry run) and by the
// worker before every create request, so the three agree, and an intent
// enqueued before a limit was lowered is held to the new limit.
type Guardrails struct {
	// MaxAmount caps one payout per currency. An intent above its cap is
	// blocked (StateBlocked, final) before anything is sent: at Enqueue
	// (it is never offered for approval), or by the worker if the cap was
	// lowered since.
	MaxAmount map[string]decimal.Decimal
	// Velocity caps, per currency, the total of the payouts attempted
	// within VelocityWindow, this one included: every attempt that may
	// have created a payout counts (an intent sent three times counts
	// three times). An intent that would pass
	// the cap stays queued and is tried again after BackoffMin, with the
	// reason in LastError. The check and the reservation run under a
	// per-currency advisory lock keyed by the table's identity in the
	// database (its oid: "public.x" and "x" take the same lock), so
	// replicas cannot pass the cap together.
	// An attempt counts until the window has passed, even if its payout
	// later fails (refusals by the API do not count).
	Velocity map[string]decimal.Decimal
	// VelocityWindow is the rolling window of Velocity (default 24 h).
	VelocityWindow time.Duration
	// AllowedAddresses, if not nil, lists the only wallet addresses paid
	// to; any other is blocked. They are compared with address.Same for
	// the payout's network: an EVM or segwit address in another case is
	// the same address, any other must match byte for byte. NewQueue
	// keeps its own copy: changing the slice afterwards changes nothing.
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

	allowed map[string][]string // AllowedAddresses by strings.ToLower, as NewQueue saw them
}

// DefaultVelocityWindow is Guardrails.VelocityWindow's default.
const DefaultVelocityWindow = 24 * time.Hour

// ErrGuardrail matches every *GuardrailError.
var ErrGuardrail = errors.New("pgstore: stopped by a guardrail")

// GuardrailError says which guardrail stops a payout intent. It matches
// ErrGuardrail.
type GuardrailError struct {
	// Rule is "key" (a currency or network key that is not canonical),
	// "max_amount", "velocity", "address" or "approval".
	Rule string
	// Reason says why, with the amounts and the cap.
	Reason string
}

// Error returns the rule and the reason.
func (e *GuardrailError) Error() string { return "pgstore: guardrail " + e.Rule + ": " + e.Reason }

// Is matches ErrGuardrail.
func (e *GuardrailError) Is(target error) bool { return target == ErrGuardrail }

// check refuses non-canonical currency keys and negative caps.
func (g *Guardrails) check() error {
	for _, f := range []struct {
		name string
		m    map[string]decimal.Decimal
	}{{"MaxAmount", g.MaxAmount}, {"Velocity", g.Velocity}, {"ApprovalAbove", g.ApprovalAbove}} {
		for k, v := range f.m {
			if why := ids.Key(k); why != "" {
				return fmt.Errorf("%w: Guardrails.%s[%q]: %s", ErrInvalidOption, f.name, k, why)
			}
			if v.IsNegative() {
				return fmt.Errorf("%w: Guardrails.%s[%q] is negative", ErrInvalidOption, f.name, k)
			}
		}
	}
	if g.VelocityWindow < 0 {
		return fmt.Errorf("%w: Guardrails.VelocityWindow is negative", ErrInvalidOption)
	}
	setDefault(&g.VelocityWindow, DefaultVelocityWindow)
	if g.AllowedAddresses != nil {
		g.allowed = make(map[string][]string, len(g.AllowedAddresses))
		for _, a := range g.AllowedAddresses {
			k := strings.ToLower(a)
			g.allowed[k] = append(g.allowed[k], a)
		}
	}
	return nil
}

// allows reports whether wallet is on the allow-list for network: an
// entry that address.Same finds equal, among those that differ from it
// at most in case (one map lookup, whatever the list's length).
func (g *Guardrails) allows(network, wallet string) bool {
	for _, a := range g.allowed[strings.ToLower(wallet)] {
		if address.Same(network, a, wallet) {
			return true
		}
	}
	return false
}

// capOf is the cap of a canonical currency key (keys are compared byte
// for byte: both sides are canonical).
func capOf(m map[string]decimal.Decimal, currency string) (decimal.Decimal, bool) {
	v, ok := m[currency]
	return v, ok
}

// keyError is a ValidationError for a currency or network that is not a
// canonical key (see ids.Key), or nil.
func keyError(p cryptopay.CreatePayoutParams) error {
	if why := ids.Key(p.Currency); why != "" {
		return &cryptopay.ValidationError{Field: "Currency", Reason: why}
	}
	if why := ids.Key(p.Network); why != "" {
		return &cryptopay.ValidationError{Field: "Network", Reason: why}
	}
	return nil
}

// verdict is the one check of the per-intent guardrails, used by Enqueue,
// CheckGuardrails and the worker before sending: the first that stops p
// for good ("key", "max_amount", "address"), else the approval hold
// (unless approved), else nil. Velocity, which depends on what was sent
// meanwhile, is checked apart, under its lock.
func (g *Guardrails) verdict(ctx context.Context, p cryptopay.CreatePayoutParams, approved bool) *GuardrailError {
	if err := keyError(p); err != nil {
		return &GuardrailError{Rule: "key", Reason: err.Error()}
	}
	if stop := g.stop(ctx, p); stop != nil {
		return stop
	}
	if !approved && g.needsApproval(p) {
		return g.approvalError(p)
	}
	return nil
}

// needsApproval reports whether p is above its currency's approval
// threshold.
func (g *Guardrails) needsApproval(p cryptopay.CreatePayoutParams) bool {
	limit, ok := capOf(g.ApprovalAbove, p.Currency)
	return ok && p.Amount.GreaterThan(limit)
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
		if !g.allows(p.Network, p.WalletAddress) {
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

// velocityStop is the velocity guardrail's answer for p when used is
// already reserved within the window: nil if p still fits under limit.
func (g *Guardrails) velocityStop(p cryptopay.CreatePayoutParams, used, limit decimal.Decimal) *GuardrailError {
	if total := used.Add(p.Amount); total.GreaterThan(limit) {
		return &GuardrailError{Rule: "velocity", Reason: fmt.Sprintf("%s %s would bring the last %v to %s, above the cap of %s",
			p.Amount, p.Currency, g.VelocityWindow, total, limit)}
	}
	return nil
}
