package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
)

// DefaultQueueTable is the table a Queue uses without QueueConfig.Table.
const DefaultQueueTable = "cryptopay_payout_intents"

// Defaults of QueueConfig.
const (
	// DefaultQueueLease is how long a worker holds an intent it claimed.
	DefaultQueueLease = 2 * time.Minute
	// DefaultQueueSendTimeout bounds one create request.
	DefaultQueueSendTimeout = 30 * time.Second
	// DefaultQueuePollInterval is how often an idle worker looks for due
	// intents.
	DefaultQueuePollInterval = time.Second
	// DefaultQueueFollowEvery is how often a created payout's status is
	// read until it is final (a webhook wired to PayoutChanged reads it at
	// once).
	DefaultQueueFollowEvery = 30 * time.Second
	// DefaultQueueBackoffMin and DefaultQueueBackoffMax bound the wait
	// between two reconciliations of a parked intent (doubling from the
	// first to the second), and between retries after a transient error.
	DefaultQueueBackoffMin = 10 * time.Second
	DefaultQueueBackoffMax = 10 * time.Minute
	// DefaultQueueConcurrency is how many intents one Run works on at once.
	DefaultQueueConcurrency = 16
	// DefaultQueueMaxAttempts is how many create requests the workers send
	// for one intent by themselves (see QueueConfig.MaxAttempts).
	DefaultQueueMaxAttempts = 3
	// DefaultQueueApprovals is how many distinct people must approve an
	// intent held for approval (see QueueConfig.Approvals): four eyes.
	DefaultQueueApprovals = 2
)

// Holds: why the workers will not send an intent again by themselves
// (Intent.Hold). Only an operator's Retry, after checking with the
// processor, sends it again; a payout the list finds by its orderId is
// still followed. (HoldUnsentListed, the books check's, is another kind:
// see its doc.)
const (
	// HoldServerActed: a create request was answered 2xx, but the answer
	// could not be matched to the request (unreadable, or naming another
	// orderId, or none). The server acted: something was created, perhaps
	// under an altered orderId that the payout list will never show, so a
	// "not created" verdict proves nothing. LastError records the ids the
	// answer named.
	HoldServerActed = "server_acted"
	// HoldMaxAttempts: QueueConfig.MaxAttempts create requests were sent
	// and the list still says "not created". A server that stores or
	// lists orderIds differently would otherwise be paid without bound.
	HoldMaxAttempts = "max_attempts"
)

// HoldUnsentListed, the books check's hold, is with the state machine
// (queue_states.go): the workers never claim an intent it holds.

// Errors of the queue; match them with errors.Is.
var (
	// ErrIntentConflict: an intent with this orderId exists with other
	// parameters. The existing intent is unchanged. See *IntentConflictError.
	ErrIntentConflict = errors.New("pgstore: payout intent exists with other parameters")
	// ErrIntentNotFound: no intent has this orderId.
	ErrIntentNotFound = errors.New("pgstore: no payout intent with this orderId")
	// ErrIntentState: the intent is not in a state the operation applies to
	// (Approve and Reject need StateNeedsApproval, Retry StateParked).
	ErrIntentState = errors.New("pgstore: payout intent is not in the required state")
	// ErrApprovalNotCounted: Approve by an actor whose approval cannot
	// count (they enqueued the intent, or approved it already). Nothing
	// changed.
	ErrApprovalNotCounted = errors.New("pgstore: this actor's approval does not count for this intent")
	// ErrUnsentButListed: the books check found a payout listed at the
	// provider under the intent's orderId, which the queue never sent, and
	// parked it (HoldUnsentListed): Approve, Retry and the other moves
	// refuse it, since sending it could pay twice, until an operator
	// releases or rejects it (the release and reject-listed moves) or
	// resolves it. Every such error matches ErrIntentState too. Nothing
	// changed.
	ErrUnsentButListed = errors.New("pgstore: the books check found a payout listed at the provider for this unsent intent")
)

// IntentConflictError is Enqueue's answer to an orderId already queued with
// other parameters. It matches ErrIntentConflict.
type IntentConflictError struct {
	// OrderID is the orderId enqueued twice.
	OrderID string
	// Field names the first parameter that differs.
	Field string
}

// Error names the orderId and the field, not the values.
func (e *IntentConflictError) Error() string {
	return fmt.Sprintf("pgstore: payout intent %q exists with a different %s", e.OrderID, e.Field)
}

// Is matches ErrIntentConflict.
func (e *IntentConflictError) Is(target error) bool { return target == ErrIntentConflict }

// Intent is a payout intent as the queue holds it.
type Intent struct {
	// Params are the create parameters, as enqueued.
	Params cryptopay.CreatePayoutParams
	// State is where the intent stands.
	State IntentState
	// Attempts counts the create requests committed (each is sent at most
	// once; a second one is made only after a "not created" verdict or an
	// operator's Retry).
	Attempts int
	// AttemptedAt is when the latest attempt was committed, just before
	// its request was sent (zero before the first).
	AttemptedAt time.Time
	// PayoutID is the payout's id when known (an answer to the create
	// request, or a webhook); empty when only the list found it.
	PayoutID string
	// PayoutStatus is the payout's latest known status.
	PayoutStatus cryptopay.PayoutStatus
	// Verdict is the latest reconciliation's verdict ("exists",
	// "not_created", "still_unknown"), or "" if none was needed.
	Verdict string
	// LastError is the latest error, in words (the SDK removes the API key
	// from its errors; the text is also capped at 1 KiB). Server text:
	// show it escaped.
	LastError string
	// LastFailure is the latest failed read, send or OnFinal of the
	// intent (a wrong API key, the API down, a callback that failed or
	// panicked); its Count is reset by the next change that succeeds.
	LastFailure Failure
	// Note is the operator's note from Approve, Reject or Retry.
	Note string
	// Hold says why the workers will not send the intent again by
	// themselves (HoldServerActed, HoldMaxAttempts, HoldUnsentListed; "" if nothing holds
	// it). Retry clears it; HoldUnsentListed only the release and
	// reject-listed moves or Resolve do.
	Hold string
	// CallbackDue: the intent is final but QueueConfig.OnFinal has not run
	// for it (the state was recorded by a process without OnFinal, an
	// operator's CLI say). A Run with OnFinal runs it, exactly once, in the
	// transaction that clears this.
	CallbackDue bool
	// ApprovedAt is when the intent had all the approvals it needs
	// (ApprovalsNeeded distinct actors, Approve); zero until then. A worker
	// sends an intent above its currency's Guardrails.ApprovalAbove only
	// once it is approved.
	ApprovedAt time.Time
	// EnqueuedBy is the actor who enqueued the intent (EnqueueBy; "" when
	// unknown). Their approval does not count. It and ApprovedBy are in
	// canonical form (CanonicalActor), whenever they were written.
	EnqueuedBy string
	// ApprovedBy lists the distinct actors who approved it, in order.
	ApprovedBy []string
	// ApprovedPrincipals lists who approved it as the database and the
	// tool established, in order: `login as database role "role"`
	// (Operator.Login, the session's session_user), one per approval
	// since principals are recorded (none for approvals made before).
	ApprovedPrincipals []string
	// ApprovalsNeeded is how many distinct actors must approve it: the
	// enqueuing Queue's QueueConfig.Approvals (an approving Queue with a
	// larger one raises it).
	ApprovalsNeeded int
	// NextAt is when a worker next looks at the intent (for an open state).
	NextAt time.Time
	// CreatedAt and UpdatedAt are the database's times of the enqueue and
	// of the latest change.
	CreatedAt, UpdatedAt time.Time
}

// Transition is one state change, as QueueConfig.Observer receives it.
type Transition struct {
	// OrderID names the intent.
	OrderID string
	// From and To are the states before and after ("" From: enqueued).
	From, To IntentState
	// Attempts is the intent's attempt count after the change.
	Attempts int
	// PayoutID is the payout's id when known (see Intent.PayoutID).
	PayoutID string
	// Verdict is the reconciliation's verdict, when one led here.
	Verdict string
	// Err is the error text recorded with the change, if any.
	Err string
}

// QueueConfig configures NewQueue. Pool is required, and Client for Run;
// every other field has a default.
type QueueConfig struct {
	// Pool is the merchant's database. The queue needs SELECT, INSERT and
	// UPDATE on its table (and CREATE with CreateTable).
	Pool *pgxpool.Pool
	// Client sends the payouts. Give it the API key of the account the
	// intents are paid from; every replica must use the same account.
	// Without it the queue can enqueue, read and move intents (Approve,
	// Reject, Retry: an operator's tool needs no API key) but not Run or
	// Resolve.
	Client *cryptopay.Client
	// Addresses checks each intent's wallet address at Enqueue and
	// EnqueueMany (CreatePayoutParams.ValidateWith); the zero value has the
	// built-in checks. Give it the Checker the Client has
	// (cryptopay.WithAddressChecker), so that an address the workers would
	// refuse is refused in the merchant's transaction instead.
	Addresses address.Checker
	// Table is the table ("name" or "schema.name"); default
	// DefaultQueueTable.
	Table string
	// CreateTable makes NewQueue create the table and its indexes if
	// missing (see Queue.DDL for the statements to run yourself).
	CreateTable bool
	// Lease is how long a worker holds an intent it claimed; another
	// replica takes it over only after that (default DefaultQueueLease).
	// It must exceed 2×SendTimeout plus the reconcile settle time: a worker
	// never starts a create request that could outlive its lease, so the
	// worker that takes over reconciles an attempt that has ended.
	Lease time.Duration
	// SendTimeout bounds one create request (default
	// DefaultQueueSendTimeout). A request that times out has an unknown
	// outcome and is reconciled.
	SendTimeout time.Duration
	// PollInterval is how often an idle worker looks for due intents
	// (default DefaultQueuePollInterval).
	PollInterval time.Duration
	// FollowEvery is how often a created payout's status is read until it
	// is final (default DefaultQueueFollowEvery).
	FollowEvery time.Duration
	// BackoffMin and BackoffMax bound the wait before a parked intent is
	// reconciled again, doubling each time (defaults DefaultQueueBackoffMin
	// and DefaultQueueBackoffMax).
	BackoffMin, BackoffMax time.Duration
	// ReconcileSettleTime and ReconcileClockSkew are passed to the
	// reconciliation (0: the SDK's defaults). The settle time must exceed
	// how long the API's payout list may lag behind creation: a shorter one
	// can call a created payout "not created" and pay it twice.
	ReconcileSettleTime, ReconcileClockSkew time.Duration
	// Concurrency is how many intents one Run works on at once (default
	// DefaultQueueConcurrency).
	Concurrency int
	// MaxAttempts bounds the create requests the workers send for one
	// intent by themselves (default DefaultQueueMaxAttempts): once an
	// intent has had that many and the list says "not created" again, it
	// is parked with HoldMaxAttempts for a person. An operator's Retry
	// sends one more.
	MaxAttempts int
	// OnFinal, if set, runs when an intent reaches a final state, inside
	// the transaction that records that state: its writes through tx and
	// the queue's record commit together, or neither does (then it runs
	// again later). A final state recorded by a process without OnFinal
	// (an operator's CLI, a worker without it) leaves the callback due
	// (Intent.CallbackDue): a Run with OnFinal claims it and runs OnFinal
	// exactly once, in the transaction that clears it. Run OnFinal in
	// every replica that runs the queue. It must do its effects through tx only, must not
	// commit or roll tx back, and must be quick: it holds the intent's row
	// lock. An error rolls the change back and the intent is retried with
	// backoff. Intent.State tells paid from failed, refused, rejected or
	// blocked: only StatePaid means money left.
	OnFinal func(ctx context.Context, tx pgx.Tx, in *Intent) error
	// Observer, if set, is called once for each state change, after it
	// is committed, on the goroutine that made it: keep it quick and never
	// block. A look that changes no state (a poll of a payout still
	// processing, a parked intent still undecided) is none. The enqueue
	// (From "") commits with the caller's transaction, which the queue
	// cannot see commit: it is reported by the process that first changes
	// the committed intent, just before that change's own transition (a
	// worker's first attempt or record, an operator's Approve or Reject,
	// the callback of an intent blocked at enqueue, which only a Run with
	// OnFinal makes); never for a transaction that rolled back. Observers
	// are per process: one that dies between a commit and its call loses
	// that call (History has every change). Entering
	// StateParked needs a person's attention. See the package
	// documentation for wiring it to OpenTelemetry.
	Observer func(Transition)
	// Guardrails are checked before each create request; all are off by
	// default.
	Guardrails Guardrails
	// Logger receives the workers' failures: a read or send that failed,
	// an error they cannot record (the database unreachable ...), a
	// callback that failed or panicked; one line per class of failure,
	// then at most one per window (1 minute, doubling to an hour) saying
	// how many were not logged. Default: warnings and errors as text to
	// standard error; pass slog.New(slog.DiscardHandler) for none.
	Logger *slog.Logger
	// Approvals is how many distinct actors must approve an intent held
	// for approval before it is sent (default DefaultQueueApprovals: four
	// eyes). The actor who enqueued it (EnqueueBy) does not count, and an
	// actor approving twice counts once. It is recorded with each intent at
	// enqueue; an approving Queue with a larger number raises it, never
	// lowers it, so an operator's tool cannot weaken the rule.
	Approvals int

	api payoutAPI // tests replace the SDK
}

// Queue is a durable payout queue in the merchant's PostgreSQL: intents are
// enqueued in the merchant's own transactions, and workers on any number of
// replicas send each one at most once per attempt, reconcile every unknown
// outcome before sending again, and follow each payout to its final status.
// Build it with NewQueue; safe for concurrent use.
type Queue struct {
	engine
	cfg  QueueConfig
	api  payoutAPI
	hist pgx.Identifier // the history table: the queue table's name + "_history"
	sql  queueSQL
	rec  recorder // batches the workers' records

	// hook is called at named points of the worker; tests use it to kill
	// the process there.
	hook func(point string)
}

// NewQueue checks cfg, fills in the defaults and returns a Queue; with
// CreateTable it creates the table first (or adds the columns an older
// version's table lacks). Without it NewQueue does not touch the
// database, so calling the CreateTable method next works too: the first
// Run, Enqueue, EnqueueMany, PayoutChanged, Get, List, Counts or Health
// checks the tables and columns (CheckSchema, one query, once) and returns
// a *SchemaError naming the table, the database and both fixes.
func NewQueue(ctx context.Context, cfg QueueConfig) (*Queue, error) {
	setDefault(&cfg.Lease, DefaultQueueLease)
	setDefault(&cfg.SendTimeout, DefaultQueueSendTimeout)
	setDefault(&cfg.PollInterval, DefaultQueuePollInterval)
	setDefault(&cfg.FollowEvery, DefaultQueueFollowEvery)
	setDefault(&cfg.BackoffMin, DefaultQueueBackoffMin)
	setDefault(&cfg.BackoffMax, DefaultQueueBackoffMax)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultQueueConcurrency
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultQueueMaxAttempts
	}
	if cfg.Approvals <= 0 {
		cfg.Approvals = DefaultQueueApprovals
	}
	q := &Queue{api: cfg.api, rec: newRecorder()}
	if err := q.init(engineConfig{config: "QueueConfig", pool: cfg.Pool, table: cmpOr(cfg.Table, DefaultQueueTable),
		logger: cfg.Logger, poll: cfg.PollInterval, ddl: q.DDL}); err != nil {
		return nil, err
	}
	settle := cmpOr(cfg.ReconcileSettleTime, cryptopay.DefaultReconcileSettleTime)
	switch {
	case cfg.Lease <= 2*cfg.SendTimeout+settle:
		return nil, fmt.Errorf("%w: Lease %v must exceed 2×SendTimeout (%v) plus the settle time (%v)", ErrInvalidOption, cfg.Lease, cfg.SendTimeout, settle)
	case cfg.BackoffMax < cfg.BackoffMin:
		return nil, fmt.Errorf("%w: BackoffMax %v is below BackoffMin %v", ErrInvalidOption, cfg.BackoffMax, cfg.BackoffMin)
	case cfg.ReconcileSettleTime < 0 || cfg.ReconcileClockSkew < 0:
		return nil, fmt.Errorf("%w: negative reconcile times", ErrInvalidOption)
	}
	if err := cfg.Guardrails.check(); err != nil { // fills in the guardrails' defaults
		return nil, err
	}
	q.cfg = cfg
	if q.api == nil && cfg.Client != nil {
		q.api = sdkAPI{c: cfg.Client, settle: cfg.ReconcileSettleTime, skew: cfg.ReconcileClockSkew}
	}
	q.hist = sibling(q.table, "_history")
	q.sql = buildQueueSQL(q.Table(), q.hist.Sanitize(), cfg.Lease.Milliseconds()/2)
	if cfg.CreateTable {
		if err := q.CreateTable(ctx); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// Table returns the queue's table name, quoted for SQL.
func (q *Queue) Table() string { return q.table.Sanitize() }

// DDL returns the statements that create the queue's table, its history
// table (the queue table's name + "_history"), the webhook refusals' table
// (+ "_webhook_refusals") and their indexes. Amounts are numeric (exact),
// never floating point.
func (q *Queue) DDL() string {
	table, hist := q.Table(), q.hist.Sanitize()
	return tableDDL(table, queueColumns) + addColumnsDDL(table, queueAdded...) + indexDDL(q.table, table, queueIndexes...) +
		tableDDL(hist, queueHistoryColumns) + addColumnsDDL(hist, "actor_id text NOT NULL DEFAULT ''") +
		indexDDL(q.table, hist, index{"_history_order_idx", "(order_id, id)"}) + failDDL(table) +
		tableDDL(q.refusals.table, refusalColumns)
}

// queueColumns are the queue table's columns.
const queueColumns = `    order_id            text        PRIMARY KEY,
    wallet_address      text        NOT NULL,
    network_fee_by_user boolean     NOT NULL,
    amount              numeric     NOT NULL CHECK (amount > 0),
    currency            text        NOT NULL,
    network             text        NOT NULL,
    customer_id         text        NOT NULL,
    customer_ip         text        NOT NULL,
    additional_data     text        NOT NULL,
    webhook_url         text        NOT NULL,
    state               text        NOT NULL,
    attempts            integer     NOT NULL DEFAULT 0,
    tries               integer     NOT NULL DEFAULT 0,
    attempted_at        timestamptz,
    reserved_at         timestamptz,
    next_at             timestamptz NOT NULL DEFAULT now(),
    lease_token         bytea,
    payout_id           text        NOT NULL DEFAULT '',
    payout_status       text        NOT NULL DEFAULT '',
    verdict             text        NOT NULL DEFAULT '',
    last_error          text        NOT NULL DEFAULT '',
    note                text        NOT NULL DEFAULT '',
    approved_at         timestamptz,
    hold                text        NOT NULL DEFAULT '',
    callback_due        boolean     NOT NULL DEFAULT false,
    enqueued_by         text        NOT NULL DEFAULT '',
    approved_by         text[]      NOT NULL DEFAULT '{}',
    approvals_needed    integer     NOT NULL DEFAULT 1,
    approved_principals text[]      NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()`

// queueAdded are the queue table's columns that its first version lacked.
var queueAdded = []string{
	"approved_at timestamptz",
	"hold text NOT NULL DEFAULT ''",
	"callback_due boolean NOT NULL DEFAULT false",
	"enqueued_by text NOT NULL DEFAULT ''",
	"approved_by text[] NOT NULL DEFAULT '{}'",
	"approvals_needed integer NOT NULL DEFAULT 1",
	"approved_principals text[] NOT NULL DEFAULT '{}'",
}

// queueIndexes are the queue table's indexes.
var queueIndexes = []index{
	{"_due_idx", "(next_at) WHERE state IN (" + openStatesSQL() + ")"},
	{"_state_idx", "(state, order_id)"},
	{"_velocity_idx", "(currency, reserved_at) WHERE reserved_at IS NOT NULL"},
	{"_callback_idx", "(next_at) WHERE callback_due"},
	{"_wallet_idx", "(wallet_address)"},
	{"_payout_idx", "(payout_id) WHERE payout_id <> ''"},
	{"_held_idx", "(order_id) WHERE hold <> ''"},
	// The List filters' (a page in orderId order within a currency or a
	// network; a range of enqueue times).
	{"_currency_idx", "(currency, order_id)"},
	{"_network_idx", "(network, order_id)"},
	{"_created_idx", "(created_at)"},
}

// queueHistoryColumns are the history table's columns.
const queueHistoryColumns = `    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id   text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text        NOT NULL,
    from_state text        NOT NULL,
    to_state   text        NOT NULL,
    attempts   integer     NOT NULL,
    verdict    text        NOT NULL,
    error      text        NOT NULL,
    note       text        NOT NULL,
    payout_id  text        NOT NULL,
    request_id text        NOT NULL,
    actor_id   text        NOT NULL DEFAULT ''`

// CreateTable creates the queue's table and indexes if they do not exist.
func (q *Queue) CreateTable(ctx context.Context) error {
	return createTable(ctx, q.cfg.Pool, q.table, q.DDL())
}

// CheckSchema checks, in one query, that the queue's tables exist with
// every column this version needs; it returns a *SchemaError (matching
// ErrSchema) if not. Once it succeeds it is free.
func (q *Queue) CheckSchema(ctx context.Context) error { return q.schema.check(ctx, q.cfg.Pool) }

// scanIntent reads one row of intentCols, then extra.
func scanIntent(row pgx.Row, extra ...any) (*Intent, error) {
	var in Intent
	var attempted, approved *time.Time
	var state, pstatus, amount string
	var fs failScan
	p := &in.Params
	dest := append([]any{&p.OrderID, &p.WalletAddress, &p.NetworkFeeByUser, &amount, &p.Currency, &p.Network,
		&p.CustomerID, &p.CustomerIP, &p.AdditionalData, &p.WebhookURL, &state, &in.Attempts, &attempted,
		&in.PayoutID, &pstatus, &in.Verdict, &in.LastError, &in.Note, &in.NextAt, &in.CreatedAt, &in.UpdatedAt, &approved, &in.Hold, &in.CallbackDue,
		&in.EnqueuedBy, &in.ApprovedBy, &in.ApprovalsNeeded, &in.ApprovedPrincipals},
		fs.dest(&in.LastFailure)...)
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	fs.done()
	in.State, in.PayoutStatus = IntentState(state), cryptopay.PayoutStatus(pstatus)
	var err error
	if p.Amount, err = decimal.NewFromString(amount); err != nil {
		return nil, fmt.Errorf("amount %q: %w", amount, err)
	}
	if attempted != nil {
		in.AttemptedAt = *attempted
	}
	if approved != nil {
		in.ApprovedAt = *approved
	}
	if len(in.ApprovedBy) == 0 {
		in.ApprovedBy = nil
	}
	if len(in.ApprovedPrincipals) == 0 {
		in.ApprovedPrincipals = nil
	}
	in.EnqueuedBy = actorKey(in.EnqueuedBy)
	for i, by := range in.ApprovedBy {
		in.ApprovedBy[i] = actorKey(by)
	}
	return &in, nil
}

// PayoutChanged tells the queue that a payout changed (call it from the
// webhook handler's OnPayout callback): the intent with its orderId, if it
// is being followed, is read again at once instead of at its next poll.
// The status is read from the API, never taken from the webhook. An intent
// whose payout the list found (it has no payout id: the list carries
// none) learns the id here, once the queue's own read of p.ID through the
// API (QueueConfig.Client) names the same orderId; a Queue without a
// Client only wakes it.
func (q *Queue) PayoutChanged(ctx context.Context, p *cryptopay.Payout) error {
	if p == nil || p.OrderID == "" {
		return nil
	}
	if err := q.CheckSchema(ctx); err != nil {
		return err
	}
	var noID bool
	err := q.cfg.Pool.QueryRow(ctx, q.sql.wakeOne, p.OrderID).Scan(&noID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: waking intent %q: %w", p.OrderID, err)
	}
	q.poke()
	if !noID || q.api == nil || p.ID == "" {
		return nil
	}
	got, err := q.api.get(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("pgstore: reading payout %q for intent %q: %w", p.ID, p.OrderID, err)
	}
	if got.ID != p.ID || got.OrderID != p.OrderID {
		return nil // the API does not confirm it: another order's payout
	}
	if _, err := q.cfg.Pool.Exec(ctx, q.sql.learnID, p.OrderID, noNUL(got.ID)); err != nil {
		return fmt.Errorf("pgstore: recording payout id for intent %q: %w", p.OrderID, err)
	}
	return nil
}

// observe tells the Observer of t, after its commit: a panic is
// recovered and counted (the change stays recorded).
func (q *Queue) observe(t Transition) {
	if q.cfg.Observer != nil {
		err := guard("Observer", func() error { q.cfg.Observer(t); return nil })
		q.watch.recovered(context.Background(), "observing a payout intent's change", t.OrderID, err)
	}
}
