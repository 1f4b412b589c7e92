package pgstore

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// The books check's configuration: BooksConfig, its defaults and the
// balance rules it takes (PayoutDebit, PayoutFees), and NewBooks, which
// checks it.

// DefaultBooksSettleTime is how long the books check lets the provider's
// side and the queue's disagree before it calls the difference drift
// rather than in flight (BooksConfig.SettleTime). It is longer than the
// queue's longest wait between two looks at an intent (DefaultQueueBackoffMax).
const DefaultBooksSettleTime = 30 * time.Minute

// DefaultBooksConcurrency is how many payments the books check reads at
// once (BooksConfig.Concurrency).
const DefaultBooksConcurrency = 8

// DefaultBooksBalanceTable is the books check's own table of balance
// snapshots (BooksConfig.BalanceTable).
const DefaultBooksBalanceTable = "cryptopay_books_balances"

// PayoutDebit says when the provider takes a payout from the balance. The
// API does not say: set what your provider does, or the balance is
// undecided.
type PayoutDebit int

const (
	// DebitUndecided: not set; balances are undecided rather than guessed.
	DebitUndecided PayoutDebit = iota
	// DebitAtCreate: the balance falls when the payout is created, and a
	// failed or cancelled payout gives it back.
	DebitAtCreate
	// DebitAtPaid: the balance falls when the payout is paid.
	DebitAtPaid
)

// PayoutFees says whether what a payout takes from the balance includes
// a fee beyond its amount, where the payout list gives no merchantAmount
// for it (a payout not paid yet): the list's merchantAmount, where given,
// is what the payout took, fees included, whatever this rule says.
type PayoutFees int

const (
	// FeesUndecided: not set; balances are undecided rather than guessed.
	FeesUndecided PayoutFees = iota
	// FeesExcluded: a payout takes its amount, exactly.
	FeesExcluded
	// FeesIncluded: a payout whose network fee the merchant bears
	// (NetworkFeeByUser false) takes its amount plus a fee the queue does
	// not record; until the list gives its merchantAmount, a balance lower
	// than expected is in flight, never guessed drift. A payout whose fee
	// the recipient bears takes its amount.
	FeesIncluded
)

// BooksConfig configures NewBooks. Queue or Tracker is required (the
// sections to check), and Client for Check (a Books without one can book
// adjustments: Adjust).
type BooksConfig struct {
	// Client reads the provider's side.
	Client *cryptopay.Client
	// Queue, if set, has its intents checked against the payout list.
	Queue *Queue
	// Tracker, if set, has its payments checked, each read again.
	Tracker *Tracker
	// SettleTime is how long the two sides may disagree as things in
	// progress do before the difference is drift (0:
	// DefaultBooksSettleTime).
	SettleTime time.Duration
	// Since limits the payments checked to those tracked or changed at or
	// after it (zero: every tracked payment). Payouts are always checked
	// whole: the list has no window.
	Since time.Time
	// LedgerSQL, if set, is the merchant's ledger: a query returning one
	// row per orderId, (order_id text, credited numeric), the sum the
	// merchant credited for the order's payment (rows of one orderId are
	// summed). It runs in the check's
	// read-only snapshot of each page of payments, joined to the
	// tracker's table; it is the merchant's own SQL, never built from
	// data. At most one of LedgerSQL and LedgerFunc.
	LedgerSQL string
	// LedgerFunc, if set, is the merchant's ledger as Go: the sum credited
	// for orderID (ok false: no entry), read through tx, the check's
	// read-only snapshot.
	LedgerFunc func(ctx context.Context, tx pgx.Tx, orderID string) (credited decimal.Decimal, ok bool, err error)
	// PayoutLedgerSQL, if set, is the payout side of the merchant's
	// ledger: a query returning (order_id text, booked numeric), what the
	// merchant booked for each payout (rows of one orderId are summed;
	// an orderId the queue does not know is BooksLedgerOnly), compared
	// with the queue's intents: a paid intent's amount, 0 for one final
	// and not paid (section "payout_ledger"). It runs in a read-only
	// snapshot of each page of intents; the merchant's own SQL, never built
	// from data. At most one of PayoutLedgerSQL and PayoutLedgerFunc; both
	// need Queue.
	PayoutLedgerSQL string
	// PayoutLedgerFunc, if set, is the payout ledger as Go: the sum booked
	// for orderID (ok false: no entry), read through tx, the check's
	// read-only snapshot.
	PayoutLedgerFunc func(ctx context.Context, tx pgx.Tx, orderID string) (booked decimal.Decimal, ok bool, err error)
	// ReportOnly: the check changes nothing in the queue. By default it
	// parks every intent it finds BooksUnsentButListed (or a double
	// payment the queue has not sent yet) with HoldUnsentListed, so that
	// no worker sends it and no one approves or retries it until an
	// operator has looked (docs/books.md); that needs UPDATE on the
	// queue's table and INSERT on its history. With ReportOnly (or a role
	// that may not write) it is only reported: then nothing stops the
	// workers from sending it, and paying it twice.
	ReportOnly bool
	// Refunds, if set, adds the refunds section: each refunded payment's
	// paid amount (its tracker's) against what its refunds' payouts paid
	// out, from the payout list the payouts section reads. Needs Queue,
	// the Refunds' own queue (its table).
	Refunds *Refunds
	// PageSize is the payout list's page size (0: 100).
	PageSize int
	// Concurrency is how many payments are read at once (0:
	// DefaultBooksConcurrency).
	Concurrency int
	// Balances adds the balance section: each currency and network rolled
	// forward from the last check's snapshot, stored in BalanceTable.
	// Needs Queue and Tracker, and PayoutDebit and PayoutFees set (else
	// each pair is undecided, never guessed).
	Balances bool
	// BalanceTable is the check's own table of snapshots ("name" or
	// "schema.name"; default DefaultBooksBalanceTable); CreateTable
	// creates it if missing (see BooksBalanceDDL).
	BalanceTable string
	CreateTable  bool
	// PayoutDebit and PayoutFees say when a payout takes from the balance
	// and whether a fee comes on top where the payout list gives no
	// merchantAmount (the API does not say).
	PayoutDebit PayoutDebit
	PayoutFees  PayoutFees
	// Progress, if set, is told how far each section is: done of total
	// (total 0: not known yet).
	Progress func(section string, done, total int)
}

// Books runs the books check. Build it with NewBooks; safe for
// concurrent use (each Check is independent).
type Books struct {
	cfg BooksConfig
	// scan, if set, reads the payout list instead of cfg.Client.ScanPayouts
	// (tests: a list as the pages prove it).
	scan func(context.Context, cryptopay.ScanPayoutsParams) iter.Seq2[cryptopay.PayoutListItem, error]
}

// NewBooks checks cfg and fills in the defaults.
func NewBooks(cfg BooksConfig) (*Books, error) {
	switch {
	case cfg.Queue == nil && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: BooksConfig needs a Queue, a Tracker or both", ErrInvalidOption)
	case cfg.LedgerSQL != "" && cfg.LedgerFunc != nil:
		return nil, fmt.Errorf("%w: BooksConfig takes LedgerSQL or LedgerFunc, not both", ErrInvalidOption)
	case (cfg.LedgerSQL != "" || cfg.LedgerFunc != nil) && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: a ledger is compared with the tracker's payments: set BooksConfig.Tracker", ErrInvalidOption)
	case cfg.PayoutLedgerSQL != "" && cfg.PayoutLedgerFunc != nil:
		return nil, fmt.Errorf("%w: BooksConfig takes PayoutLedgerSQL or PayoutLedgerFunc, not both", ErrInvalidOption)
	case (cfg.PayoutLedgerSQL != "" || cfg.PayoutLedgerFunc != nil) && cfg.Queue == nil:
		return nil, fmt.Errorf("%w: a payout ledger is compared with the queue's intents: set BooksConfig.Queue", ErrInvalidOption)
	case cfg.Refunds != nil && (cfg.Queue == nil || cfg.Queue.Table() != cfg.Refunds.cfg.Queue.Table()):
		return nil, fmt.Errorf("%w: the refunds section reads the refunds' payouts through their queue: set BooksConfig.Queue to it", ErrInvalidOption)
	case cfg.Balances && (cfg.Queue == nil || cfg.Tracker == nil):
		return nil, fmt.Errorf("%w: the balance section needs both BooksConfig.Queue and Tracker", ErrInvalidOption)
	case cfg.SettleTime < 0 || cfg.PageSize < 0 || cfg.Concurrency < 0:
		return nil, fmt.Errorf("%w: BooksConfig.SettleTime, PageSize and Concurrency must not be negative", ErrInvalidOption)
	}
	if _, err := parseTable(cmpOr(cfg.BalanceTable, DefaultBooksBalanceTable)); err != nil {
		return nil, err
	}
	setDefault(&cfg.SettleTime, DefaultBooksSettleTime)
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultBooksConcurrency
	}
	return &Books{cfg: cfg}, nil
}

// progress reports a section's progress, if anyone listens.
func (b *Books) progress(section string, done, total int) {
	if b.cfg.Progress != nil {
		b.cfg.Progress(section, done, total)
	}
}
