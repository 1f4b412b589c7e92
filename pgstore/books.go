package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// The books check: the merchant's records (the payout queue's intents,
// the tracker's payments, the merchant's own ledger) against the
// provider's (the payout list, each payment's status), every difference
// named with its exact amount. See docs/books.md.

// DefaultBooksSettleTime is how long the books check lets the provider's
// side and the queue's disagree before it calls the difference drift
// rather than in flight (BooksConfig.SettleTime). It is longer than the
// queue's longest wait between two looks at an intent (DefaultQueueBackoffMax).
const DefaultBooksSettleTime = 30 * time.Minute

// DefaultBooksConcurrency is how many payments the books check reads at
// once (BooksConfig.Concurrency).
const DefaultBooksConcurrency = 8

// BooksClass is what the books check concluded about one item.
type BooksClass string

// The classes of the books check, the drifts first. docs/books.md says
// what to do about each.
const (
	// BooksDoublePayment: more than one payout at the provider for one
	// orderId. Always drift; the first lines of the report.
	BooksDoublePayment BooksClass = "double_payment"
	// BooksPayoutDiffers: the provider's payout has another amount,
	// currency, network or wallet than the queue's intent.
	BooksPayoutDiffers BooksClass = "payout_differs"
	// BooksStatusDiffers: one side is final and the other is not, past the
	// settle time; or both are final with different outcomes; or the
	// provider lists a payout for an intent the queue says was never sent
	// (refused, rejected, blocked).
	BooksStatusDiffers BooksClass = "status_differs"
	// BooksProviderOnly: a payout at the provider whose orderId no intent
	// has: created outside the queue.
	BooksProviderOnly BooksClass = "provider_only"
	// BooksMissing: the queue holds the intent as created or paid, but the
	// provider does not list it, past the settle time.
	BooksMissing BooksClass = "missing_at_provider"
	// BooksTrackerDiffers: the tracker's recorded status or paid amount is
	// not what the provider says now, past the settle time.
	BooksTrackerDiffers BooksClass = "tracker_differs"
	// BooksCreditDiffers: what the tracker's history credited (the sum of
	// ToPaid - FromPaid) is not the provider's paid amount, past the
	// settle time.
	BooksCreditDiffers BooksClass = "credit_differs"
	// BooksLedgerDiffers: the merchant's own ledger (BooksConfig.LedgerSQL
	// or LedgerFunc) holds another sum than the tracker credited: an
	// OnChange that booked twice, or missed a change.
	BooksLedgerDiffers BooksClass = "ledger_differs"
	// BooksBalanceDrift: the provider's balance of a currency and network
	// is not the last check's snapshot + what payments brought in (their
	// merchantAmount) - what payouts took out, beyond what is in flight.
	BooksBalanceDrift BooksClass = "balance_drift"
	// BooksOpening: the first check of a currency and network: the
	// provider's balance is recorded as the opening balance. Not drift.
	BooksOpening BooksClass = "opening_balance"
	// BooksUndecided: the check could not decide (the payment could not be
	// read, its id is not known yet, a status the SDK does not know).
	BooksUndecided BooksClass = "undecided"
	// BooksInFlight: the two sides differ, but only as things in progress
	// do (within the settle time, or neither side final). Never drift.
	BooksInFlight BooksClass = "in_flight"
	// BooksMatched: both sides agree.
	BooksMatched BooksClass = "matched"
)

// IsDrift reports whether the class is a difference in the books (not
// matched, in flight or undecided).
func (c BooksClass) IsDrift() bool {
	switch c {
	case BooksMatched, BooksInFlight, BooksUndecided, BooksOpening:
		return false
	}
	return true
}

// BooksItem is one line of the books check: one orderId of one section,
// both sides' values and the class. Amounts are exact. Status, wallet and
// Detail text come partly from the provider: show it escaped.
type BooksItem struct {
	// Section is "payouts", "payments" or "balances".
	Section string
	// OrderID is the merchant's orderId ("" for a provider payout
	// without one, and for a balance: see Currency and Network).
	OrderID string
	// Class is what the check concluded.
	Class BooksClass
	// Ours and Theirs are the amounts on each side (invalid: that side
	// has none): the intent's amount and the provider's payout amount (the
	// sum, for a double payment); the credited sum and the provider's
	// paid amount; the expected balance and the provider's.
	Ours, Theirs decimal.NullDecimal
	// Delta is Theirs - Ours (a missing side counts 0); for
	// BooksLedgerDiffers, the ledger's sum - the credited sum.
	Delta decimal.Decimal
	// Ledger is the merchant's ledger sum for the order (invalid: no
	// ledger given, or no entry).
	Ledger decimal.NullDecimal
	// OurStatus and TheirStatus are the queue's state or the tracker's
	// status, and the provider's status.
	OurStatus, TheirStatus string
	// Currency and Network are the provider's, else ours.
	Currency, Network string
	// OurWallet and TheirWallet are the payout's wallet on each side.
	OurWallet, TheirWallet string
	// Payouts is how many payouts the provider lists for the orderId.
	Payouts int
	// Detail says why, in words.
	Detail string
}

// BooksConfig configures NewBooks. Client is required, and Queue or
// Tracker (the sections to check).
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
	// and whether a fee comes on top (the API does not say).
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
}

// NewBooks checks cfg and fills in the defaults.
func NewBooks(cfg BooksConfig) (*Books, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("%w: BooksConfig.Client is nil", ErrInvalidOption)
	case cfg.Queue == nil && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: BooksConfig needs a Queue, a Tracker or both", ErrInvalidOption)
	case cfg.LedgerSQL != "" && cfg.LedgerFunc != nil:
		return nil, fmt.Errorf("%w: BooksConfig takes LedgerSQL or LedgerFunc, not both", ErrInvalidOption)
	case (cfg.LedgerSQL != "" || cfg.LedgerFunc != nil) && cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: a ledger is compared with the tracker's payments: set BooksConfig.Tracker", ErrInvalidOption)
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

// BooksSummary is what one Check found, counted per section and class.
type BooksSummary struct {
	// Counts holds, per section ("payouts", "payments"), how many items
	// fell in each class.
	Counts map[string]map[BooksClass]int
	// Drift is how many items are drift; InFlight and Undecided count the
	// others that are not matched.
	Drift, InFlight, Undecided int
	// DriftAmount sums, per currency and network ("usdt/tron"), the
	// deltas of the drift items.
	DriftAmount map[string]decimal.Decimal
	// Unfinished says, per section, why it could not be checked to its end
	// (the API could not be read, the payout list changed under the
	// check); its items are then not all there. Server text: show it
	// escaped.
	Unfinished map[string]string
}

// Clean reports whether the books tie: no drift, nothing undecided, every
// section finished.
func (s *BooksSummary) Clean() bool {
	return s.Drift == 0 && s.Undecided == 0 && len(s.Unfinished) == 0
}

func (s *BooksSummary) add(it *BooksItem) {
	if s.Counts[it.Section] == nil {
		s.Counts[it.Section] = make(map[BooksClass]int)
	}
	s.Counts[it.Section][it.Class]++
	switch {
	case it.Class.IsDrift():
		s.Drift++
		key := it.Currency + "/" + it.Network
		s.DriftAmount[key] = s.DriftAmount[key].Add(it.Delta)
	case it.Class == BooksInFlight:
		s.InFlight++
	case it.Class == BooksUndecided:
		s.Undecided++
	}
}

// Check compares the books and hands every item to emit as it is found,
// the payouts first (the double payments first among them), then the
// payments, then the balances (with BooksConfig.Balances; their snapshot
// is stored at the end); an error from emit stops the check and is returned. A section
// that cannot be finished is named in the summary's Unfinished, and the
// check goes on with the next. It returns ctx's error if ctx ends. A
// stopped check still returns its summary so far, with the section it
// stopped in named in Unfinished: drift found before the stop is drift.
//
// It reads the whole payout list once (ScanPayouts: the list's pages) and
// each tracked payment in the window once (GetPayment): nothing else
// at the API. Memory stays bounded whatever the sizes: the list streams
// into a temporary table (the check needs the TEMPORARY privilege on the
// database) and is matched there, and payments are read a page at a time.
func (b *Books) Check(ctx context.Context, emit func(BooksItem) error) (*BooksSummary, error) {
	sum := &BooksSummary{Counts: make(map[string]map[BooksClass]int), DriftAmount: make(map[string]decimal.Decimal),
		Unfinished: make(map[string]string)}
	out := func(it BooksItem) error {
		sum.add(&it)
		return emit(it)
	}
	var bal *balanceRun
	if b.cfg.Balances {
		var err error
		if bal, err = b.balanceStart(ctx); err != nil {
			sum.Unfinished["balances"] = scrubText(err.Error())
			bal = nil
		}
	}
	sections := []struct {
		name string
		run  func(context.Context, func(BooksItem) error) (string, error)
	}{
		{"payouts", b.checkPayouts},
		{"payments", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			return b.checkPayments(ctx, out, bal)
		}},
		{"balances", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			if bal == nil {
				return "", nil
			}
			return b.balanceFinish(ctx, bal, out)
		}},
	}
	for _, s := range sections {
		why, err := s.run(ctx, out)
		if err != nil {
			// Stopped: the summary so far, this section unfinished.
			sum.Unfinished[s.name] = scrubText("stopped: " + err.Error())
			return sum, err
		}
		if why != "" {
			sum.Unfinished[s.name] = scrubText(why)
		}
	}
	return sum, ctx.Err()
}

// progress reports a section's progress, if anyone listens.
func (b *Books) progress(section string, done, total int) {
	if b.cfg.Progress != nil {
		b.cfg.Progress(section, done, total)
	}
}
