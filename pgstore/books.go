package pgstore

import (
	"context"

	"github.com/shopspring/decimal"
)

// The books check: the merchant's records (the payout queue's intents,
// the tracker's payments, the merchant's own ledger) against the
// provider's (the payout list, each payment's status), every difference
// named with its exact amount. See docs/books.md.

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
		{"payouts", func(ctx context.Context, out func(BooksItem) error) (string, error) {
			return b.checkPayouts(ctx, out, bal)
		}},
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
