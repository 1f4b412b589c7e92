package cryptopay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// This file is the payout-list search behind ReconcilePayout and
// WaitForPayout by orderId. Its answer "not listed" tells a caller that resending a
// payout is safe, so it is given only on evidence: every payout that could
// be the one was read, or the pages read prove the order that lets the
// search skip the rest.
//
//   - The first page (offset 0) gives the count and the server's page size.
//   - The last page (read from count-size+1, so that it cannot be full
//     unless something lies beyond the count) holds the newest payouts when
//     the list is oldest first; the first page holds them when it is newest
//     first. The order is learned from the pages' createdAt. So the newest
//     payout is found in at most 2 requests (a list that grows while it is
//     read costs up to 2 more).
//   - The pages in between are read from the newest end towards the oldest.
//     With a cutoff (an attempt time), the search may stop at the first
//     payout created before it, skipping the older end of the list, only
//     when the pages read prove the order (sortProven): both ends of the
//     list read, createdAt known on every payout read and going one way
//     across all of them, at least minSortedRun payouts read in a row at
//     each end, and no field the item shows (currency, network,
//     status, amount) able to lead the order instead of createdAt. A list
//     grouped by currency, status or amount, random, reversed part-way, or
//     with every createdAt equal fails the proof: the search reads on, to
//     the end of the list or until the proof holds. Without a cutoff every
//     page is read.
//   - A look reads at most maxSearchRequests pages; a list it cannot cover
//     or prove within them is an error (the answer stays unknown).
//   - A page of several payouts read at two offsets while the count
//     stayed (the server ignores offset), pages that show nothing new 4
//     times in a row on a list without a count, a list that ends before
//     its count, more items than the count, or a count that shrinks is an
//     error (ErrUnexpectedResponse), never "not listed".
//   - The answer "not listed" (and a scan's end without error) needs one
//     more thing: the count proof below. Where it does not close, the
//     answer is unknown (*ListProofError), never "not listed".
//
// The count proof (docs/reconcile.md). The model: payouts are never
// deleted; at any instant the list is a sequence of all the payouts that
// exist then, each once; a page read at time t holds positions
// [offset, offset+len) of the list at t, and its count is the list's size
// at t (not a cached or lagging number); each payout shows the same values
// of its key's fields on every read. The count proof of the whole list
// needs no place (it counts what the pages show); a list without a count
// needs an empty page to mean its end; the cutoff skip needs the places.
// Between two requests the order may change in any way (payouts
// sharing a createdAt swap places, a list ordered by updatedAt moves one),
// and payouts may be created or updated. So a page cannot tell where a
// payout not on it is: one may move from a page not yet read to one
// already read, and one created meanwhile may fill the place it left. The
// proof counts instead of placing:
//
//   - A payout's key is the fields it was created with that the list
//     shows (orderId, customer, currency, network, amount, createdAt; see
//     identity), never status, paidAddress, merchantAmount, the wallet or
//     an id: a key that changed between two reads would count one payout
//     seen twice as two. Two payouts may share a key (twins).
//   - L, proven: for each key k, m_k is the most items with key k seen in
//     one page (a page lists each payout once, so m_k payouts with key k
//     exist); L is the sum of m_k. Every payout counted exists at the last
//     request, since none is deleted.
//   - U, listed: the list's size at the last request: its count, or for a
//     list without one the offset of an empty page that was the last
//     request.
//   - If L >= U, the payouts counted are all the payouts that existed at
//     the last request (L > U breaks the model: an error), hence every
//     payout that existed when the search began, each key exactly m_k
//     times: "not listed" is proven. If L < U, some payout may not have
//     been seen: the search reads the list again from its newest end (new
//     payouts appear there), at most maxRereads passes, the first with its
//     pages shifted by half a page (so that payouts sharing a createdAt,
//     or twins, cut by a page boundary lie in one page), stopping as soon
//     as L >= U with U the latest count; if it still does not close, the
//     answer is unknown. A quiet list closes after its first pass, which
//     makes exactly the requests it always did.
//   - The cutoff skip reads only the newest part of a list proven sorted
//     by createdAt (sortProven, a trusted heuristic), so the count of the
//     whole list cannot close. It closes on the region R of the payouts
//     created at or after the cutoff instead: in a sorted list every
//     payout of R lies strictly before (newest first) or after (oldest
//     first) a payout created before the cutoff, whatever the order among
//     ties. So a page read at time t that shows such a payout e at
//     position p bounds R at t: |R| <= p newest first, |R| <= count-p-1
//     oldest first; and R grows by at most the payouts created since,
//     which the count's growth bounds. U_R is the least such bound, moved
//     to the last request; L_R is L over the keys with createdAt at or
//     after the cutoff. L_R >= U_R proves every payout of R was seen; the
//     re-reads then cover R only, from the newest end to the first
//     payout older than the cutoff. The cutoff is taken down to its whole
//     second, so that a list sorted by createdAt's second (any order
//     within one) is sorted enough; a page that shows a payout of R, or
//     one without createdAt, on the far side of an older one leaves U_R
//     unknown. A list whose order is not proven, or a skip whose proof
//     does not close within the re-reads, is unknown, never "not listed".
//
// What the proof cannot see: a list made of parts each sorted by createdAt
// and joined by a key the item does not show (two shards, a merchant
// sub-account), or by customer or wallet, looks sorted on every page the
// fast path reads; so does one led by a field that is the same on every
// payout read (the status, when all are paid) until it changes during the
// search. The skip trusts that the server's order is led by createdAt
// once nothing it shows contradicts it, and that pages are the windows
// asked for.

// Bounds of one look at the list.
const (
	// maxSearchRequests bounds the pages one look reads: a list the
	// search cannot cover or prove sorted within them is "still unknown".
	maxSearchRequests = 1000
	// maxSortedRecords bounds what a search keeps to prove the order;
	// past it the search reads on to the end instead.
	maxSortedRecords = 10_000
	// maxRereads bounds the passes that read the list again when the
	// first did not prove that every payout was seen (see the count
	// proof): then the answer is unknown.
	maxRereads = 2
	// maxAmbiguous bounds the orderIds a *ListProofError names.
	maxAmbiguous = 100
	// maxStale bounds the pages in a row of a first pass, on a list
	// without a count, that show no payout not seen before: a server that
	// ignores the offset would otherwise be read forever.
	maxStale = 3
)

// minSortedRun is how many payouts a skip needs read in a row at each end
// of the list, in createdAt order: a random order passes one such run by
// chance about 2 times in 16! (10^13). A search keeps its own (minRun), so
// that a test can run the skip, and its count proof, on lists of a few
// payouts while other tests run beside it.
const minSortedRun = 16

// listOrder is the order the payout list was seen to be in.
type listOrder int

const (
	orderUnknown listOrder = iota // not enough distinct createdAt seen
	oldestFirst
	newestFirst
	unsorted // createdAt goes both ways: no cutoff can be trusted
)

// searchPage is one page as the search reads it: with whether the server
// sent a count at all (a server without one is read to its empty page).
type searchPage struct {
	items   []PayoutListItem
	count   int
	counted bool
}

// wireSearchPage decodes a page for the search (see wirePayoutPage).
type wireSearchPage struct{ wirePayoutPage }

// searchPagePool reuses the wire form of a search page (see wirePool).
var searchPagePool wirePool[wireSearchPage]

func (w *wireSearchPage) to(p *searchPage) {
	var page PayoutPage
	w.wirePayoutPage.to(&page)
	*p = searchPage{items: page.Payouts, count: page.Count, counted: w.Count.Valid}
}

// payoutSearch looks for one orderId in the payout list. Offsets [0, head)
// and [tail, end) have been searched; end is the latest count.
type payoutSearch struct {
	c        *Client
	minRun   int                          // minSortedRun, but in tests of small lists
	keyOf    func(*PayoutListItem) uint64 // identity, but in the test of key collisions
	ctx      context.Context
	opts     []Option
	orderID  string
	cutoff   time.Time // payouts created before it cannot be the one; zero: none
	size     int       // the page size the server serves
	head     int
	tail     int
	end      int
	counted  bool             // the server sends a count (without one, read to an empty page)
	endSeen  bool             // a page showed the end of the list (it was not full)
	read1    bool             // the first page has been read
	farRead  bool             // the far end of the list (from count-size+1) has been read
	top      []PayoutListItem // the last page read at the top of the list
	order    listOrder
	edge     time.Time // the oldest createdAt the newest-to-oldest walk reached
	stopped  bool      // the walk reached the cutoff and the order is proven
	requests int
	pages    map[uint64]pageSeen // fingerprint of each page read in the first pass
	found    *PayoutListItem
	keep     bool         // a skip is still possible: records are kept
	records  []sortRecord // what sortProven needs of each payout read
	// The count proof (see the file's header).
	keys       map[uint64]keySeen // each key read: the most copies in one page
	inPage     map[uint64]int     // the copies of each key in the page being read
	keysR      map[uint64]int32   // keys and inPage over the payouts created at or after the cutoff
	inPageR    map[uint64]int
	pageNo     int      // the requests answered, as a page number for keys
	proven     int      // L: the sum of the keys' copies
	provenR    int      // L_R: the same over the keys created at or after the cutoff
	boundNF    int      // least (p - count) over the pages read: U_R - count, newest first
	boundOF    int      // least (-p - 1) over the pages read: U_R - count, oldest first
	mixedNF    bool     // a page showed, newest first, a payout of the region (or without createdAt) after an older one: no U_R
	mixedOF    bool     // the same, oldest first
	lastEmpty  int      // the offset of the last page read if it was empty, else -1
	rereading  bool     // the first pass is over
	passReqs   int      // the requests of the first pass (a re-read pass reads at most twice as many)
	stale      int      // pages in a row, first pass, no count, that proved no new payout
	ambiguous  []string // orderIds of keys read on more than one page (capped)
	ambiguousN int      // how many keys were read on more than one page
	// visit, in a scan (ScanPayouts), gets each distinct payout once
	// instead of the orderId being looked for; false stops the scan.
	visit    func(*PayoutListItem) bool
	rose     map[uint64]int      // in a scan: the keys whose copies rose on the page being read, with their copies before it
	yielded  map[uint64]uint64   // in a scan: each key's first item yielded, by every field (see allFields)
	twinsY   map[uint64][]uint64 // the same for the further items of a key with twins
	unsure   int                 // keys whose twins the pages could not tell apart from items yielded (the scan's proof cannot close)
	pageSize int                 // the page size asked for (defaultPageSize)
	listed   int                 // the count of the latest page read
	maxReqs  int                 // the pages one look may read (maxSearchRequests)
}

// sortRecord is what the proof of the order needs of one payout read: its
// place in the list and the fields that could lead the order.
type sortRecord struct {
	pos                       int
	at                        int64 // createdAt in Unix ns; 0 when absent
	currency, network, status string
	amount                    decimal.Decimal
}

// keySeen is what the count proof keeps of one key: 12 bytes a payout.
type keySeen struct {
	copies int32 // m_k: the most items with the key seen in one page
	page   int32 // the last page it was seen on
	multi  bool  // seen on more than one page
}

// pageSeen is where, and at which count, a page was first read.
type pageSeen struct{ offset, count int }

func newPayoutSearch(ctx context.Context, c *Client, orderID string, cutoff time.Time, opts []Option) *payoutSearch {
	// The cutoff is taken down to its whole second: a list sorted by
	// createdAt's second, in any order within one, then still lists every
	// payout created at or after it before (newest first) every payout
	// created before it (see the cutoff skip in the file's header).
	s := &payoutSearch{c: c, ctx: ctx, opts: opts, orderID: orderID, cutoff: cutoff.Truncate(time.Second), pages: make(map[uint64]pageSeen),
		keys: make(map[uint64]keySeen), inPage: make(map[uint64]int), keysR: make(map[uint64]int32), inPageR: make(map[uint64]int), pageSize: defaultPageSize, maxReqs: maxSearchRequests, minRun: minSortedRun, keyOf: identity,
		boundNF: math.MaxInt, boundOF: math.MaxInt, lastEmpty: -1}
	s.keep = !cutoff.IsZero()
	return s
}

// run searches until the payout is found (s.found), the list is covered
// or the cutoff reached on a proven order (nil error, s.found nil), or the
// evidence fails (an error: the answer stays unknown).
func (s *payoutSearch) run() error {
	first, err := s.first()
	if err != nil || s.found != nil {
		return err
	}
	var last []PayoutListItem
	if s.counted && len(first) > 0 && (s.head >= s.end || s.order == oldestFirst || s.order == orderUnknown) {
		if last, err = s.last(); err != nil || s.found != nil {
			return err
		}
		s.order = orderOf(first, last)
	}
	switch s.order {
	case newestFirst:
		s.reach(first, false)
	case oldestFirst:
		s.reach(last, true)
	}
	err = s.decide()
	for err == nil && s.more() {
		if s.order == oldestFirst && s.counted { // without a count, the end is unknown: read up to an empty page
			err = s.stepDown()
		} else {
			err = s.stepUp()
		}
		if err == nil && s.found == nil {
			err = s.decide()
		}
	}
	if err == nil && s.found == nil {
		err = s.prove()
	}
	return err
}

// prove closes the count proof, reading the list again (at most
// maxRereads passes) while the pages read do not prove that every payout
// was seen; a proof still open is a *ListProofError. See the file's header.
func (s *payoutSearch) prove() error {
	for pass := 0; ; pass++ {
		if done, err := s.closed(); done && s.unsure == 0 || err != nil {
			return err
		}
		if pass == maxRereads || s.unsure > 0 {
			return s.proofError()
		}
		if !s.rereading {
			s.rereading, s.passReqs = true, s.requests
		}
		if err := s.reread(pass); err != nil || s.found != nil {
			return err
		}
	}
}

// proof is the proof in force: L and U over the whole list, or over the
// region of the payouts created at or after the cutoff once a walk
// stopped there (known false: no U yet, as for a list without a count
// whose last page read was not empty).
func (s *payoutSearch) proof() (proven, listed int, known bool) {
	switch {
	case s.stopped:
		b, mixed := s.boundNF, s.mixedNF
		if s.order == oldestFirst {
			b, mixed = s.boundOF, s.mixedOF
		}
		return s.provenR, s.listed + b, b != math.MaxInt && !mixed
	case s.counted:
		return s.proven, s.listed, true
	}
	return s.proven, s.lastEmpty, s.lastEmpty >= 0
}

// closed reports whether the proof closes (L >= U); a list that shows
// more payouts than it holds (L > U) broke the model: an error.
func (s *payoutSearch) closed() (bool, error) {
	proven, listed, known := s.proof()
	if known && proven > listed {
		what := "the list holds"
		if s.stopped {
			what = "its order leaves room for after the cutoff (it is not sorted by createdAt)"
		}
		return false, s.inconsistent(fmt.Sprintf("it showed %d distinct payouts where %s %d", proven, what, listed))
	}
	return known && proven == listed, nil
}

// reread reads the list again from its newest end until the proof
// closes or the pass has covered what the proof counts: the whole list
// (to the latest count, or to an empty page), or, for a stopped walk, its
// newest part down to a payout created before the cutoff. Pass 0 shifts
// its page boundaries by half a page from the first pass's, so that
// payouts sharing a createdAt, or twins, cut by a boundary there lie in
// one page.
func (s *payoutSearch) reread(pass int) error {
	phase := 0
	if pass == 0 {
		phase = s.size / 2
	}
	if s.counted && s.order == oldestFirst {
		return s.rereadDown(phase)
	}
	lim := s.size
	if phase > 0 {
		lim = phase
	}
	for off, start := 0, s.requests; s.requests-start < 2*s.passReqs+4; lim = s.size {
		p, done, err := s.reread1(off, lim)
		switch {
		case done || err != nil:
			return err
		case s.stopped && s.pastCutoff(p.items), !s.counted && len(p.items) == 0:
			return nil // covered
		}
		if !s.counted {
			lim = len(p.items) // a short page ends the list: its end is the empty page's offset
		}
		if off += lim; s.counted && off >= s.listed {
			return nil
		}
	}
	return nil // a pass as long as twice the first: the proof decides
}

// rereadDown is reread for a list oldest first: its first page is the
// list's end, read from the count minus a page plus one (so that it shows
// a payout created since), then pages down to the oldest, the first
// overlapping it by phase.
func (s *payoutSearch) rereadDown(phase int) error {
	lo := max(0, s.listed-s.size+1)
	p, done, err := s.reread1(lo, s.size)
	hi := min(lo+phase, s.listed)
	for start := s.requests; !done && err == nil && hi > 0 && !(s.stopped && s.pastCutoff(p.items)) && s.requests-start < 2*s.passReqs+4; {
		lo = max(0, hi-s.size)
		p, done, err = s.reread1(lo, hi-lo)
		hi = lo
	}
	return err
}

// reread1 reads one page of a re-read: done when the proof closes or the
// payout looked for is found.
func (s *payoutSearch) reread1(lo, lim int) (searchPage, bool, error) {
	p, err := s.read(lo, lim)
	if err != nil || s.found != nil {
		return p, true, err
	}
	if want := min(lim, p.count-lo); s.counted && len(p.items) < want {
		return p, true, s.short(lo, len(p.items), want)
	}
	done, err := s.closed()
	return p, done, err
}

// pastCutoff reports whether items hold a payout created before the cutoff.
func (s *payoutSearch) pastCutoff(items []PayoutListItem) bool {
	for i := range items {
		if t := items[i].CreatedAt; !t.IsZero() && t.Before(s.cutoff) {
			return true
		}
	}
	return false
}

// count starts the page read at offset in the count proof: whether it
// was empty (U of a list without a count), and the bounds on the region
// after the cutoff that its payouts created before the cutoff give (the
// first newest first, the last oldest first; see the file's header).
func (s *payoutSearch) count(offset int, p searchPage) {
	s.pageNo++
	s.lastEmpty = -1
	if len(p.items) == 0 {
		s.lastEmpty = offset
	}
	if s.cutoff.IsZero() || !p.counted {
		return
	}
	first, last := -1, -1 // the first and the last payout created before the cutoff
	for i := range p.items {
		if t := p.items[i].CreatedAt; !t.IsZero() && t.Before(s.cutoff) {
			last = i
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return
	}
	s.boundNF = min(s.boundNF, offset+first-p.count)
	s.boundOF = min(s.boundOF, -(offset+last)-1)
	// A payout of the region, or one whose createdAt is unknown, on the
	// far side of an older one shows the list not sorted as the bound
	// needs: in that order, the region has no bound (U_R unknown).
	for i := range p.items {
		if t := p.items[i].CreatedAt; t.IsZero() || !t.Before(s.cutoff) {
			s.mixedNF = s.mixedNF || i > first
			s.mixedOF = s.mixedOF || i < last
		}
	}
}

// see counts one item of the page being read; in a scan, it notes the
// keys whose copies rise (this page shows more of them than any before).
func (s *payoutSearch) see(it *PayoutListItem) {
	id := s.keyOf(it)
	n := s.inPage[id] + 1
	s.inPage[id] = n
	k := s.keys[id]
	if k.copies > 0 && int(k.page) != s.pageNo && !k.multi {
		k.multi = true
		if s.ambiguousN++; len(s.ambiguous) < maxAmbiguous {
			s.ambiguous = append(s.ambiguous, it.OrderID)
		}
	}
	k.page = int32(s.pageNo)
	more := n > int(k.copies)
	if more {
		if _, rose := s.rose[id]; !rose && s.visit != nil {
			s.rose[id] = int(k.copies)
		}
		k.copies = int32(n)
		s.proven++
	}
	s.keys[id] = k
	if !s.cutoff.IsZero() && !it.CreatedAt.IsZero() && !it.CreatedAt.Before(s.cutoff) {
		// L_R counts the keys created at or after the cutoff in a map of
		// their own, so that a hash shared with an older key can only
		// merge two of them (an undercount), never count an older one.
		r := s.inPageR[id] + 1
		s.inPageR[id] = r
		if r > int(s.keysR[id]) {
			s.keysR[id] = int32(r)
			s.provenR++
		}
	}
}

// proofError is the unknown answer of a proof that did not close.
func (s *payoutSearch) proofError() error {
	proven, listed, known := s.proof()
	e := &ListProofError{Proven: proven, Listed: listed, Requests: s.requests,
		Ambiguous: slices.Clone(s.ambiguous), AmbiguousTotal: s.ambiguousN}
	if s.stopped {
		e.Since = s.cutoff
	}
	if !known {
		e.Listed = -1
	}
	return e
}

// decide stops the walk once it has reached the cutoff on an order the
// pages read prove (sortProven). The proof needs both ends of the list,
// with at least minSortedRun payouts read in a row at each: a newest-first
// walk reads the far end when it reaches the cutoff, and either walk
// widens the oldest end (widen) until it shows enough.
func (s *payoutSearch) decide() error {
	if s.stopped || !s.keep || s.edge.IsZero() || !s.edge.Before(s.cutoff) ||
		(s.order != newestFirst && s.order != oldestFirst) || !s.counted || s.head >= s.tail {
		return nil
	}
	if !s.farRead {
		if _, err := s.last(); err != nil || s.found != nil {
			return err
		}
	}
	newest, oldest := s.runs()
	if newest < s.minRun {
		return nil // the walk reads on, and decide looks again
	}
	for oldest < s.minRun && s.head < s.tail && s.keep {
		if err := s.widen(); err != nil || s.found != nil {
			return err
		}
		_, oldest = s.runs()
	}
	s.stopped = s.head < s.tail && s.sortProven()
	return nil
}

// runs counts the payouts read in a row at the newest and the oldest end
// of the list.
func (s *payoutSearch) runs() (newest, oldest int) {
	if s.order == oldestFirst {
		return s.end - s.tail, s.head
	}
	return s.head, s.end - s.tail
}

// widen reads the next page at the oldest end of the list (the one the
// walk does not come from), towards the gap, for the proof only: it moves
// neither the edge nor the walk.
func (s *payoutSearch) widen() error {
	lo, hi := s.head, min(s.tail, s.head+s.size)
	if s.order == newestFirst {
		lo, hi = max(s.head, s.tail-s.size), s.tail
	}
	p, err := s.read(lo, hi-lo)
	if err != nil || s.found != nil {
		return err
	}
	if len(p.items) < hi-lo {
		return s.short(lo, len(p.items), hi-lo)
	}
	if p.count != s.end {
		s.noSkip() // the list changed: the places read no longer line up
		return nil
	}
	if s.order == newestFirst {
		s.tail = lo
	} else {
		s.head = hi
	}
	return nil
}

// sortProven reports whether the payouts read prove that the gap left
// unread holds only payouts older than the edge the walk reached, as far
// as a list read by offset can show it:
//   - both ends of the list were read, each place once;
//   - createdAt is known on every payout read and goes one way (the
//     list's order) across all of them, not equal throughout;
//   - at least minSortedRun payouts were read in a row at each end;
//   - no field the item shows can lead the order: a list sorted first by a
//     field is monotone in it from end to end, so the field either has
//     the same value at both ends (then it is constant) or shows a value,
//     another, then the first again (for amount: goes both ways); or the
//     same holds on the block around the gap where the fields that have
//     one value on both sides of the gap keep it (gapProven).
//
// A list reversed part-way shows the other direction at its oldest end; a
// random one fails the runs (2 in 16! by chance).
func (s *payoutSearch) sortProven() bool {
	newest, oldest := s.runs()
	r := s.records
	if !s.keep || len(r) < 2 || newest < s.minRun || oldest < s.minRun || !s.farRead {
		return false
	}
	slices.SortStableFunc(r, func(a, b sortRecord) int { return cmp.Compare(a.pos, b.pos) })
	if r[0].pos != 0 || r[len(r)-1].pos != s.end-1 {
		return false
	}
	strict := false
	for i := range r {
		if r[i].at == 0 {
			return false
		}
		if i == 0 {
			continue
		}
		if r[i].pos == r[i-1].pos {
			return false // read twice: the list moved between the reads
		}
		d := cmp.Compare(r[i].at, r[i-1].at)
		if (s.order == newestFirst && d > 0) || (s.order == oldestFirst && d < 0) {
			return false
		}
		strict = strict || d != 0
	}
	return strict && (noFieldLeads(r, nil) || s.gapProven(r))
}

// textFields are the text fields of a payout that could lead the order.
var textFields = [...]func(*sortRecord) string{
	func(x *sortRecord) string { return x.currency },
	func(x *sortRecord) string { return x.network },
	func(x *sortRecord) string { return x.status },
}

// noFieldLeads reports whether no field outside pinned can lead the order
// of the records r (see cannotLead); pinned[i] is text field i, pinned[3]
// the amount (nil: none pinned).
func noFieldLeads(r []sortRecord, pinned *[4]bool) bool {
	for i, f := range textFields {
		if (pinned == nil || !pinned[i]) && !cannotLead(r, f) {
			return false
		}
	}
	return (pinned != nil && pinned[3]) || amountCannotLead(r)
}

// gapProven is the proof for a list whose fields differ from end to end
// but not across the gap: a field with one value on both sides of the gap
// (pinned) is, if it leads the order, that value throughout the gap; so
// is each further key, in turn, while the keys before it are. The
// proof then holds on the block of records around the gap where every
// pinned field keeps that value: minSortedRun of them on each side,
// createdAt not equal throughout, and no other field able to lead the
// order within the block. (Say the newest payout is processing and all
// others paid: status is pinned to paid, and the block is the paid ones.)
func (s *payoutSearch) gapProven(r []sortRecord) bool {
	at := func(pos int) int {
		i, ok := slices.BinarySearchFunc(r, pos, func(x sortRecord, p int) int { return cmp.Compare(x.pos, p) })
		if !ok {
			return -1
		}
		return i
	}
	li, ri := at(s.head-1), at(s.tail)
	if li < 0 || ri < 0 {
		return false
	}
	// Pinned: the fields the whole list does not rule out and that have
	// one value on both sides of the gap. (Any such choice is sound;
	// pinning a field that is equal there by chance would only shrink the
	// block.)
	var pinned [4]bool
	some := false
	for i, f := range textFields {
		pinned[i] = f(&r[li]) == f(&r[ri]) && !cannotLead(r, f)
		some = some || pinned[i]
	}
	pinned[3] = r[li].amount.Equal(r[ri].amount) && !amountCannotLead(r)
	if !some && !pinned[3] {
		return false
	}
	keeps := func(x *sortRecord) bool {
		for i, f := range textFields {
			if pinned[i] && f(x) != f(&r[li]) {
				return false
			}
		}
		return !pinned[3] || x.amount.Equal(r[li].amount)
	}
	i0, i1 := li, ri
	for i0 > 0 && keeps(&r[i0-1]) {
		i0--
	}
	for i1 < len(r)-1 && keeps(&r[i1+1]) {
		i1++
	}
	if li-i0+1 < s.minRun || i1-ri+1 < s.minRun || r[i0].at == r[i1].at {
		return false
	}
	return noFieldLeads(r[i0:i1+1], &pinned)
}

// cannotLead reports whether the field cannot be the list's first sort key
// (in any order of its values): it is the same at both ends, or a value
// comes back after another one.
func cannotLead(r []sortRecord, field func(*sortRecord) string) bool {
	if field(&r[0]) == field(&r[len(r)-1]) {
		return true
	}
	left := make(map[string]struct{})
	prev := field(&r[0])
	for i := 1; i < len(r); i++ {
		v := field(&r[i])
		if v == prev {
			continue
		}
		if _, back := left[v]; back {
			return true
		}
		left[prev] = struct{}{}
		prev = v
	}
	return false
}

// amountCannotLead is cannotLead for the amount, in numeric order: the
// same at both ends, or going both up and down.
func amountCannotLead(r []sortRecord) bool {
	if r[0].amount.Equal(r[len(r)-1].amount) {
		return true
	}
	up, down := false, false
	for i := 1; i < len(r); i++ {
		switch r[i].amount.Cmp(r[i-1].amount) {
		case 1:
			up = true
		case -1:
			down = true
		}
	}
	return up && down
}

// more reports whether the search must read on: nothing found, the cutoff
// not reached, and a gap left, or the end of a counted list not yet seen
// (a page that ends exactly at the count cannot show a payout beyond it).
func (s *payoutSearch) more() bool {
	if s.found != nil || s.stopped {
		return false
	}
	return s.head < s.tail || (s.counted && !s.endSeen)
}

// read fetches one page, checks it against the pages read before, and
// looks for the orderId on it.
func (s *payoutSearch) read(offset, limit int) (searchPage, error) {
	if s.requests >= s.maxReqs {
		return searchPage{}, s.unfinished()
	}
	r := listPayouts.call(s.opts)
	r.path += "?" + pageQuery(limit, offset)
	pp, err := fetch[searchPage](s.ctx, s.c, r, &searchPagePool)
	s.requests++
	if err != nil {
		return searchPage{}, err
	}
	p := *pp
	if err := s.consistent(offset, p); err != nil {
		return p, err
	}
	s.listed = p.count
	s.count(offset, p)
	clear(s.inPage)
	clear(s.inPageR)
	before := s.proven
	if s.visit != nil {
		if err := s.yield(p.items); err != nil {
			return p, err
		}
	}
	for i := range p.items {
		if s.visit != nil {
			break // yield counted the page
		}
		it := &p.items[i]
		s.see(it)
		if it.OrderID == s.orderID {
			s.found = it
			break
		}
		if !s.rereading {
			s.record(offset+i, it)
		}
	}
	if !p.counted && !s.rereading && s.found == nil && len(p.items) > 0 {
		if s.stale++; s.proven > before {
			s.stale = 0
		}
		if s.stale > maxStale {
			return p, s.inconsistent(fmt.Sprintf("%d pages in a row, the last at offset %d, showed no payout not seen before (is the offset ignored?)", s.stale, offset))
		}
	}
	return p, nil
}

// yield counts a page of a scan and yields the items it proves distinct:
// for each key whose copies rose from m to n, n-m of its items on the
// page. With m = 0 they are all new. With m > 0 (twins, seen on an
// earlier page too) they are the items that match, by every field, none
// of the m yielded before; if more than n-m match none (a twin changed
// between the reads), the pages cannot tell which payouts were yielded,
// and the scan's proof cannot close (unsure).
func (s *payoutSearch) yield(items []PayoutListItem) error {
	if s.rose == nil {
		s.rose, s.yielded, s.twinsY = make(map[uint64]int), make(map[uint64]uint64), make(map[uint64][]uint64)
	}
	clear(s.rose)
	for i := range items {
		s.see(&items[i])
	}
	for i := range items {
		it := &items[i]
		id := s.keyOf(it)
		m, ok := s.rose[id]
		if !ok {
			continue
		}
		out := []*PayoutListItem{it}
		if m > 0 {
			out = s.newTwins(id, items, m)
		} else if int(s.keys[id].copies) > 1 {
			out = nil // several of one key never yielded: all of them
			for j := i; j < len(items); j++ {
				if s.keyOf(&items[j]) == id {
					out = append(out, &items[j])
				}
			}
		}
		delete(s.rose, id) // each key once a page
		for _, x := range out {
			f := allFields(x)
			if _, seen := s.yielded[id]; seen {
				s.twinsY[id] = append(s.twinsY[id], f)
			} else {
				s.yielded[id] = f
			}
			if !s.visit(x) {
				return errScanStopped
			}
		}
	}
	return nil
}

// newTwins picks the items of key id on the page that were not yielded
// before, when its copies rose from m (see yield).
func (s *payoutSearch) newTwins(id uint64, items []PayoutListItem, m int) []*PayoutListItem {
	before := append([]uint64{s.yielded[id]}, s.twinsY[id]...)
	var out []*PayoutListItem
	for j := range items {
		if s.keyOf(&items[j]) != id {
			continue
		}
		f := allFields(&items[j])
		if k := slices.Index(before, f); k >= 0 {
			before = slices.Delete(before, k, k+1)
			continue
		}
		out = append(out, &items[j])
	}
	if need := int(s.keys[id].copies) - m; len(out) > need {
		s.unsure++
		out = out[:need]
	}
	return out
}

// allFields hashes every field of an item (FNV-1a): two items of one key
// with equal hashes show the same payout, or twins no field tells apart.
func allFields(it *PayoutListItem) uint64 {
	h := identity(it)
	for _, f := range [...]string{it.ID, string(it.Status), it.PaidAddress, it.MerchantAmount.Decimal.String(), strconv.FormatBool(it.MerchantAmount.Valid), it.WalletLabel, it.WalletAddress, it.OrderID, it.Currency, it.Network} {
		h = fnvAdd(h, f)
	}
	return h
}

// record keeps what sortProven needs of the payout read at pos, while a
// skip is still possible: a cutoff, and no more than maxSortedRecords.
func (s *payoutSearch) record(pos int, it *PayoutListItem) {
	if !s.keep {
		return
	}
	if len(s.records) >= maxSortedRecords {
		s.noSkip() // read on to the end instead
		return
	}
	if s.records == nil {
		s.records = make([]sortRecord, 0, 2*defaultPageSize) // the first and the far page
	}
	var at int64
	if !it.CreatedAt.IsZero() {
		at = it.CreatedAt.UnixNano()
	}
	s.records = append(s.records, sortRecord{pos: pos, at: at, currency: it.Currency, network: it.Network, status: string(it.Status), amount: it.Amount})
}

// consistent refuses a page that contradicts the pages read before.
func (s *payoutSearch) consistent(offset int, p searchPage) error {
	// A page of several payouts seen again at another offset while the
	// count stayed: the offset is likely ignored. A page of one payout is
	// left to the count proof (ties that swap places show one payout at
	// two offsets) and, without a count, to the stale pages (see read);
	// the re-reads, whose pages shift, are left to the proof too.
	if len(p.items) > 1 && !s.rereading {
		fp := fingerprint(p.items, s.keyOf)
		if at, seen := s.pages[fp]; seen && at.offset != offset && at.count == p.count {
			return s.inconsistent(fmt.Sprintf("the page at offset %d repeats the page at offset %d (is the offset ignored?)", offset, at.offset))
		}
		s.pages[fp] = pageSeen{offset, p.count}
	}
	switch {
	case s.read1 && p.counted != s.counted:
		return s.inconsistent("the count is sent on some pages and not on others")
	case p.counted && p.count < s.end:
		return s.inconsistent(fmt.Sprintf("the count went down from %d to %d (payouts are not deleted)", s.end, p.count))
	case p.counted && offset+len(p.items) > p.count:
		return s.inconsistent(fmt.Sprintf("the page at offset %d holds %d items, more than the count %d leaves", offset, len(p.items), p.count))
	}
	return nil
}

// first reads the page at offset 0: the count, the page size, and the
// order if the page shows one.
func (s *payoutSearch) first() ([]PayoutListItem, error) {
	p, err := s.read(0, s.pageSize)
	if err != nil || s.found != nil {
		return nil, err
	}
	s.read1, s.counted = true, p.counted
	s.head, s.size = len(p.items), max(len(p.items), 1)
	s.tail, s.end = p.count, p.count
	s.endSeen = len(p.items) == 0
	if !p.counted {
		s.tail = math.MaxInt // read on to an empty page
	}
	if p.count > 0 && len(p.items) == 0 {
		return nil, s.inconsistent(fmt.Sprintf("the first page is empty but the count is %d", p.count))
	}
	s.order = orderOf(p.items)
	s.top = p.items
	return p.items, nil
}

// last reads the newest end of an oldest-first (or not yet ordered) list
// from offset count-size+1, so that the page cannot be full: a full one
// shows a payout beyond the count. On a list the first page covered, it
// reads at the count, expecting nothing. If the list grows meanwhile, the
// new end is read (up to 3 times): payouts created after the search began
// cannot be the one looked for, unless the list lags (see SettleTime).
func (s *payoutSearch) last() ([]PayoutListItem, error) {
	for try := 1; ; try++ {
		lo := max(s.head, s.end-s.size+1)
		kept := len(s.records)
		p, err := s.read(lo, s.size)
		if err != nil || s.found != nil {
			return nil, err
		}
		if want := min(s.size, p.count-lo); len(p.items) < want {
			return nil, s.short(lo, len(p.items), want)
		}
		grew := p.count > s.end
		s.end = p.count
		if !grew || try == 3 {
			s.tail, s.endSeen, s.farRead = lo, true, true
			return p.items, nil
		}
		if s.keep {
			s.records = s.records[:kept] // the end moved: only the last read shows it
		}
	}
}

// stepUp reads the next page above head (newest first, or any order).
// Reading to the end of a counted list, it asks for full pages, so that
// the last one shows whether anything lies beyond the count.
func (s *payoutSearch) stepUp() error {
	limit := s.size
	if s.counted && s.tail < s.end {
		limit = min(s.size, s.tail-s.head) // the gap below the part read at the end
	}
	p, err := s.read(s.head, limit)
	if err != nil || s.found != nil {
		return err
	}
	if !s.counted {
		if len(p.items) == 0 {
			s.tail = s.head // the end of a list without a count
		}
		s.head += len(p.items)
		return nil
	}
	if want := min(limit, p.count-s.head); len(p.items) < want {
		return s.short(s.head, len(p.items), want)
	}
	toEnd := s.tail >= s.end
	if p.count > s.end {
		// Newest first, new payouts shift the rest down: so does the
		// part already read at the tail.
		s.tail += p.count - s.end
		s.end = p.count
	}
	s.head += len(p.items)
	if toEnd && len(p.items) < limit {
		s.endSeen = true
	}
	if s.order == orderUnknown {
		// Pages too small (or createdAt too equal) to show the order so
		// far: learn it from the run read from the top.
		s.order = orderOf(s.top, p.items)
	}
	if len(p.items) > 0 {
		s.top = p.items
	}
	if s.order == newestFirst {
		s.reach(p.items, false)
	}
	return nil
}

// stepDown reads the page below tail (oldest first), newest to oldest.
func (s *payoutSearch) stepDown() error {
	lo := max(s.head, s.tail-s.size)
	p, err := s.read(lo, s.tail-lo)
	if err != nil || s.found != nil {
		return err
	}
	if len(p.items) < s.tail-lo {
		return s.short(lo, len(p.items), s.tail-lo)
	}
	s.end = max(s.end, p.count)
	s.tail = lo
	s.reach(p.items, true)
	return nil
}

// reach walks items from newest to oldest (reversed: the page lists the
// oldest first), checking that createdAt never goes up along the way. If
// it does, the list is not sorted and no cutoff can be trusted: the search
// reads everything. Otherwise it moves the edge down; once the edge is
// before the cutoff, decide stops the walk if the order is proven.
func (s *payoutSearch) reach(items []PayoutListItem, reversed bool) {
	for i := range items {
		it := &items[i]
		if reversed {
			it = &items[len(items)-1-i]
		}
		t := it.CreatedAt
		if t.IsZero() {
			continue
		}
		if !s.edge.IsZero() && t.After(s.edge) {
			s.order = unsorted
		}
		s.edge = t
	}
}

// orderOf reads the order from the pages' known createdAt, in list order.
func orderOf(pages ...[]PayoutListItem) listOrder {
	var prev time.Time
	up, down := false, false
	for _, page := range pages {
		for i := range page {
			t := page[i].CreatedAt
			if t.IsZero() {
				continue
			}
			up = up || (!prev.IsZero() && t.After(prev))
			down = down || (!prev.IsZero() && t.Before(prev))
			prev = t
		}
	}
	switch {
	case up && down:
		return unsorted
	case up:
		return oldestFirst
	case down:
		return newestFirst
	}
	return orderUnknown
}

// fingerprint identifies a page by its items' keys and statuses (FNV-1a).
func fingerprint(items []PayoutListItem, keyOf func(*PayoutListItem) uint64) uint64 {
	h := uint64(14695981039346656037)
	for i := range items {
		h = fnvAdd(fnvUint(h, keyOf(&items[i])), string(items[i].Status))
	}
	return h
}

// identity is a payout's key for the count proof: the fields it was
// created with, which the server shows the same on every read (orderId,
// customer, currency, network, amount, createdAt), never its status, paid
// address or merchant amount, nor the wallet's label and address or an id
// (a wallet may be renamed or edited, and the documented item has no id):
// a field that read differently twice would count one payout seen twice
// as two, and could fake a proof. Text is taken in ASCII lower case, the
// amount as a number (1.50 is 1.5), createdAt as an instant (its zone and
// format may differ). Two payouts may share it; so may two keys by a hash
// collision or a case fold, which only merges them: the proof is then
// harder to close, never easier.
func identity(it *PayoutListItem) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range [...]string{it.OrderID, it.CustomerID, it.Currency, it.Network, it.Amount.String()} {
		h = fnvAdd(h, s)
	}
	return fnvUint(h, uint64(it.CreatedAt.UnixNano()))
}

// fnvAdd adds s, in ASCII lower case, and a separator to the FNV-1a hash h.
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= 0xff // field separator: no byte of UTF-8 text is 0xff
	return h * 1099511628211
}

func fnvUint(h, v uint64) uint64 {
	for range 8 {
		h ^= v & 0xff
		h *= 1099511628211
		v >>= 8
	}
	return h
}

// noSkip gives up the skip: the search reads on to the end of the list.
func (s *payoutSearch) noSkip() { s.keep, s.records = false, nil }

// unfinished is the error for a look that used maxSearchRequests without
// covering the list or proving its order.
func (s *payoutSearch) unfinished() error {
	return &ResponseError{StatusCode: http.StatusOK, Method: http.MethodGet, Path: listPayouts.path,
		Reason: "payout list not searched to the end in " + strconv.Itoa(s.requests) + " requests: its order did not prove that the pages left unread hold only payouts created before the cutoff"}
}

func (s *payoutSearch) short(offset, got, want int) error {
	return s.inconsistent(fmt.Sprintf("the page at offset %d holds %d items where the count %d implies %d (the list stops before its count)", offset, got, s.end, want))
}

// inconsistent is the error for a list that cannot be evidence.
func (s *payoutSearch) inconsistent(why string) error {
	return &ResponseError{StatusCode: http.StatusOK, Method: http.MethodGet, Path: listPayouts.path,
		Reason: "payout list inconsistent after " + strconv.Itoa(s.requests) + " request(s): " + why}
}

// pageQuery is the query string of one list page.
func pageQuery(limit, offset int) string {
	q := "limit=" + strconv.Itoa(limit)
	if offset > 0 {
		q += "&offset=" + strconv.Itoa(offset)
	}
	return q
}

// errScanStopped ends a scan whose caller stopped reading.
var errScanStopped = errors.New("cryptopay: payout scan stopped by its caller")

// ScanPayoutsParams configures ScanPayouts.
type ScanPayoutsParams struct {
	// PageSize is the page size asked for (0: 100; a server may serve
	// fewer, and the scan then pages by what it serves).
	PageSize int
	// Progress, if set, is called after each payout yielded with how many
	// have been yielded and the list's count as last read (0 without one).
	Progress func(read, count int)
}

// ScanPayouts reads the whole payout list and yields the payouts its pages
// prove distinct, in no particular order, under the evidence rules of the
// payout search behind ReconcilePayout (the count proof of
// docs/reconcile.md):
//
//   - A payout's key is the fields it was created with that the list
//     shows: orderId, customer, currency, network, amount and createdAt
//     (text in any ASCII case; never status, paidAddress, merchantAmount,
//     the wallet or an id, which may read differently). For a key seen
//     with m copies in one page, m items are yielded (m payouts with that
//     key exist: a page lists each payout once), as soon as a page proves
//     them: a later page showing more copies yields the extra ones then.
//     An item is yielded as first read: its status and paid address may
//     have changed since. Where twins (payouts sharing a key) were read on
//     different pages, the extra ones yielded are the page's items that
//     match, by every field, none yielded before; if a twin changed
//     between the reads so that the pages cannot tell which were yielded,
//     the scan ends with a *ListProofError.
//   - The scan ends without error only when the pages prove that every
//     payout the list held at the last request was yielded (the sum of
//     the keys' copies reaches the list's count, or, without a count, the
//     offset of the empty page read last): every payout that existed when
//     the scan began, and those created while it ran that it saw, each
//     once. A quiet list takes one pass. When payouts were reordered
//     (sharing a createdAt), created or moved (a list ordered by a field
//     that changes) while it was read, it reads the list again from its
//     newest end, at most 2 passes, stopping as soon as the proof closes.
//   - If the proof does not close, the scan ends with a *ListProofError
//     (matching ErrUnexpectedResponse): Listed, Proven, and the orderIds
//     whose key was seen on more than one page (one payout seen twice, or
//     identical twins: the pages cannot tell). What was yielded is
//     distinct but maybe not the whole list.
//   - A list that repeats a page (the server ignores offset), ends before
//     its count, holds more than its count, shrinks, or shows more
//     distinct payouts than it holds ends the scan with a *ResponseError
//     (ErrUnexpectedResponse); an API or transport failure with that error.
//   - The proof assumes the count is the list's size when the page is
//     served (not a cached or lagging number), and, for a list without a
//     count, that an empty page means its end (docs/reconcile.md, "The
//     model").
//
// An error is yielded once and ends the iteration; breaking out of the
// loop stops reading. Memory grows by about 50 bytes a payout (its key's
// hash and copies, and the hash of every field of the item yielded, in
// two maps), never by the payouts themselves.
// GET /v1/payout/list, which the API marks as under development.
func (c *Client) ScanPayouts(ctx context.Context, params ScanPayoutsParams, opts ...Option) iter.Seq2[PayoutListItem, error] {
	return func(yield func(PayoutListItem, error) bool) {
		if params.PageSize < 0 {
			yield(PayoutListItem{}, &ValidationError{Field: "PageSize", Reason: "must not be negative"})
			return
		}
		s := newPayoutSearch(ctx, c, "", time.Time{}, opts)
		s.pageSize, s.maxReqs = cmp.Or(params.PageSize, defaultPageSize), math.MaxInt
		n := 0
		s.visit = func(it *PayoutListItem) bool {
			n++
			if params.Progress != nil {
				params.Progress(n, s.listed)
			}
			return yield(*it, nil)
		}
		if err := s.run(); err != nil && !errors.Is(err, errScanStopped) {
			yield(PayoutListItem{}, err)
		}
	}
}

// ListProofError is the answer "unknown" of a payout-list read whose
// pages do not prove that every payout was seen: payouts that share a
// createdAt swapped places between requests, payouts were created or
// moved (a list ordered by a field that changes) while it was read, or
// identical payouts lay on different pages, and the bounded re-reads did
// not settle it (see docs/reconcile.md). ReconcilePayout then answers
// PayoutStillUnknown (never PayoutNotCreated: do not resend; look again
// later), and ScanPayouts ends with it: the payouts yielded before it are
// distinct, but not proven to be the whole list. It matches
// ErrUnexpectedResponse.
type ListProofError struct {
	// Listed is U: how many payouts the list held at the last request
	// (its count, or the offset of its empty page); -1 when no request
	// showed it (a list without a count whose last page was not empty).
	Listed int
	// Proven is L: how many distinct payouts the pages read prove (for
	// each key, the most copies seen in one page). Proven < Listed, unless
	// a scan proved the count but could not tell apart twins read on two
	// pages (see ScanPayouts).
	Proven int
	// Since, when not zero, says that Listed and Proven count only the
	// payouts created at or after it: ReconcilePayout read the newest part
	// of a list proven sorted by createdAt, down to its cutoff.
	Since time.Time
	// Ambiguous are orderIds of payouts whose key (the fields that never
	// change) was seen on more than one page: one payout seen twice, or
	// two identical ones, the pages cannot tell. At most 100, in the
	// order seen; AmbiguousTotal counts them all. Server text: escape it
	// before showing it.
	Ambiguous      []string
	AmbiguousTotal int
	// Requests counts the list requests made.
	Requests int
}

// Error says what the pages proved, in numbers (no server text).
func (e *ListProofError) Error() string {
	listed, scope := "an unknown number", "payouts"
	if e.Listed >= 0 {
		listed = strconv.Itoa(e.Listed)
	}
	if !e.Since.IsZero() {
		scope = "payouts created since " + e.Since.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cryptopay: GET %s: the pages read in %d requests prove %d distinct %s where the list holds %s "+
		"(payouts reordered, created or moved while it was read, or identical payouts on different pages; %d orderIds seen on more than one page): whether one is missing is unknown",
		listPayouts.path, e.Requests, e.Proven, scope, listed, e.AmbiguousTotal)
}

// Is matches ErrUnexpectedResponse.
func (e *ListProofError) Is(target error) bool { return target == ErrUnexpectedResponse }
