package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"
)

// The books check: the merchant's records (the payout queue's intents,
// the tracker's payments, the merchant's own ledger) against the
// provider's (the payout list, each payment's status), every difference
// named with its exact amount. See docs/books.md.

// BooksSummary is what one Check found, counted per section and class.
// Amounts are never summed across sections: the payouts are money out,
// the payments money in, the balances what the provider holds, and a
// delta of one section means nothing to another.
type BooksSummary struct {
	// Counts holds, per section ("payouts", "payout_ledger", "refunds",
	// "payments", "ledger", "balances"), how many items fell in each class.
	Counts map[string]map[BooksClass]int
	// Drift is how many items are drift; InFlight and Undecided count the
	// others that are not matched.
	Drift, InFlight, Undecided int
	// DriftBySection sums, per section and per currency and network
	// ("usdt/tron"), the deltas of the drift items: money out (payouts),
	// money in (payments) and the balances apart.
	DriftBySection map[string]map[string]decimal.Decimal
	// Totals holds, per section, class, currency and network, how many
	// items and the sum of their deltas (zero for a class that is not
	// drift), sorted by section, class, currency and network: the sums of
	// a report's Delta column.
	Totals []BooksTotal
	// NotRead says, per section, what the check did not read on purpose
	// (the payments outside BooksConfig.Since): its items are not there,
	// and prove nothing of it.
	NotRead map[string]string
	// Unfinished says, per section, why it could not be checked to its end
	// (the API could not be read, the payout list changed under the
	// check); its items are then not all there. Server text: show it
	// escaped.
	Unfinished map[string]string

	totals map[BooksTotal]*BooksTotal // keyed by the total without Items and Delta
}

// BooksTotal is one line of BooksSummary.Totals: the items of one section,
// class, currency and network, and the sum of their deltas.
type BooksTotal struct {
	Section           string
	Class             BooksClass
	Currency, Network string
	Items             int
	Delta             decimal.Decimal
}

// Clean reports whether the books tie: no drift, nothing undecided, every
// section finished.
func (s *BooksSummary) Clean() bool {
	return s.Drift == 0 && s.Undecided == 0 && len(s.Unfinished) == 0
}

func newBooksSummary() *BooksSummary {
	return &BooksSummary{Counts: make(map[string]map[BooksClass]int), DriftBySection: make(map[string]map[string]decimal.Decimal),
		Unfinished: make(map[string]string), NotRead: make(map[string]string), totals: make(map[BooksTotal]*BooksTotal)}
}

// add counts the item (its Delta already zero if it is not drift).
func (s *BooksSummary) add(it *BooksItem) {
	if s.Counts[it.Section] == nil {
		s.Counts[it.Section] = make(map[BooksClass]int)
	}
	s.Counts[it.Section][it.Class]++
	key := BooksTotal{Section: it.Section, Class: it.Class, Currency: it.Currency, Network: it.Network}
	t := s.totals[key]
	if t == nil {
		t = &key
		s.totals[key] = t
	}
	t.Items++
	t.Delta = t.Delta.Add(it.Delta)
	switch {
	case it.Class.IsDrift():
		s.Drift++
		if s.DriftBySection[it.Section] == nil {
			s.DriftBySection[it.Section] = make(map[string]decimal.Decimal)
		}
		pair := it.Currency + "/" + it.Network
		s.DriftBySection[it.Section][pair] = s.DriftBySection[it.Section][pair].Add(it.Delta)
	case it.Class == BooksInFlight:
		s.InFlight++
	case it.Class == BooksUndecided:
		s.Undecided++
	}
}

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

// sortTotals fills Totals from what add counted.
func (s *BooksSummary) sortTotals() {
	s.Totals = s.Totals[:0]
	for _, t := range s.totals {
		s.Totals = append(s.Totals, *t)
	}
	slices.SortFunc(s.Totals, func(a, b BooksTotal) int {
		return cmp.Or(cmp.Compare(a.Section, b.Section), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Currency, b.Currency),
			cmp.Compare(a.Network, b.Network))
	})
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
