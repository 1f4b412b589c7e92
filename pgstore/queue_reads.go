package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Get returns the intent with orderID, or an error matching
// ErrIntentNotFound.
func (q *Queue) Get(ctx context.Context, orderID string) (*Intent, error) {
	if err := q.CheckSchema(ctx); err != nil {
		return nil, err
	}
	return getRow(ctx, q.cfg.Pool, "intent", q.sql.get, orderID, scanIntent, ErrIntentNotFound)
}

// ListFilter selects intents for List.
type ListFilter struct {
	// States keeps intents in any of these states; empty keeps all.
	States []IntentState
	// After pages: only orderIds greater than it (pass the last orderId of
	// the previous page).
	After string
	// Limit caps the page (0: 100; at most 10,000).
	Limit int
	// Held keeps only intents with a Hold.
	Held bool
	// Currency and Network, if set, keep only intents in them (canonical
	// keys, as enqueued).
	Currency, Network string
	// Since and Until, if set, keep only intents enqueued at or after
	// Since and before Until.
	Since, Until time.Time
	// Search, if set, keeps only the intent whose orderId, payout id or
	// wallet address is exactly Search.
	Search string
}

// List returns intents in orderId order, filtered by f.
func (q *Queue) List(ctx context.Context, f ListFilter) ([]Intent, error) {
	if err := q.CheckSchema(ctx); err != nil {
		return nil, err
	}
	states := stateNames(f.States)
	return listRows(ctx, q.cfg.Pool, "intents", q.sql.list, scanIntent, namedArgs{
		"all": len(states) == 0, "states": states, "after": f.After, "limit": pageLimit(f.Limit),
		"held": f.Held, "currency": f.Currency, "network": f.Network,
		"since": nullTime(f.Since), "until": nullTime(f.Until), "search": f.Search,
	})
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Counts returns how many intents are in each state (states with none are
// absent).
func (q *Queue) Counts(ctx context.Context) (map[IntentState]int, error) {
	if err := q.CheckSchema(ctx); err != nil {
		return nil, err
	}
	out, _, err := countStates[IntentState](ctx, q.cfg.Pool, "intents", q.sql.counts, false)
	return out, err
}

// Event is one entry of an intent's history: a change of the intent, or
// an operator's action, appended in the transaction that made it.
type Event struct {
	// At is the database's time of the change.
	At time.Time
	// Actor is what made it: "enqueue", "worker", "operator" (Approve,
	// Reject, Retry, Resolve: ActorID says who), or "webhook" (a payout
	// id learned).
	Actor string
	// ActorID is who made it: the actor id an operator's move names, or
	// EnqueueBy's ("" for the workers, webhooks and an Enqueue without one),
	// in its canonical form (CanonicalActor; a row written before ids were
	// canonical reads as its canonical form too, or as written when the
	// profile refuses it).
	ActorID string
	// From and To are the states before and after ("" From: enqueued;
	// From equal to To: no state change, an action on record).
	From, To IntentState
	// Attempts is the intent's attempt count after the change.
	Attempts int
	// Verdict is the reconciliation's verdict that led here, if any.
	Verdict string
	// Error is the error text recorded with the change (server text:
	// show it escaped).
	Error string
	// Note is the operator's note, or what was done ("OnFinal ran").
	Note string
	// PayoutID is the intent's payout id after the change, when known.
	PayoutID string
	// RequestID is the API's request id of the answer that led here, when
	// the answer carried one.
	RequestID string
}

// History returns every change of the intent with orderID and every
// operator action on it, oldest first; none for an unknown orderId.
func (q *Queue) History(ctx context.Context, orderID string) ([]Event, error) {
	rows, err := q.cfg.Pool.Query(ctx, q.sql.history, orderID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
	}
	var out []Event
	var e Event
	var from, to string
	_, err = pgx.ForEachRow(rows, []any{&e.At, &e.Actor, &from, &to, &e.Attempts, &e.Verdict, &e.Error, &e.Note, &e.PayoutID, &e.RequestID, &e.ActorID}, func() error {
		e.From, e.To, e.ActorID = IntentState(from), IntentState(to), actorKey(e.ActorID)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
	}
	return out, nil
}

// Health summarizes the intents not final: due, overdue (due for longer
// than a Lease), failing, waiting for a person (parked or needing
// approval), and the commonest failure (one query); and the webhook
// refusals recorded by WebhookRefused (another).
func (q *Queue) Health(ctx context.Context) (Health, error) {
	if err := q.CheckSchema(ctx); err != nil {
		return Health{}, err
	}
	return q.health(ctx, q.cfg.Pool, "payouts", q.sql.health, q.cfg.Lease)
}

// WebhookRefused records a webhook delivery the handler refused, so that
// Health shows it in every process that reads this database (the console,
// `cryptopay queue health`): set it as webhook.Config.OnRefused (with a
// Tracker too, call both). It returns at once; the counts are written in
// the background, at most once a second (a failed write is logged and
// tried again; the counts of the last second are lost if the process ends
// first).
func (q *Queue) WebhookRefused(_ context.Context, r webhook.Refusal) { q.refusals.record(r) }
