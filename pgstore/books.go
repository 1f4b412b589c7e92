package pgstore

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"
)

// The books check: the merchant's records (the payout queue's intents,
// the tracker's payments, the merchant's own ledger) against the
// provider's (the payout list, each payment's status), every difference
// named with its exact amount. See docs/books.md.

// booksSection is one section of the check: run emits its items and says
// why it could not finish ("": it did).
type booksSection struct {
	name string
	run  func(context.Context, func(BooksItem) error) (why string, err error)
}

// sections are the check's sections, in the report's order.
func (b *Books) sections(bal *balanceRun, sum *BooksSummary) []booksSection {
	// The refunds are tied in the payouts section's transaction, on the
	// list it read; it says here why they could not be.
	refundsWhy := ""
	if b.cfg.Refunds != nil {
		refundsWhy = "the payout list was not read to its end and proven whole (see the payouts section)"
	}
	return []booksSection{
		{"payouts", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			return b.checkPayouts(ctx, out, bal, &refundsWhy)
		}},
		{"refunds", func(context.Context, func(BooksItem) error) (string, error) { return refundsWhy, nil }},
		{"payout_ledger", b.checkPayoutLedger},
		{"payments", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			return b.checkPayments(ctx, out, bal, sum)
		}},
		{"balances", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			switch {
			case bal == nil:
				return "", nil
			case sum.Unfinished["payments"] != "":
				// What the payments bring in flight is not all known: no
				// pair is decided on part of it.
				return "the payments section did not finish: what is in flight is not known", nil
			}
			return b.balanceFinish(ctx, bal, out)
		}},
	}
}

// Check compares the books and hands every item to emit as it is found,
// the payouts first (the double payments first among them), then the
// refunds' (with BooksConfig.Refunds), then the payout ledger's items (with PayoutLedgerSQL or PayoutLedgerFunc), the
// payments (each followed by its ledger item, with a ledger; then the
// ledger's orderIds the tracker does not know), then the balances (with
// BooksConfig.Balances; their snapshot
// is stored at the end); an error from emit stops the check and is returned. A section
// that cannot be finished is named in the summary's Unfinished, and the
// check goes on with the next. It returns ctx's error if ctx ends. A
// stopped check still returns its summary so far, with the section it
// stopped in named in Unfinished: drift found before the stop is drift;
// an item the stop kept from being decided (a payment whose read it cut
// short) is not emitted.
//
// It reads the whole payout list once (ScanPayouts: the list's pages) and
// each tracked payment in the window once (GetPayment): nothing else
// at the API. Memory stays bounded whatever the sizes: the list streams
// into a temporary table (the check needs the TEMPORARY privilege on the
// database) and is matched there, and payments are read a page at a time.
// A Books without a Client is refused (ErrInvalidOption).
func (b *Books) Check(ctx context.Context, emit func(BooksItem) error) (*BooksSummary, error) {
	if b.cfg.Client == nil {
		return nil, fmt.Errorf("%w: BooksConfig.Client is nil: the check reads the provider's side", ErrInvalidOption)
	}
	sum := newBooksSummary()
	defer sum.sortTotals()
	out, bal := b.start(ctx, sum, emit)
	for _, s := range b.sections(bal, sum) {
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

// start readies a check: its own tables, the adjustments to subtract,
// and the balances' run (nil when off or not possible, the reason in
// sum). out is emit behind the adjustments, the rule that only drift has
// a delta, and the summary.
func (b *Books) start(ctx context.Context, sum *BooksSummary, emit func(BooksItem) error) (out func(BooksItem) error, bal *balanceRun) {
	// The check's own tables: a role that may not create them still
	// checks the payouts and payments (no adjustment can have been booked
	// in a table that does not exist); the balances need them.
	var createErr error
	if b.cfg.CreateTable {
		createErr = b.createTables(ctx)
	}
	adj, err := b.readAdjustments(ctx)
	if err != nil {
		adj = map[adjKey]adjSum{}
		sum.Unfinished["adjustments"] = scrubText("the adjustments could not be read, so none is subtracted: " + err.Error())
	}
	out = func(it BooksItem) error {
		if it.Section != "balances" {
			adjustItem(adj, &it)
		}
		if !it.Class.IsDrift() {
			it.Delta = decimal.Zero // matched, in flight, undecided: nothing to book
		}
		sum.add(&it)
		return emit(it)
	}
	if b.cfg.Balances {
		err := createErr
		if err == nil {
			bal, err = b.balanceStart(ctx, adj)
		}
		if err != nil {
			sum.Unfinished["balances"] = scrubText(err.Error())
			bal = nil
		}
	}
	return out, bal
}
