package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// The guardrails checked against the queue's table: the velocity cap,
// read under the currency's lock before each attempt (velocityCheck), and
// CheckGuardrails, every guardrail as a dry run over a batch.

// velocityCheck reads, in tx and under the currency's advisory lock (held
// until tx ends), what the currency has reserved within the window (every
// attempt, this intent's earlier ones included), and says whether one more
// attempt of p's amount still fits under the cap.
func (q *Queue) velocityCheck(ctx context.Context, tx pgx.Tx, p cryptopay.CreatePayoutParams, limit decimal.Decimal) (*GuardrailError, error) {
	g := &q.cfg.Guardrails
	if _, err := tx.Exec(ctx, q.sql.velocityLock, q.Table(), p.Currency); err != nil {
		return nil, err
	}
	var s string
	if err := tx.QueryRow(ctx, q.sql.velocitySum, p.Currency, g.VelocityWindow.Microseconds()).Scan(&s); err != nil {
		return nil, err
	}
	used, err := decimal.NewFromString(s)
	if err != nil {
		return nil, err
	}
	return g.velocityStop(p, used, limit), nil
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
// which of ps the guardrails would stop (key, max_amount, address), hold
// (velocity: the currency's reservations within the window now, plus the
// earlier intents of ps) or send to approval. It runs the same checks as
// Enqueue and the worker. It cannot see what other replicas reserve
// meanwhile; the worker's check before sending is the one that holds.
func (q *Queue) CheckGuardrails(ctx context.Context, ps []cryptopay.CreatePayoutParams) ([]GuardStop, error) {
	g := &q.cfg.Guardrails
	var stops []GuardStop
	used := make(map[string]decimal.Decimal)
	for i, p := range ps {
		if e := g.verdict(ctx, p, false); e != nil {
			stops = append(stops, GuardStop{Index: i, OrderID: p.OrderID, Err: e})
			if e.Rule != "approval" {
				continue
			}
		}
		limit, ok := capOf(g.Velocity, p.Currency)
		if !ok {
			continue
		}
		cur := p.Currency
		u, seen := used[cur]
		if !seen {
			var s string
			err := q.cfg.Pool.QueryRow(ctx, q.sql.velocitySum, p.Currency, g.VelocityWindow.Microseconds()).Scan(&s)
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
