package pgstore

import (
	"cmp"
	"slices"

	"github.com/shopspring/decimal"
)

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
