package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// DefaultRefundsTable is the table Refunds uses without
// RefundsConfig.Table; the running totals are Table + "_totals", the
// resolutions Table + "_resolutions".
const DefaultRefundsTable = "cryptopay_refunds"

// DefaultClaimFor is how long a refund waits for its customer's address
// (RefundParams.ClaimFor).
const DefaultClaimFor = 7 * 24 * time.Hour

// RefundRule says how a refund's amount is found.
type RefundRule string

// Refund rules.
const (
	// RefundExcess refunds the excess of an overpayment: paid amount minus
	// payAmount, less what the payment's refunds hold already.
	RefundExcess RefundRule = "excess"
	// RefundAllPaid refunds everything paid, less what the payment's
	// refunds hold already: for a paid_partial payment, one still expired
	// with money on it, or one paid late (a recorded change after
	// expiredAt raised its paid amount, expired-then-paid included).
	RefundAllPaid RefundRule = "all_paid"
	// RefundAmount refunds RefundParams.Amount.
	RefundAmount RefundRule = "amount"
)

// Errors of the refunds; match them with errors.Is.
var (
	// ErrRefundExceedsPaid: the refund would take the payment's refunds
	// above what it paid. See *RefundExceedsPaidError.
	ErrRefundExceedsPaid = errors.New("pgstore: refunds would exceed what the payment paid")
	// ErrNothingToRefund: the rule leaves nothing to refund (no excess,
	// nothing paid, or the payment's refunds hold it all already).
	ErrNothingToRefund = errors.New("pgstore: nothing left to refund under this rule")
	// ErrRefundRule: the rule does not apply to the payment's status (an
	// excess of a payment not overpaid, all that was paid of one paid in
	// time and in full).
	ErrRefundRule = errors.New("pgstore: the refund rule does not apply to this payment")
	// ErrRefundConflict: a refund with this idempotency key exists for
	// the payment with other parameters; it is unchanged.
	ErrRefundConflict = errors.New("pgstore: refund exists with other parameters")
	// ErrRefundNotFound: no refund has this id.
	ErrRefundNotFound = errors.New("pgstore: no refund with this id")
	// ErrClaimClosed: the refund's claim cannot be made: it was made
	// already (a reused link) or its time ran out. Nothing changed.
	ErrClaimClosed = errors.New("pgstore: the refund's claim is used or expired")
)

// RefundExceedsPaidError is the refusal of a refund above what the
// payment has left to refund. It matches ErrRefundExceedsPaid.
type RefundExceedsPaidError struct {
	// OrderID is the payment's orderId.
	OrderID string
	// Paid is what the payment paid; Held what its refunds hold already;
	// Asked the refund refused.
	Paid, Held, Asked decimal.Decimal
}

// Error names the payment and the three amounts.
func (e *RefundExceedsPaidError) Error() string {
	return fmt.Sprintf("pgstore: a refund of %s for %q would exceed what it paid: paid %s, refunds hold %s", e.Asked, e.OrderID, e.Paid, e.Held)
}

// Is matches ErrRefundExceedsPaid.
func (e *RefundExceedsPaidError) Is(target error) bool { return target == ErrRefundExceedsPaid }

// RefundsConfig configures NewRefunds. Queue and Tracker are required.
type RefundsConfig struct {
	// Queue receives the refunds' payout intents, held for approval (its
	// Approvals: four eyes). Its pool is the refunds' pool: the refunds'
	// tables, the queue's and the tracker's must be in one database.
	Queue *Queue
	// Tracker holds the payments refunded.
	Tracker *Tracker
	// Table is the refunds' table ("name" or "schema.name"); default
	// DefaultRefundsTable. The running totals are Table + "_totals", the
	// resolutions Table + "_resolutions".
	Table string
	// CreateTable makes NewRefunds create the tables if missing (see
	// Refunds.DDL).
	CreateTable bool
	// NetworkFeeByUser is every refund payout's NetworkFeeByUser: true,
	// the customer bears the network fee (it comes out of the refund);
	// false (the default), the merchant pays it on top.
	NetworkFeeByUser bool
	// WebhookURL is every refund payout's WebhookURL (empty: none sent).
	WebhookURL string
}

// Refunds makes refunds of tracked payments: each is a payout intent in
// the queue, in the payment's currency and network, held for approval, and
// the refunds of one payment never add up to more than it paid (a running
// total with a CHECK constraint, under a row lock, in the transaction that
// records the refund). Build it with NewRefunds; safe for concurrent use.
type Refunds struct {
	cfg    RefundsConfig
	table  pgx.Identifier
	totals pgx.Identifier
	res    pgx.Identifier
	schema schema
	sql    refundSQL
}

// NewRefunds checks cfg and returns Refunds; with CreateTable it creates
// the tables first. The queue's and the tracker's tables must exist.
func NewRefunds(ctx context.Context, cfg RefundsConfig) (*Refunds, error) {
	if cfg.Queue == nil || cfg.Tracker == nil {
		return nil, fmt.Errorf("%w: RefundsConfig needs Queue and Tracker", ErrInvalidOption)
	}
	table, err := parseTable(cmpOr(cfg.Table, DefaultRefundsTable))
	if err != nil {
		return nil, err
	}
	r := &Refunds{cfg: cfg, table: table, totals: sibling(table, "_totals"), res: sibling(table, "_resolutions")}
	r.schema = schema{pool: cfg.Queue.cfg.Pool, config: "RefundsConfig", ddl: r.DDL}
	r.sql = buildRefundSQL(r.table.Sanitize(), r.totals.Sanitize(), r.res.Sanitize(), cfg.Queue.Table(),
		cfg.Tracker.Table(), cfg.Tracker.history.Sanitize())
	if cfg.CreateTable {
		if err := r.CreateTable(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// DDL returns the statements that create the refunds' tables: the
// refunds, the running totals per payment (the CHECK that refunds never
// exceed what was paid) and the resolutions. Amounts are numeric (exact).
func (r *Refunds) DDL() string {
	t, tot, res := r.table.Sanitize(), r.totals.Sanitize(), r.res.Sanitize()
	return tableDDL(t, refundColumns) + indexDDL(r.table, t, index{"_order_idx", "(order_id, created_at)"}) +
		tableDDL(tot, refundTotalColumns) +
		tableDDL(res, resolutionColumns) + indexDDL(r.table, res, index{"_resolutions_order_idx", "(order_id, id)"})
}

// refundColumns are the refunds table's columns.
const refundColumns = `    id             text        PRIMARY KEY,
    order_id       text        NOT NULL,
    idem_key       text        NOT NULL,
    rule           text        NOT NULL,
    amount         numeric     NOT NULL CHECK (amount > 0),
    currency       text        NOT NULL,
    network        text        NOT NULL,
    wallet_address text        NOT NULL DEFAULT '',
    customer_id    text        NOT NULL,
    customer_ip    text        NOT NULL DEFAULT '',
    state          text        NOT NULL,
    claim_until    timestamptz,
    actor_id       text        NOT NULL,
    note           text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    claimed_at     timestamptz,
    UNIQUE (order_id, idem_key)`

// refundTotalColumns are the running totals' columns: one row per
// payment refunded, locked by every refund of it.
const refundTotalColumns = `    order_id   text        PRIMARY KEY,
    paid       numeric     NOT NULL DEFAULT 0,
    refunded   numeric     NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (refunded >= 0 AND refunded <= paid)`

// resolutionColumns are the resolutions table's columns. Only INSERT
// writes it: nothing updates or deletes a resolution.
const resolutionColumns = `    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id   text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('refunded', 'accepted', 'written_off')),
    refund_id  text        NOT NULL DEFAULT '',
    actor_id   text        NOT NULL,
    note       text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()`

// CreateTable creates the refunds' tables and indexes if they do not
// exist.
func (r *Refunds) CreateTable(ctx context.Context) error {
	return createTable(ctx, r.cfg.Queue.cfg.Pool, r.table, r.DDL())
}

// CheckSchema checks, in one query, that the refunds' tables exist with
// every column this version needs (a *SchemaError if not).
func (r *Refunds) CheckSchema(ctx context.Context) error {
	return r.schema.check(ctx, r.cfg.Queue.cfg.Pool)
}

// RefundParams are a refund's parameters (Refunds.Create).
type RefundParams struct {
	// OrderID is the tracked payment's orderId; required.
	OrderID string
	// Key is the idempotency key, required (an identifier of at most 128
	// bytes): a request retried with the same key, by any operator or
	// replica, returns the same refund and creates nothing.
	Key string
	// Rule says how the amount is found; required.
	Rule RefundRule
	// Amount is the amount, for RefundAmount only (> 0, the currency's
	// places at most).
	Amount decimal.Decimal
	// WalletAddress, if known, is checked for the payment's network and
	// the payout intent is enqueued at once; empty, the refund awaits the
	// customer's claim (send them the claim link: package pgstore/claim).
	WalletAddress string
	// CustomerID identifies the customer (the payout's customerId);
	// required.
	CustomerID string
	// CustomerIP is the payout's customerIp, required with WalletAddress;
	// a claim records the claiming request's address instead.
	CustomerIP string
	// ClaimFor is how long a claim stays open (default DefaultClaimFor).
	ClaimFor time.Duration
	// Actor is who asks for the refund (an identifier); required. Four
	// eyes: their approval of its payout does not count.
	Actor string
	// Note says why (one line, at most 1024 bytes).
	Note string
}

// Refund is a refund as Refunds holds it.
type Refund struct {
	// ID is the refund's id and its payout intent's orderId.
	ID string
	// OrderID is the refunded payment's orderId; Key the idempotency key.
	OrderID, Key string
	// Rule is how Amount was found.
	Rule RefundRule
	// Amount is the refund, in Currency on Network (the payment's).
	Amount            decimal.Decimal
	Currency, Network string
	// WalletAddress is where it goes ("" until claimed).
	WalletAddress string
	// CustomerID and CustomerIP are the payout's.
	CustomerID, CustomerIP string
	// State is RefundAwaitingClaim or RefundEnqueued.
	State RefundState
	// ClaimUntil is when an unclaimed refund's claim closes (zero for one
	// created with its address).
	ClaimUntil time.Time
	// ActorID and Note are who asked for it and why.
	ActorID, Note string
	// CreatedAt and ClaimedAt are the database's times (ClaimedAt zero
	// until claimed, or for one created with its address).
	CreatedAt, ClaimedAt time.Time
	// PayoutState is its payout intent's state ("" before it is enqueued)
	// and PayoutStatus the payout's latest known status.
	PayoutState  IntentState
	PayoutStatus cryptopay.PayoutStatus
}

// Holds reports whether the refund counts against what its payment may
// still refund: not once its payout ended without paying (failed,
// refused, rejected, blocked), nor once an unclaimed claim closed at now.
func (f *Refund) Holds(now time.Time) bool {
	switch f.PayoutState {
	case StateFailed, StateRefused, StateRejected, StateBlocked:
		return false
	}
	return f.State != RefundAwaitingClaim || now.Before(f.ClaimUntil)
}

// RefundID is the id (and payout orderId) of the refund of orderID's
// payment with idempotency key: the same for every retry of the request.
func RefundID(orderID, key string) string {
	sum := sha256.Sum256([]byte(orderID + "\x00" + key))
	return "refund-" + hex.EncodeToString(sum[:16])
}

// Create records a refund of p.OrderID's tracked payment, in one
// transaction: it locks the payment's running total, finds the amount by
// p.Rule, refuses it if the payment's refunds would then hold more than
// it paid (a *RefundExceedsPaidError; the database's CHECK refuses it
// too), and, with p.WalletAddress, enqueues its payout intent held for
// approval. A retry with p.Key returns the refund made first (created
// false), or ErrRefundConflict if its parameters differ. Errors:
// ErrNotTracked, ErrRefundRule, ErrNothingToRefund, a
// *cryptopay.ValidationError for a bad parameter or address. Do not call
// it from TrackerConfig.OnChange: it reads the payment under a lock that
// OnChange's transaction holds.
func (r *Refunds) Create(ctx context.Context, p RefundParams) (f *Refund, created bool, err error) {
	return r.createThen(ctx, p, nil)
}

// createThen is Create, running then (if not nil) with the refund in its
// transaction: an error of then undoes the refund.
func (r *Refunds) createThen(ctx context.Context, p RefundParams, then func(tx pgx.Tx, f *Refund, created bool) error) (f *Refund, created bool, err error) {
	if err := p.check(); err != nil {
		return nil, false, err
	}
	if err := r.CheckSchema(ctx); err != nil {
		return nil, false, err
	}
	err = pgx.BeginFunc(ctx, r.cfg.Queue.cfg.Pool, func(tx pgx.Tx) error {
		if f, created, err = r.create(ctx, tx, p); err != nil || then == nil {
			return err
		}
		return then(tx, f, created)
	})
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23514" && pe.TableName == r.totals[len(r.totals)-1] {
		// check_violation of the running total: the database's backstop
		return nil, false, fmt.Errorf("%w: %q (the database's check)", ErrRefundExceedsPaid, p.OrderID)
	}
	if err != nil {
		return nil, false, err
	}
	return f, created, nil
}

// check refuses parameters that are not well formed, before any query,
// and puts p.Actor in its canonical form (CanonicalActor).
func (p *RefundParams) check() error {
	for _, c := range []struct{ field, v string }{{"OrderID", p.OrderID}, {"Key", p.Key}, {"CustomerID", p.CustomerID}} {
		if why := ids.Text(c.v, 128); why != "" || c.v == "" {
			return &cryptopay.ValidationError{Field: c.field, Reason: cmpOr(why, "is required")}
		}
	}
	actor, err := CanonicalActor(p.Actor)
	if err != nil {
		return err
	}
	p.Actor = actor // recorded, and compared by four eyes, in its canonical form
	if why := ids.Text(p.Note, maxErrorText); why != "" {
		return &cryptopay.ValidationError{Field: "Note", Reason: why}
	}
	switch p.Rule {
	case RefundExcess, RefundAllPaid:
		if !p.Amount.IsZero() {
			return &cryptopay.ValidationError{Field: "Amount", Reason: "is given only with RefundAmount"}
		}
	case RefundAmount:
		if !p.Amount.IsPositive() {
			return &cryptopay.ValidationError{Field: "Amount", Reason: "must be greater than 0"}
		}
	default:
		return &cryptopay.ValidationError{Field: "Rule", Reason: fmt.Sprintf("%q is not a refund rule", p.Rule)}
	}
	if p.ClaimFor < 0 {
		return &cryptopay.ValidationError{Field: "ClaimFor", Reason: "is negative"}
	}
	if p.WalletAddress != "" && p.CustomerIP == "" {
		return &cryptopay.ValidationError{Field: "CustomerIP", Reason: "is required with WalletAddress"}
	}
	return nil
}

// paymentForRefund is what Create reads of the payment, under its lock.
type paymentForRefund struct {
	status            cryptopay.PaymentStatus
	paid, pay         decimal.NullDecimal
	currency, network string
	late              bool
}

// create is Create in tx.
func (r *Refunds) create(ctx context.Context, tx pgx.Tx, p RefundParams) (*Refund, bool, error) {
	// The lock: every refund of the payment, on any replica, waits here
	// for the one before it to commit or roll back.
	if _, err := tx.Exec(ctx, r.sql.lockTotal, p.OrderID); err != nil {
		return nil, false, fmt.Errorf("pgstore: refund of %q: locking its total: %w", p.OrderID, err)
	}
	id := RefundID(p.OrderID, p.Key)
	prev, err := scanRefund(tx.QueryRow(ctx, r.sql.get, id))
	switch {
	case err == nil:
		if f := refundDiffers(prev, p); f != "" {
			return nil, false, fmt.Errorf("%w: key %q of %q differs in %s", ErrRefundConflict, p.Key, p.OrderID, f)
		}
		return prev, false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, false, fmt.Errorf("pgstore: refund of %q: %w", p.OrderID, err)
	}
	pay, amount, err := r.amountFor(ctx, tx, p)
	if err != nil {
		return nil, false, err
	}
	params := r.payoutParams(Refund{ID: id, OrderID: p.OrderID, Amount: amount, Currency: pay.currency, Network: pay.network,
		CustomerID: p.CustomerID}, p.WalletAddress, p.CustomerIP)
	if err := r.checkPayout(params, pay.network); err != nil {
		return nil, false, err
	}
	state, claimFor := RefundEnqueued, time.Duration(0)
	if p.WalletAddress == "" {
		state, claimFor = RefundAwaitingClaim, cmpOr(p.ClaimFor, DefaultClaimFor)
	}
	f, err := scanRefund(tx.QueryRow(ctx, r.sql.insert, namedArgs{"id": id, "order_id": p.OrderID, "key": p.Key,
		"rule": string(p.Rule), "amount": amount.String(), "currency": pay.currency, "network": pay.network,
		"wallet": p.WalletAddress, "customer_id": p.CustomerID, "customer_ip": p.CustomerIP, "state": string(state),
		"claim_us": claimFor.Microseconds(), "actor": p.Actor, "note": scrubText(p.Note)}))
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: refund of %q: recording it: %w", p.OrderID, err)
	}
	// The running total, summed by the database with this refund in it:
	// its CHECK refuses a total above what the payment paid.
	if _, err := tx.Exec(ctx, r.sql.setTotal, p.OrderID); err != nil {
		return nil, false, err
	}
	if state == RefundEnqueued {
		if _, err := r.cfg.Queue.enqueue(ctx, tx, p.Actor, true, []cryptopay.CreatePayoutParams{params}); err != nil {
			return nil, false, err
		}
		f.PayoutState = StateNeedsApproval
	}
	return f, true, nil
}

// amountFor reads the payment refunded (locked) and what its other
// refunds hold, and returns the amount p's rule gives.
func (r *Refunds) amountFor(ctx context.Context, tx pgx.Tx, p RefundParams) (*paymentForRefund, decimal.Decimal, error) {
	pay, err := r.readPayment(ctx, tx, p.OrderID)
	if err != nil {
		return nil, decimal.Decimal{}, err
	}
	var heldText string
	if err := tx.QueryRow(ctx, r.sql.held, p.OrderID).Scan(&heldText); err != nil {
		return nil, decimal.Decimal{}, fmt.Errorf("pgstore: refund of %q: summing its refunds: %w", p.OrderID, err)
	}
	held, err := decimal.NewFromString(heldText)
	if err != nil {
		return nil, decimal.Decimal{}, fmt.Errorf("pgstore: refund of %q: %w", p.OrderID, err)
	}
	amount, err := refundAmount(p, pay, held)
	return pay, amount, err
}

// payoutParams is the payout of refund f to wallet: its orderId is the
// refund's id, in the payment's currency and network, the network fee
// borne as RefundsConfig says.
func (r *Refunds) payoutParams(f Refund, wallet, customerIP string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{WalletAddress: wallet, NetworkFeeByUser: r.cfg.NetworkFeeByUser,
		Amount: f.Amount, Currency: f.Currency, Network: f.Network, CustomerID: f.CustomerID, CustomerIP: customerIP,
		OrderID: f.ID, AdditionalData: "refund of order " + f.OrderID, WebhookURL: r.cfg.WebhookURL}
}

// checkPayout checks the refund's payout before anything is recorded.
// Without a wallet, the claim checks the address and records the IP; the
// rest is checked now, so a claim cannot fail on the amount or the keys.
func (r *Refunds) checkPayout(params cryptopay.CreatePayoutParams, network string) error {
	if params.WalletAddress != "" {
		return params.ValidateWith(r.cfg.Queue.cfg.Addresses)
	}
	later := params
	later.WalletAddress, later.CustomerIP = "claim", "claim"
	return later.ValidateWith(address.Checker{}.With(network, func(string) error { return nil }))
}

// readPayment reads the payment refunded, locked against a change of its
// paid amount until the refund commits.
func (r *Refunds) readPayment(ctx context.Context, tx pgx.Tx, orderID string) (*paymentForRefund, error) {
	var pay paymentForRefund
	var status string
	var paid, payAmount *string
	err := tx.QueryRow(ctx, r.sql.payment, orderID).Scan(&status, &paid, &payAmount, &pay.currency, &pay.network, &pay.late)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrNotTracked, orderID)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: refund of %q: reading the payment: %w", orderID, err)
	}
	pay.status = cryptopay.PaymentStatus(status)
	if pay.paid, err = nullDecimal(paid); err == nil {
		pay.pay, err = nullDecimal(payAmount)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: refund of %q: %w", orderID, err)
	}
	return &pay, nil
}

// refundAmount is the refund p asks for, given the payment and what its
// refunds hold already.
func refundAmount(p RefundParams, pay *paymentForRefund, held decimal.Decimal) (decimal.Decimal, error) {
	paid := paidOrZero(pay.paid)
	left := paid.Sub(held)
	switch p.Rule {
	case RefundAmount:
		if p.Amount.GreaterThan(left) {
			return decimal.Zero, &RefundExceedsPaidError{OrderID: p.OrderID, Paid: paid, Held: held, Asked: p.Amount}
		}
		return p.Amount, nil
	case RefundExcess:
		if !pay.pay.Valid || !paid.GreaterThan(pay.pay.Decimal) {
			return decimal.Zero, fmt.Errorf("%w: %q paid %s of %s (status %s): no excess", ErrRefundRule, p.OrderID, paid,
				pay.pay.Decimal, pay.status)
		}
		left = decimal.Min(left, paid.Sub(pay.pay.Decimal).Sub(held))
	case RefundAllPaid:
		switch {
		case pay.status == cryptopay.PaymentPaidPartial, pay.status == cryptopay.PaymentExpired, pay.late:
		default:
			return decimal.Zero, fmt.Errorf("%w: %q is %s and was paid in time: refund an amount instead", ErrRefundRule,
				p.OrderID, pay.status)
		}
	}
	if !left.IsPositive() {
		return decimal.Zero, fmt.Errorf("%w: %q paid %s, its refunds hold %s", ErrNothingToRefund, p.OrderID, paid, held)
	}
	return left, nil
}

// refundDiffers names the first parameter in which p differs from the
// refund made with its key ("" if none).
func refundDiffers(f *Refund, p RefundParams) string {
	switch {
	case f.Rule != p.Rule:
		return "Rule"
	case p.Rule == RefundAmount && !f.Amount.Equal(p.Amount):
		return "Amount"
	case p.WalletAddress != "" && f.WalletAddress != p.WalletAddress,
		p.WalletAddress == "" && f.State != RefundAwaitingClaim && f.ClaimUntil.IsZero():
		return "WalletAddress"
	case f.CustomerID != p.CustomerID:
		return "CustomerID"
	}
	return ""
}

// Get returns the refund id with its payout's state, or an error matching
// ErrRefundNotFound.
func (r *Refunds) Get(ctx context.Context, id string) (*Refund, error) {
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	return getRow(ctx, r.cfg.Queue.cfg.Pool, "refund", r.sql.get, id, scanRefund, ErrRefundNotFound)
}

// List returns the refunds of orderID's payment, oldest first.
func (r *Refunds) List(ctx context.Context, orderID string) ([]Refund, error) {
	if err := r.CheckSchema(ctx); err != nil {
		return nil, err
	}
	return listRows(ctx, r.cfg.Queue.cfg.Pool, "refunds", r.sql.list, scanRefund, orderID)
}

// Claim gives an unclaimed refund its customer's address and enqueues its
// payout intent held for approval, enqueued in the name of the actor who
// asked for the refund (so that the asker's own approval never counts,
// whoever claims), in one transaction that only a refund still RefundAwaitingClaim before
// its ClaimUntil passes: a second claim, or one too late, is
// ErrClaimClosed and changes nothing. The address is checked offline for
// the refund's network (the Queue's Addresses) before anything is
// written: a *cryptopay.ValidationError (Field "WalletAddress") if
// invalid. customerIP is the claiming request's address.
func (r *Refunds) Claim(ctx context.Context, id, walletAddress, customerIP string) (*Refund, error) {
	f, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.State != RefundAwaitingClaim {
		return nil, fmt.Errorf("%w: %q was claimed already", ErrClaimClosed, id)
	}
	params := r.payoutParams(*f, walletAddress, customerIP)
	if err := params.ValidateWith(r.cfg.Queue.cfg.Addresses); err != nil { // an empty address too
		return nil, err
	}
	err = pgx.BeginFunc(ctx, r.cfg.Queue.cfg.Pool, func(tx pgx.Tx) error {
		// The payment's lock first: a refund that counted this claim out
		// as closed commits before it, and it then finds it closed.
		if _, err := tx.Exec(ctx, r.sql.lockTotal, f.OrderID); err != nil {
			return fmt.Errorf("pgstore: claiming refund %q: %w", id, err)
		}
		var err error
		f, err = scanRefund(tx.QueryRow(ctx, r.sql.claim, id, walletAddress, customerIP))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q was claimed already or its claim closed", ErrClaimClosed, id)
		}
		if err != nil {
			return fmt.Errorf("pgstore: claiming refund %q: %w", id, err)
		}
		// Enqueued by the asker: four eyes then hold against the one
		// who asked, as for a refund given its wallet at once.
		_, err = r.cfg.Queue.enqueue(ctx, tx, f.ActorID, true, []cryptopay.CreatePayoutParams{params})
		return err
	})
	if err != nil {
		return nil, err
	}
	f.PayoutState = StateNeedsApproval
	return f, nil
}

// scanRefund reads one row of refundCols, then extra.
func scanRefund(row pgx.Row, extra ...any) (*Refund, error) {
	var f Refund
	var rule, state, amount string
	var until, claimed *time.Time
	var pstate, pstatus *string
	dest := []any{&f.ID, &f.OrderID, &f.Key, &rule, &amount, &f.Currency, &f.Network, &f.WalletAddress, &f.CustomerID,
		&f.CustomerIP, &state, &until, &f.ActorID, &f.Note, &f.CreatedAt, &claimed, &pstate, &pstatus}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	f.Rule, f.State = RefundRule(rule), RefundState(state)
	var err error
	if f.Amount, err = decimal.NewFromString(amount); err != nil {
		return nil, fmt.Errorf("amount %q: %w", amount, err)
	}
	if until != nil {
		f.ClaimUntil = *until
	}
	if claimed != nil {
		f.ClaimedAt = *claimed
	}
	if pstate != nil {
		f.PayoutState, f.PayoutStatus = IntentState(*pstate), cryptopay.PayoutStatus(*pstatus)
	}
	return &f, nil
}
