package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
)

// Enqueue records a payout intent in tx, the merchant's own transaction
// (record the withdrawal and its payout in one commit: if tx rolls back,
// nothing is queued). The intent is keyed by p.OrderID, which must be
// unique per withdrawal: it is the only handle for reconciling an unknown
// outcome. Enqueuing an orderId again with identical parameters is a no-op
// (created false); with other parameters it is an *IntentConflictError and
// the existing intent is unchanged. p must pass p.ValidateWith(Addresses), and its
// Currency and Network must be canonical keys ("usdt", not "USDT" or
// "usdt "): anything else is a *cryptopay.ValidationError naming the
// canonical spelling. The guardrails are checked as the worker checks
// them (see Guardrails): an intent a guardrail stops for good (MaxAmount,
// the address checks) is recorded StateBlocked at once, with the reason in
// LastError and its final callback due (a Run with OnFinal runs it); one
// above Guardrails.ApprovalAbove for its currency starts in
// StateNeedsApproval; any other starts in StateQueued. Nothing is sent
// before tx commits.
func (q *Queue) Enqueue(ctx context.Context, tx pgx.Tx, p cryptopay.CreatePayoutParams) (created bool, err error) {
	n, err := q.EnqueueMany(ctx, tx, []cryptopay.CreatePayoutParams{p})
	if err != nil {
		var ie *indexedError
		if errors.As(err, &ie) {
			return false, ie.err // one intent: no index to name
		}
		return false, err
	}
	return n == 1, nil
}

// EnqueueMany enqueues every intent in tx, as Enqueue does, in two round
// trips (three when some orderIds already exist), and returns how many were
// new. An invalid or conflicting intent fails the whole call with an error
// naming its index (from 1) and orderId; roll tx back then, and nothing of
// the batch is queued. The same orderId twice in ps is treated as a
// second Enqueue.
func (q *Queue) EnqueueMany(ctx context.Context, tx pgx.Tx, ps []cryptopay.CreatePayoutParams) (created int, err error) {
	return q.enqueue(ctx, tx, "", false, ps)
}

// EnqueueBy is EnqueueMany recording actor (who asked for the payouts:
// a user id, an operator's name) as each new intent's EnqueuedBy and in
// its history. Four eyes: that actor's approval of these intents does not
// count. actor must be a non-empty identifier (no control or invisible
// characters, at most 128 bytes), else a *cryptopay.ValidationError
// (Field "actor").
func (q *Queue) EnqueueBy(ctx context.Context, tx pgx.Tx, actor string, ps []cryptopay.CreatePayoutParams) (created int, err error) {
	actor, err = CanonicalActor(actor)
	if err != nil {
		return 0, err
	}
	return q.enqueue(ctx, tx, actor, false, ps)
}

// enqueue is EnqueueBy; held starts every intent the guardrails would
// queue in StateNeedsApproval instead (a refund: Refunds).
func (q *Queue) enqueue(ctx context.Context, tx pgx.Tx, actor string, held bool, ps []cryptopay.CreatePayoutParams) (created int, err error) {
	if tx == nil {
		return 0, fmt.Errorf("%w: Enqueue needs the caller's transaction", ErrInvalidOption)
	}
	if err := q.schema.check(ctx, tx); err != nil {
		return 0, err
	}
	for i, p := range ps {
		// Validate refuses a non-canonical currency or network key too
		// (the "key" rule), so the guardrails' keys hold.
		if err := p.ValidateWith(q.cfg.Addresses); err != nil {
			return 0, &indexedError{i: i, n: len(ps), orderID: p.OrderID, err: err}
		}
	}
	created, existing, err := q.insertIntents(ctx, tx, actor, held, ps)
	if err != nil || len(existing) == 0 {
		return created, err
	}
	if err := q.checkExisting(ctx, tx, ps, existing); err != nil {
		return 0, err
	}
	return created, nil
}

// insertIntents inserts ps in one statement, enqueued by actor (held:
// waiting for approval whatever the threshold), and returns how many were new and the indexes of those whose orderId was
// queued already (or earlier in ps).
func (q *Queue) insertIntents(ctx context.Context, tx pgx.Tx, actor string, held bool, ps []cryptopay.CreatePayoutParams) (created int, existing []int, err error) {
	cols := make([][]string, 11) // the text columns, in the statement's order
	fee, due := make([]bool, len(ps)), make([]bool, len(ps))
	for i, p := range ps {
		state, why := StateQueued, ""
		if g := q.cfg.Guardrails.verdict(ctx, p, false); g != nil {
			state, why = StateBlocked, errText(g)
			if g.Rule == "approval" {
				state, why = StateNeedsApproval, ""
			}
		}
		if held && state == StateQueued {
			state = StateNeedsApproval
		}
		for c, v := range []string{p.OrderID, p.WalletAddress, p.Amount.String(), p.Currency, p.Network, p.CustomerID,
			p.CustomerIP, p.AdditionalData, p.WebhookURL, string(state), why} {
			cols[c] = append(cols[c], v)
		}
		fee[i], due[i] = p.NetworkFeeByUser, state.IsFinal()
	}
	rows, err := tx.Query(ctx, q.sql.insert, namedArgs{"order_id": cols[0], "wallet_address": cols[1], "fee_by_user": fee,
		"amount": cols[2], "currency": cols[3], "network": cols[4], "customer_id": cols[5], "customer_ip": cols[6],
		"additional_data": cols[7], "webhook_url": cols[8], "state": cols[9], "why": cols[10], "due": due,
		"actor": actor, "approvals": q.cfg.Approvals})
	if err != nil {
		return 0, nil, fmt.Errorf("pgstore: enqueue: %w", err)
	}
	inserted := make(map[string]bool, len(ps))
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { inserted[id] = true; return nil }); err != nil {
		return 0, nil, fmt.Errorf("pgstore: enqueue: %w", err)
	}
	for i, p := range ps {
		if inserted[p.OrderID] {
			delete(inserted, p.OrderID) // a repeat later in ps found it queued
			created++
			continue
		}
		existing = append(existing, i)
	}
	// No Transition here: tx may still roll back. The enqueue is reported
	// by the first process that changes the committed intent (enqueued).
	return created, existing, nil
}

// checkExisting reads the intents of ps at the indexes existing (queued
// already) in one round trip, and returns an *IntentConflictError, with
// its index, for the first whose parameters differ.
func (q *Queue) checkExisting(ctx context.Context, tx pgx.Tx, ps []cryptopay.CreatePayoutParams, existing []int) error {
	ids := make([]string, len(existing))
	for k, i := range existing {
		ids[k] = ps[i].OrderID
	}
	rows, err := tx.Query(ctx, q.sql.getMany, ids)
	if err != nil {
		return fmt.Errorf("pgstore: enqueue: reading the existing intents: %w", err)
	}
	have := make(map[string]cryptopay.CreatePayoutParams, len(ids))
	for rows.Next() {
		in, err := scanIntent(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("pgstore: enqueue: reading the existing intents: %w", err)
		}
		have[in.Params.OrderID] = in.Params
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: enqueue: reading the existing intents: %w", err)
	}
	for _, i := range existing {
		if f := differingField(have[ps[i].OrderID], ps[i]); f != "" {
			return &indexedError{i: i, n: len(ps), orderID: ps[i].OrderID, err: &IntentConflictError{OrderID: ps[i].OrderID, Field: f}}
		}
	}
	return nil
}

// indexedError is EnqueueMany's error for one intent of the batch; it
// unwraps to the intent's own error.
type indexedError struct {
	i, n    int
	orderID string
	err     error
}

func (e *indexedError) Error() string {
	return fmt.Sprintf("pgstore: intent %d of %d (orderId %q): %v", e.i+1, e.n, e.orderID, e.err)
}

func (e *indexedError) Unwrap() error { return e.err }

// differingField names the first field in which a and b differ ("" if
// none). Amounts compare by value (1.0 equals 1.00).
func differingField(a, b cryptopay.CreatePayoutParams) string {
	switch {
	case a.WalletAddress != b.WalletAddress:
		return "WalletAddress"
	case a.NetworkFeeByUser != b.NetworkFeeByUser:
		return "NetworkFeeByUser"
	case !a.Amount.Equal(b.Amount):
		return "Amount"
	case a.Currency != b.Currency:
		return "Currency"
	case a.Network != b.Network:
		return "Network"
	case a.CustomerID != b.CustomerID:
		return "CustomerID"
	case a.CustomerIP != b.CustomerIP:
		return "CustomerIP"
	case a.AdditionalData != b.AdditionalData:
		return "AdditionalData"
	case a.WebhookURL != b.WebhookURL:
		return "WebhookURL"
	}
	return ""
}
