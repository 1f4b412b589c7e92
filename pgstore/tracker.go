package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// DefaultTrackerTable is the table a Tracker uses without
// TrackerConfig.Table; its history table has the same name with "_history"
// appended, the table of its operators' moves (Tracker.Moves) "_moves".
const DefaultTrackerTable = "cryptopay_payments_tracked"

// Defaults of TrackerConfig.
const (
	// DefaultTrackerOpenEvery is how often an open payment is read before
	// its expiredAt when no webhook wakes it.
	DefaultTrackerOpenEvery = 10 * time.Minute
	// DefaultTrackerLateMin and DefaultTrackerLateMax bound the wait
	// between two reads of a payment past its expiredAt (doubling from the
	// first to the second), which catch late transfers.
	DefaultTrackerLateMin = 10 * time.Minute
	DefaultTrackerLateMax = 6 * time.Hour
	// DefaultTrackerHorizon is how long after expiredAt the polls go on.
	DefaultTrackerHorizon = 72 * time.Hour
)

// Errors of the tracker; match them with errors.Is.
var (
	// ErrTrackConflict: the orderId is tracked with other data. See
	// *TrackConflictError.
	ErrTrackConflict = errors.New("pgstore: payment tracked with other data")
	// ErrNotTracked: no tracked payment has this orderId.
	ErrNotTracked = errors.New("pgstore: no tracked payment with this orderId")
)

// TrackConflictError is Track's answer to an orderId tracked already with
// other data. It matches ErrTrackConflict; the tracked payment is unchanged.
type TrackConflictError struct {
	// OrderID is the orderId tracked twice.
	OrderID string
	// Field names the first datum that differs.
	Field string
}

// Error names the orderId and the field, not the values.
func (e *TrackConflictError) Error() string {
	return fmt.Sprintf("pgstore: payment for order %q is tracked with a different %s", e.OrderID, e.Field)
}

// Is matches ErrTrackConflict.
func (e *TrackConflictError) Is(target error) bool { return target == ErrTrackConflict }

// TrackerConfig configures NewTracker. Pool is required, and Client for
// Run; every other field has a default.
type TrackerConfig struct {
	// Pool is the merchant's database. The tracker needs SELECT, INSERT and
	// UPDATE on its two tables (and CREATE with CreateTable).
	Pool *pgxpool.Pool
	// Client reads the payments' statuses. Without it the tracker can
	// track, wake, read and list, but not Run.
	Client *cryptopay.Client
	// Table is the table ("name" or "schema.name"); default
	// DefaultTrackerTable. The history is Table + "_history", the operators' moves Table + "_moves".
	Table string
	// CreateTable makes NewTracker create the tables if missing (see
	// Tracker.DDL).
	CreateTable bool
	// OpenEvery, LateMin, LateMax and Horizon shape the backstop polls (see
	// the Default* constants): every OpenEvery before expiredAt, once just
	// after it, then from LateMin doubling to LateMax until Horizon after
	// expiredAt. Every wait is drawn from [3/4 of it, all of it].
	OpenEvery, LateMin, LateMax, Horizon time.Duration
	// Lease is how long a worker holds a payment it claimed (default 1
	// minute); another replica takes it over only after that.
	Lease time.Duration
	// PollInterval is how often an idle worker looks for due payments
	// (default 1 s).
	PollInterval time.Duration
	// Concurrency is how many payments one Run reads at once (default 16):
	// with Lease it bounds the API reads of a replica.
	Concurrency int
	// OnChange, if set, runs once per recorded change that matters to money
	// (PaymentChange.Credits: every change of the paid amount, and every
	// move to a terminal status or one that needs action), inside the
	// transaction that records it:
	// its writes through tx and the tracker's record commit together, or
	// neither does (then it runs again later, for the same change). It must
	// do its effects through tx only, must not commit or roll tx back, and
	// must be quick: it holds the payment's row lock. An error rolls the
	// change back; the payment is read again later.
	OnChange func(ctx context.Context, tx pgx.Tx, c *PaymentChange) error
	// Observer, if set, is called after each committed change (every
	// change, money or not), on the worker's goroutine: keep it quick.
	Observer func(PaymentChange)
	// Logger receives the workers' failures: a read or write they could
	// not make, a callback that failed or panicked; one line per class of
	// failure, then at most one per window (1 minute, doubling to an
	// hour) saying how many were not logged. Default: warnings and errors
	// as text to standard error; pass slog.New(slog.DiscardHandler) for
	// none.
	Logger *slog.Logger

	api trackerAPI // tests replace the SDK
}

// trackerAPI is the one API call the tracker makes.
type trackerAPI interface {
	GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error)
}

// Tracker follows payments durably in the merchant's PostgreSQL, the
// payment-side twin of Queue: tracked in the merchant's own transactions,
// woken by webhooks (PaymentChanged), read by a backstop on a schedule
// derived from expiredAt, on any number of replicas (leases, FOR UPDATE
// SKIP LOCKED), and each change that matters to money reaches OnChange
// exactly once, in the transaction that records it. Build it with
// NewTracker; safe for concurrent use.
type Tracker struct {
	engine
	cfg     TrackerConfig
	api     trackerAPI
	history pgx.Identifier
	moves   pgx.Identifier
	sql     trackerSQL

	// hook is called at named points of the worker; tests use it to kill
	// the process there.
	hook func(point string)
}

// NewTracker checks cfg, fills in the defaults and returns a Tracker; with
// CreateTable it creates the tables first (or adds the columns an older
// version's tables lack). Without it NewTracker does not touch the
// database, so calling the CreateTable method next works too: the first
// Run, Track, TrackOrder, PaymentChanged, Get, List, Counts or Health
// checks the tables and columns (CheckSchema, one query, once) and returns
// a *SchemaError naming the table, the database and both fixes.
func NewTracker(ctx context.Context, cfg TrackerConfig) (*Tracker, error) {
	setDefault(&cfg.OpenEvery, DefaultTrackerOpenEvery)
	setDefault(&cfg.LateMin, DefaultTrackerLateMin)
	setDefault(&cfg.LateMax, DefaultTrackerLateMax)
	setDefault(&cfg.Horizon, DefaultTrackerHorizon)
	setDefault(&cfg.Lease, time.Minute)
	setDefault(&cfg.PollInterval, time.Second)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	t := &Tracker{cfg: cfg, api: cfg.api}
	if err := t.init(engineConfig{config: "TrackerConfig", pool: cfg.Pool, table: cmpOr(cfg.Table, DefaultTrackerTable),
		logger: cfg.Logger, poll: cfg.PollInterval, ddl: t.DDL}); err != nil {
		return nil, err
	}
	if cfg.LateMax < cfg.LateMin {
		return nil, fmt.Errorf("%w: LateMax %v is below LateMin %v", ErrInvalidOption, cfg.LateMax, cfg.LateMin)
	}
	if t.api == nil && cfg.Client != nil {
		t.api = cfg.Client
	}
	t.history, t.moves = sibling(t.table, "_history"), sibling(t.table, "_moves")
	t.sql = buildTrackerSQL(t.Table(), t.history.Sanitize(), t.moves.Sanitize())
	if cfg.CreateTable {
		if err := t.CreateTable(ctx); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Table returns the tracker's table name, quoted for SQL.
func (t *Tracker) Table() string { return t.table.Sanitize() }

// DDL returns the statements that create the tracker's tables and indexes
// (the webhook refusals' table, the tracker table's name +
// "_webhook_refusals", too). Amounts are numeric (exact), never floating
// point.
func (t *Tracker) DDL() string {
	table, hist, moves := t.Table(), t.history.Sanitize(), t.moves.Sanitize()
	return tableDDL(table, trackedColumns) + addColumnsDDL(table, "merchant_amount numeric") +
		indexDDL(t.table, table, trackedIndexes...) +
		tableDDL(hist, trackedHistoryColumns) + addColumnsDDL(hist, "merchant_amount numeric") +
		tableDDL(moves, trackedMovesColumns) + indexDDL(t.table, moves, index{"_moves_order_idx", "(order_id, id)"}) +
		failDDL(table) + tableDDL(t.refusals.table, refusalColumns)
}

// trackedColumns are the tracker table's columns.
const trackedColumns = `    order_id     text        PRIMARY KEY,
    payment_id   text        NOT NULL DEFAULT '',
    pay_amount   numeric,
    currency     text        NOT NULL DEFAULT '',
    network      text        NOT NULL DEFAULT '',
    expired_at   timestamptz,
    state        text        NOT NULL,
    status       text        NOT NULL DEFAULT '',
    paid_amount  numeric,
    needs_action boolean     NOT NULL DEFAULT false,
    anomaly      text        NOT NULL DEFAULT '',
    note         text        NOT NULL DEFAULT '',
    final        boolean     NOT NULL DEFAULT false,
    changes      integer     NOT NULL DEFAULT 0,
    late_polls   integer     NOT NULL DEFAULT 0,
    woken        boolean     NOT NULL DEFAULT false,
    next_at      timestamptz,
    lease_token  bytea,
    tracked_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()`

// trackedIndexes are the tracker table's indexes.
var trackedIndexes = []index{
	{"_due_idx", "(next_at) WHERE next_at IS NOT NULL"},
	{"_state_idx", "(state, order_id)"},
	{"_action_idx", "(order_id) WHERE needs_action"},
	{"_payment_idx", "(payment_id) WHERE payment_id <> ''"},
	{"_open_idx", "(next_at) WHERE " + trackOpenSQL},
	{"_anomaly_idx", "(order_id) WHERE anomaly <> ''"}, // List's anomaly filter
}

// trackedHistoryColumns are the history table's columns.
const trackedHistoryColumns = `    order_id    text        NOT NULL,
    seq         integer     NOT NULL,
    payment_id  text        NOT NULL,
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    from_paid   numeric,
    to_paid     numeric,
    late        boolean     NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (order_id, seq)`

// trackedMovesColumns are the moves table's columns.
const trackedMovesColumns = `    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id   text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_id   text        NOT NULL,
    action     text        NOT NULL,
    anomaly    text        NOT NULL,
    note       text        NOT NULL`

// CreateTable creates the tracker's tables and indexes if they do not
// exist.
func (t *Tracker) CreateTable(ctx context.Context) error {
	return createTable(ctx, t.cfg.Pool, t.table, t.DDL())
}

// CheckSchema checks, in one query, that the tracker's tables exist with
// every column this version needs; it returns a *SchemaError (matching
// ErrSchema) if not. Once it succeeds it is free.
func (t *Tracker) CheckSchema(ctx context.Context) error { return t.schema.check(ctx, t.cfg.Pool) }

// Get returns the tracked payment of orderID, or an error matching
// ErrNotTracked.
func (t *Tracker) Get(ctx context.Context, orderID string) (*TrackedPayment, error) {
	if err := t.CheckSchema(ctx); err != nil {
		return nil, err
	}
	return getRow(ctx, t.cfg.Pool, "tracked payment", t.sql.get, orderID, scanTracked, ErrNotTracked)
}

// ClearAnomaly clears the tracked payment's Anomaly once actor (who
// looked: an identifier, as Queue.Approve's) has looked into it, and keeps
// note (what they found: required, at most 1024 bytes; its lines kept,
// \r\n and \r as \n; no other control or invisible character) in
// TrackedPayment.Note with the actor and the anomaly it cleared; the move,
// with the actor's id, is appended to the payment's moves (Moves), in the
// same statement. NeedsAction then follows the status alone. It changes
// nothing else: no status is recorded, nothing reaches OnChange and
// nothing is credited (the moves are not the history). It
// returns the anomaly it cleared ("" if there was none: nothing changes).
// If a new status or another anomaly is recorded meanwhile, it clears
// nothing and returns ErrChanged: look at the payment again. To clear
// only the anomaly a person was shown, use the clear-anomaly move of
// Moves with the text they saw.
func (t *Tracker) ClearAnomaly(ctx context.Context, orderID, actor, note string) (cleared string, err error) {
	return t.clearAnomaly(ctx, orderID, Operator{ID: actor}, note, "")
}

// clearAnomaly is ClearAnomaly by an operator; a seen anomaly other than
// "" must be the payment's, or nothing is cleared (ErrChanged).
func (t *Tracker) clearAnomaly(ctx context.Context, orderID string, by Operator, note, seen string) (cleared string, err error) {
	who, err := by.canonical()
	if err != nil {
		return "", err
	}
	note, why := checkNote(note, maxErrorText)
	if note == "" {
		why = "is required: who looked, and what they found"
	}
	if why != "" {
		return "", &cryptopay.ValidationError{Field: "note", Reason: why}
	}
	tp, err := t.Get(ctx, orderID)
	if err != nil {
		return "", err
	}
	if seen != "" && tp.Anomaly != seen {
		return "", fmt.Errorf("%w: the anomaly of %q is no longer the one shown; nothing was cleared: look at it again", ErrChanged, orderID)
	}
	if tp.Anomaly == "" {
		return "", nil
	}
	keep := scrubNote(fmt.Sprintf("cleared %q by %q: %s", tp.Anomaly, who.ID, note))
	tag, err := t.cfg.Pool.Exec(ctx, t.sql.clear, orderID, tp.Status.NeedsAction(), string(tp.Status), tp.Anomaly, keep,
		who.ID, note)
	if err != nil {
		return "", fmt.Errorf("pgstore: clearing the anomaly of %q: %w", orderID, err)
	}
	if tag.RowsAffected() == 0 {
		return "", fmt.Errorf("%w: the tracked payment %q changed while its anomaly was being cleared; nothing was cleared: look at it again", ErrChanged, orderID)
	}
	return tp.Anomaly, nil
}

// TrackFilter selects tracked payments for List.
type TrackFilter struct {
	// States keeps payments in any of these states; empty keeps all.
	States []TrackState
	// NeedsAction keeps only payments a person should look at.
	NeedsAction bool
	// After pages: only orderIds greater than it.
	After string
	// Limit caps the page (0: 100; at most 10,000).
	Limit int
	// Anomaly keeps only payments with an Anomaly.
	Anomaly bool
	// Search, if set, keeps only the payment whose orderId or payment id
	// is exactly Search.
	Search string
}

// List returns tracked payments in orderId order, filtered by f.
func (t *Tracker) List(ctx context.Context, f TrackFilter) ([]TrackedPayment, error) {
	if err := t.CheckSchema(ctx); err != nil {
		return nil, err
	}
	states := stateNames(f.States)
	return listRows(ctx, t.cfg.Pool, "tracked payments", t.sql.list, scanTracked,
		len(states) == 0, states, f.NeedsAction, f.After, pageLimit(f.Limit), f.Anomaly, f.Search)
}

// History returns the recorded changes of orderID's payment, oldest first
// (empty if none or not tracked).
func (t *Tracker) History(ctx context.Context, orderID string) ([]PaymentChange, error) {
	rows, err := t.cfg.Pool.Query(ctx, t.sql.history, orderID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
	}
	defer rows.Close()
	var out []PaymentChange
	for rows.Next() {
		var c PaymentChange
		var from, to string
		var fromPaid, toPaid, merchant *string
		if err := rows.Scan(&c.OrderID, &c.Seq, &c.PaymentID, &from, &to, &fromPaid, &toPaid, &c.Late, &c.At, &merchant); err != nil {
			return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
		}
		c.From, c.To = cryptopay.PaymentStatus(from), cryptopay.PaymentStatus(to)
		if c.FromPaid, err = nullDecimal(fromPaid); err == nil {
			c.ToPaid, err = nullDecimal(toPaid)
		}
		if err == nil {
			c.MerchantAmount, err = nullDecimal(merchant)
		}
		if err != nil {
			return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: reading the history of %q: %w", orderID, err)
	}
	return out, nil
}

// Moves returns the operators' moves on orderID's payment, oldest first
// (empty if none or not tracked).
func (t *Tracker) Moves(ctx context.Context, orderID string) ([]OperatorMove, error) {
	if err := t.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := t.cfg.Pool.Query(ctx, t.sql.moves, orderID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the moves on %q: %w", orderID, err)
	}
	var out []OperatorMove
	var m OperatorMove
	var action string
	_, err = pgx.ForEachRow(rows, []any{&m.At, &m.ActorID, &action, &m.Anomaly, &m.Note}, func() error {
		m.Action, m.ActorID = MoveAction(action), actorKey(m.ActorID)
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the moves on %q: %w", orderID, err)
	}
	return out, nil
}

// Counts returns how many tracked payments are in each state (states with
// none are absent) and how many need action.
func (t *Tracker) Counts(ctx context.Context) (map[TrackState]int, int, error) {
	if err := t.CheckSchema(ctx); err != nil {
		return nil, 0, err
	}
	return countStates[TrackState](ctx, t.cfg.Pool, "tracked payments", t.sql.counts, true)
}

// Health summarizes the tracked payments not closed: due, overdue (due
// for longer than a Lease), failing, needing action (closed ones too), and
// the commonest failure (one query); and the webhook refusals recorded by
// WebhookRefused (another).
func (t *Tracker) Health(ctx context.Context) (Health, error) {
	if err := t.CheckSchema(ctx); err != nil {
		return Health{}, err
	}
	return t.health(ctx, t.cfg.Pool, "payments", t.sql.health, t.cfg.Lease)
}

// WebhookRefused records a webhook delivery the handler refused, so that
// Health shows it in every process that reads this database (the console,
// `cryptopay tracked health`): set it as webhook.Config.OnRefused. It
// returns at once; the counts are written in the background, at most once
// a second (a failed write is logged and tried again; the counts of the
// last second are lost if the process ends first).
func (t *Tracker) WebhookRefused(_ context.Context, r webhook.Refusal) { t.refusals.record(r) }

// scanTracked reads one row of trackedCols, then extra.
func scanTracked(row pgx.Row, extra ...any) (*TrackedPayment, error) {
	var tp TrackedPayment
	var state, status string
	var paid, pay, merchant *string
	var expired, next *time.Time
	var fs failScan
	dest := append([]any{&tp.OrderID, &tp.PaymentID, &state, &status, &paid, &pay, &tp.Currency, &tp.Network,
		&expired, &tp.NeedsAction, &tp.Anomaly, &tp.Note, &tp.Changes, &next, &tp.TrackedAt, &tp.UpdatedAt, &merchant}, fs.dest(&tp.LastFailure)...)
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	fs.done()
	tp.State, tp.Status = TrackState(state), cryptopay.PaymentStatus(status)
	var err error
	if tp.PaidAmount, err = nullDecimal(paid); err != nil {
		return nil, err
	}
	if tp.PayAmount, err = nullDecimal(pay); err != nil {
		return nil, err
	}
	if tp.MerchantAmount, err = nullDecimal(merchant); err != nil {
		return nil, err
	}
	if expired != nil {
		tp.ExpiredAt = *expired
	}
	if next != nil {
		tp.NextAt = *next
	}
	return &tp, nil
}

// errTrackLeaseLost: the payment's lease passed to another worker, which
// records instead; this one records nothing. (The tracker shares the
// payout queue's small helpers: setDefault, cmpOr, scrubText.)
var errTrackLeaseLost = errors.New("pgstore: tracked payment's lease lost")
