package cryptopay

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// This file is the payout-list search behind ReconcilePayout and
// WaitForPayout by orderId. Its answer "not listed" tells a caller that resending a
// payout is safe, so it is given only on evidence:
//
//   - The first page (offset 0) gives the count and the server's page size.
//   - The last page (read from count-size+1, so that it cannot be full
//     unless something lies beyond the count) holds the newest payouts when
//     the list is oldest first; the first page holds them when it is newest
//     first. The order is learned from the pages' createdAt. So the newest
//     payout is found in at most 2 requests (a list that grows while it is
//     read costs up to 2 more).
//   - The pages in between are read from the newest end towards the oldest.
//     With a cutoff (an attempt time), the search stops at the first payout
//     created before it: the list is sorted, so the rest is older still.
//     Without one, or when the list is not sorted by createdAt, every page
//     is read.
//   - A page read twice (the server ignores offset), a list that ends
//     before its count, more items than the count, or a count that shrinks
//     is an error (ErrUnexpectedResponse), never "not listed".
//   - So is a search that saw fewer distinct payouts than the first count
//     promised in the places it read (checkDistinct): payouts moved between
//     pages while the list was read (it is ordered by a field that changes,
//     such as updatedAt, or payouts sharing a createdAt swap places between
//     requests), and the one looked for may have moved from a page not yet
//     read to one already read.

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
	ctx      context.Context
	opts     []Option
	orderID  string
	cutoff   time.Time // payouts created before it cannot be the one; zero: none
	size     int       // the page size the server serves
	head     int
	tail     int
	end      int
	counted  bool // the server sends a count (without one, read to an empty page)
	endSeen  bool // a page showed the end of the list (it was not full)
	read1    bool // the first page has been read
	order    listOrder
	edge     time.Time // the oldest createdAt the newest-to-oldest walk reached
	stopped  bool      // the walk reached the cutoff
	requests int
	pages    map[uint64]int // fingerprint of each page read -> its offset
	found    *PayoutListItem
	count0   int                 // the count the first page sent
	distinct map[uint64]struct{} // identity of each payout read (see identity)
}

func newPayoutSearch(ctx context.Context, c *Client, orderID string, cutoff time.Time, opts []Option) *payoutSearch {
	return &payoutSearch{c: c, ctx: ctx, opts: opts, orderID: orderID, cutoff: cutoff, pages: make(map[uint64]int), distinct: make(map[uint64]struct{})}
}

// run searches until the payout is found (s.found), the list is covered
// or the cutoff reached (nil error, s.found nil), or the evidence fails
// (an error: the answer stays unknown).
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
	for err == nil && s.more() {
		if s.order == oldestFirst {
			err = s.stepDown()
		} else {
			err = s.stepUp()
		}
	}
	if err == nil && s.found == nil {
		err = s.checkDistinct()
	}
	return err
}

// checkDistinct refuses a search that read fewer distinct payouts than
// it must have: a payout was then seen twice and another not at all (see
// the file's header). Every payout the first count promised has been read
// except those in the gap [head, tail) the walk left unread (a stopped
// walk). Payouts created meanwhile only add: at the top of a newest-first
// list they shift the rest (a payout read twice, and tail moved up with
// them), at the end of an oldest-first one they lie beyond the count.
func (s *payoutSearch) checkDistinct() error {
	if !s.counted {
		return nil
	}
	want := s.count0 - max(0, s.tail-s.head)
	if len(s.distinct) >= want {
		return nil
	}
	return s.inconsistent(fmt.Sprintf("it showed %d distinct payouts where at least %d were read (payouts moved between pages while it was read, or share a createdAt and swapped places)", len(s.distinct), want))
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
	for i := range p.items {
		s.distinct[identity(&p.items[i])] = struct{}{}
		if p.items[i].OrderID == s.orderID {
			s.found = &p.items[i]
			break
		}
	}
	return p, nil
}

// consistent refuses a page that contradicts the pages read before.
func (s *payoutSearch) consistent(offset int, p searchPage) error {
	if len(p.items) > 0 {
		fp := fingerprint(p.items)
		if at, seen := s.pages[fp]; seen && at != offset {
			return s.inconsistent(fmt.Sprintf("the page at offset %d repeats the page at offset %d (is the offset ignored?)", offset, at))
		}
		s.pages[fp] = offset
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
	p, err := s.read(0, defaultPageSize)
	if err != nil || s.found != nil {
		return nil, err
	}
	s.read1, s.counted = true, p.counted
	s.head, s.size = len(p.items), max(len(p.items), 1)
	s.tail, s.end, s.count0 = p.count, p.count, p.count
	s.endSeen = len(p.items) == 0
	if !p.counted {
		s.tail = math.MaxInt // read on to an empty page
	}
	if p.count > 0 && len(p.items) == 0 {
		return nil, s.inconsistent(fmt.Sprintf("the first page is empty but the count is %d", p.count))
	}
	s.order = orderOf(p.items)
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
			s.tail, s.endSeen = lo, true
			return p.items, nil
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
// reads everything. Otherwise, once it has reached a payout created before
// the cutoff, the search stops.
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
	if s.order != unsorted && !s.cutoff.IsZero() && !s.edge.IsZero() && s.edge.Before(s.cutoff) {
		s.stopped = true
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

// fingerprint identifies a page by its items' identities (FNV-1a).
func fingerprint(items []PayoutListItem) uint64 {
	h := uint64(14695981039346656037)
	for i := range items {
		it := &items[i]
		for _, s := range [...]string{it.ID, it.OrderID, string(it.Status), it.CustomerID, it.WalletAddress} {
			h = fnvAdd(h, s)
		}
		h = fnvUint(h, uint64(it.CreatedAt.UnixNano()))
	}
	return h
}

// identity identifies a payout across reads by the fields that cannot
// change as it proceeds (not its status, amounts or paid address: a field
// that changed between two reads would count one payout twice and could
// hide one that was missed).
func identity(it *PayoutListItem) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range [...]string{it.ID, it.OrderID, it.CustomerID, it.WalletAddress, it.Currency, it.Network} {
		h = fnvAdd(h, s)
	}
	return fnvUint(h, uint64(it.CreatedAt.UnixNano()))
}

func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
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
