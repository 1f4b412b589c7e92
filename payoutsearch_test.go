package cryptopay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListSearchRefusesInconsistentLists: a list that cannot be evidence
// gives an error, never found=false or PayoutNotCreated.
func TestListSearchRefusesInconsistentLists(t *testing.T) {
	tests := []struct {
		name   string
		total  int
		adjust func(*synthList)
	}{
		{"offset ignored", 250, func(l *synthList) { l.ignoreOffset = true }},
		{"offset ignored, no times", 250, func(l *synthList) { l.ignoreOffset, l.noTimes = true, true }},
		{"offset ignored, no count", 250, func(l *synthList) { l.ignoreOffset, l.noCount = true, true }},
		{"pages repeat from offset 100", 500, func(l *synthList) { l.repeatFrom = 100 }},
		{"pages repeat, no times", 500, func(l *synthList) { l.repeatFrom, l.noTimes = 100, true }},
		{"count larger than the list", 250, func(l *synthList) { l.countDelta = 750 }},
		{"count larger, no times", 250, func(l *synthList) { l.countDelta, l.noTimes = 750, true }},
		{"count smaller than the list", 250, func(l *synthList) { l.countDelta = -130 }},
		{"count equals the first page", 250, func(l *synthList) { l.countDelta = -150 }},
		{"count smaller, no times", 250, func(l *synthList) { l.countDelta, l.noTimes = -130, true }},
		{"count goes down", 250, func(l *synthList) { l.shrinkAfter = 2 }},
		{"empty first page with a count", 0, func(l *synthList) { l.countDelta = 40 }},
	}
	for _, tt := range tests {
		inBothOrders(t, tt.name, tt.total, tt.adjust, func(t *testing.T, l *synthList, c *Client) {
			it, found, err := findPayout(c, context.Background(), "never-sent")
			assert.ErrorIs(t, err, ErrUnexpectedResponse, "offsets %v", l.seen())
			var re *ResponseError
			require.ErrorAs(t, err, &re)
			assert.Contains(t, re.Reason, "payout list inconsistent")
			assert.False(t, found)
			assert.Nil(t, it)

			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: time.Now().Add(-time.Minute), ClockSkew: time.Duration(1<<62 - 1)})
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			require.NotNil(t, res)
			assert.Equal(t, PayoutStillUnknown, res.Verdict)
			assert.Positive(t, res.Requests)
			assert.Contains(t, res.Reason, "inconsistent")
		})
	}
}

// TestListSearchWithoutCountOrTimes: a server that sends neither a count
// nor createdAt is read to its empty page: slow, but never wrong.
func TestListSearchWithoutCountOrTimes(t *testing.T) {
	for name, newestFirst := range orders() {
		t.Run(name, func(t *testing.T) {
			l := newSynthList(250, newestFirst)
			l.noCount, l.noTimes = true, true
			c := listClient(t, l)
			_, found, err := findPayout(c, context.Background(), "o17")
			require.NoError(t, err)
			assert.True(t, found)
			l.requests.Store(0)
			_, found, err = findPayout(c, context.Background(), "never-sent")
			require.NoError(t, err)
			assert.False(t, found)
			assert.Equal(t, int64(4), l.requests.Load(), "three pages and the empty one")
		})
	}
}

// TestListSearchUnsortedList: when createdAt goes both ways the cutoff
// cannot be trusted, so the whole list is read: a payout listed where an
// early stop would never look is still found.
func TestListSearchUnsortedList(t *testing.T) {
	for name, newestFirst := range orders() {
		t.Run(name, func(t *testing.T) {
			l := newSynthList(1000, newestFirst)
			l.shuffled = true
			c := listClient(t, l)
			attempted := l.base.Add(900*time.Second + DefaultReconcileClockSkew)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "o501", AttemptedAt: attempted})
			require.NoError(t, err)
			assert.Equal(t, PayoutExists, res.Verdict, res.Reason)
			res, err = c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: attempted})
			require.NoError(t, err)
			assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
			assert.Contains(t, res.Reason, "the whole list was read")
		})
	}
}

// TestListSearchListGrowsMeanwhile: payouts created during the search
// move the last page (oldest first) or shift the rest (newest first);
// neither hides the payout.
func TestListSearchListGrowsMeanwhile(t *testing.T) {
	for name, newestFirst := range orders() {
		t.Run(name, func(t *testing.T) {
			l := newSynthList(1000, newestFirst)
			l.growEvery = 1
			c := listClient(t, l)
			for _, want := range []string{"o0", "o500", "o998"} {
				_, found, err := findPayout(c, context.Background(), want)
				require.NoError(t, err, want)
				assert.True(t, found, want)
			}
		})
	}
}

// movingList serves a list whose order depends on a field that changes
// (updatedAt, newest first, or the table's physical order): before request
// moveAt is served, payout target leaves its place and goes to the front
// or the end, so the rest shift and the count stays the same.
type movingList struct {
	synth   *synthList // formats the items (shuffled createdAt)
	mu      sync.Mutex
	order   []int // payout numbers in list order
	target  int
	moveAt  int64
	toFront bool
	n       atomic.Int64
}

func (m *movingList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := m.n.Add(1)
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit = min(max(limit, 1), 100)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n == m.moveAt {
		i := slices.Index(m.order, m.target)
		m.order = slices.Delete(m.order, i, i+1)
		if m.toFront {
			m.order = slices.Insert(m.order, 0, m.target)
		} else {
			m.order = append(m.order, m.target)
		}
	}
	b := []byte(`{"payout":[`)
	for pos := offset; pos < len(m.order) && pos < offset+limit; pos++ {
		if pos > offset {
			b = append(b, ',')
		}
		b = m.synth.item(b, m.order[pos], "o"+strconv.Itoa(m.order[pos]))
	}
	b = append(b, `],"count":`...)
	b = strconv.AppendInt(b, int64(len(m.order)), 10)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '}'))
}

// TestListSearchPayoutMovesWhileRead: a list not ordered by createdAt may
// be ordered by a field that changes, and the payout looked for is the one
// most likely to change (just created, now processing). If it moves from a
// page not yet read to one already read, no page read shows it: the
// search must not answer "not listed" then, but an error (still unknown).
func TestListSearchPayoutMovesWhileRead(t *testing.T) {
	tests := []struct {
		name    string
		noTimes bool
		target  int
		moveAt  int64
		toFront bool
	}{
		{"unsorted, moves to the front", false, 220, 2, true},
		{"no createdAt, moves to the front", true, 220, 2, true},
		{"unsorted, moves to the front late", false, 230, 3, true},
		{"no createdAt, moves to the end", true, 120, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, reconcile := range []bool{false, true} {
				synth := newSynthList(250, false)
				synth.shuffled, synth.noTimes = true, tt.noTimes
				m := &movingList{synth: synth, order: make([]int, 250), target: tt.target, moveAt: tt.moveAt, toFront: tt.toFront}
				for i := range m.order {
					m.order[i] = i
				}
				c, mux := setup(t)
				mux.Handle("GET /v1/payout/list", m)
				want := "o" + strconv.Itoa(tt.target)
				if !reconcile {
					it, found, err := findPayout(c, context.Background(), want)
					if err == nil {
						assert.True(t, found, "a payout moved while the list was read must not read as missing")
						assert.NotNil(t, it)
						continue
					}
					assert.ErrorIs(t, err, ErrUnexpectedResponse)
					assert.False(t, found)
					continue
				}
				res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: want,
					AttemptedAt: synth.base, ClockSkew: time.Duration(1<<62 - 1)})
				require.NotNil(t, res)
				assert.NotEqual(t, PayoutNotCreated, res.Verdict, res.Reason)
				if err != nil {
					assert.ErrorIs(t, err, ErrUnexpectedResponse)
					assert.Equal(t, PayoutStillUnknown, res.Verdict)
				}
			}
		})
	}
}

// tieList serves 250 payouts newest first; those at positions 95 to 104
// share one createdAt, and the server orders them differently on every
// other request (as a database may for rows whose sort key is equal,
// depending on LIMIT and OFFSET). Payouts from position 105 on are older
// than the cutoff used below.
type tieList struct {
	base time.Time
	grow bool // a new payout is created before every request but the first
	n    atomic.Int64
}

func (l *tieList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := l.n.Add(1)
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit = min(max(limit, 1), 100)
	var created int // new payouts, listed first
	if l.grow {
		created = int(n) - 1
	}
	b := []byte(`{"payout":[`)
	for at := offset; at < 250+created && at < offset+limit; at++ {
		if at > offset {
			b = append(b, ',')
		}
		b = l.item(b, at-created, n)
	}
	b = fmt.Appendf(b, `],"count":%d}`, 250+created)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// item renders the payout at pos (a negative pos: a new payout).
func (l *tieList) item(b []byte, pos int, n int64) []byte {
	i, at := pos, l.base.Add(-time.Duration(pos)*time.Minute)
	if pos >= 95 && pos < 105 {
		at = l.base.Add(-95 * time.Minute)
		if n%2 == 0 {
			i = 95 + 104 - pos // the tied payouts in reverse
		}
	}
	return fmt.Appendf(b, `{"status":"created","amount":1,"orderId":"o%d","customerId":"c","createdAt":%q}`, i, at.Format(time.RFC3339))
}

// TestListSearchTiedCreatedAtAcrossPages: payouts that share a createdAt
// may swap places between two requests; the payout looked for can then
// sit on the page read second in the first request's order and on the
// page read first in the second's. A walk stopped at the cutoff that saw
// fewer distinct payouts than the places it read must not answer "not
// listed".
func TestListSearchTiedCreatedAtAcrossPages(t *testing.T) {
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	tests := []struct {
		name   string
		target string
		grow   bool
	}{
		{"the tied payout on the second page first", "o100", false},
		{"another tied payout", "o102", false},
		{"another tied payout, the list growing", "o102", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &tieList{base: base, grow: tt.grow}
			c, mux := setup(t)
			mux.Handle("GET /v1/payout/list", l)
			// The cutoff falls between positions 104 and 105 (and 95 minutes
			// before base, where the tied payouts were created).
			attempted := base.Add(-100*time.Minute + DefaultReconcileClockSkew)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: tt.target, AttemptedAt: attempted})
			require.NotNil(t, res)
			assert.NotEqual(t, PayoutNotCreated, res.Verdict, res.Reason)
			if err != nil {
				assert.ErrorIs(t, err, ErrUnexpectedResponse)
			}
		})
	}
}

// TestListSearchGrowthIsNotAMove: payouts created while the list is read
// shift it (newest first) or lengthen it (oldest first); every payout the
// first count promised is still read, so "not listed" stays the answer.
func TestListSearchGrowthIsNotAMove(t *testing.T) {
	t.Parallel()
	for name, newestFirst := range orders() {
		for _, every := range []int{1, 2, 3} {
			t.Run(name+"/every "+strconv.Itoa(every), func(t *testing.T) {
				l := newSynthList(1000, newestFirst)
				l.growEvery = every
				c := listClient(t, l)
				_, found, err := findPayout(c, context.Background(), "never-sent")
				require.NoError(t, err)
				assert.False(t, found)
				res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: l.base.Add(500 * time.Second)})
				require.NoError(t, err)
				assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
			})
		}
	}
}

// orderedPayout is one payout of an orderedList.
type orderedPayout struct {
	orderID, currency, network, status, amount string
	at                                         time.Time // zero: no createdAt sent
}

// orderedList serves a payout list on loopback in exactly the order of
// items, at most maxPage a page, with the count len(items)+countDelta. It
// can also misbehave between requests.
type orderedList struct {
	mu         sync.Mutex
	items      []orderedPayout
	maxPage    int
	countDelta int
	short      bool                          // pages after the first that end before the list's end hold one item fewer
	overlap    bool                          // pages after the first start one item early
	change     func(n int64, l *orderedList) // called, under mu, before request n is served
	requests   atomic.Int64
}

func (l *orderedList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := l.requests.Add(1)
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(l.page(n, offset, limit))
}

// page renders the answer to request n for [offset, offset+limit).
func (l *orderedList) page(n int64, offset, limit int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.change != nil {
		l.change(n, l)
	}
	limit = min(max(limit, 1), l.maxPage)
	if l.overlap && offset > 0 {
		offset--
	}
	if l.short && offset > 0 && offset+limit < len(l.items) {
		limit--
	}
	b := []byte(`{"payout":[`)
	for pos := offset; pos < len(l.items) && pos < offset+limit; pos++ {
		if pos > offset {
			b = append(b, ',')
		}
		it := l.items[pos]
		b = fmt.Appendf(b, `{"status":%q,"amount":%s,"orderId":%q,"customerId":"c","payCurrency":{"name":%q},"payNetwork":{"name":%q}`,
			it.status, it.amount, it.orderID, it.currency, it.network)
		if !it.at.IsZero() {
			b = fmt.Appendf(b, `,"createdAt":%q`, it.at.Format(time.RFC3339Nano))
		}
		b = append(b, '}')
	}
	return fmt.Appendf(b, `],"count":%d}`, len(l.items)+l.countDelta)
}

// matrixN is the number of payouts besides the one looked for.
const matrixN = 40

// matrixPayouts are n payouts as on a real account: a minute apart, the
// newest 3 within the default clock-skew margin before attempt (so after
// the search's cutoff), with currency, status and amount mixed.
func matrixPayouts(attempt time.Time, n int) []orderedPayout {
	curs := [...][2]string{{"usdt", "tron"}, {"btc", "bitcoin"}, {"eth", "ethereum"}}
	statuses := [...]string{"paid", "paid", "failed", "processing"}
	items := make([]orderedPayout, n)
	for i := range items {
		h := uint32(i+1) * 2654435761
		at := attempt.Add(-time.Duration(n-i+2) * time.Minute)
		if i >= n-3 {
			at = attempt.Add(-time.Duration(n-i) * 20 * time.Second)
		}
		c := curs[(h>>8)%3]
		items[i] = orderedPayout{orderID: "o" + strconv.Itoa(i), currency: c[0], network: c[1],
			status: statuses[(h>>12)%4], amount: strconv.Itoa(int(h%997)) + "." + strconv.Itoa(int(h%90)+10), at: at}
	}
	return items
}

// matrixTarget is the payout looked for, created at the attempt; variant
// picks its currency, status and amount, so that a list grouped by one of
// them puts it in the first, a middle or the last group.
func matrixTarget(attempt time.Time, variant int) orderedPayout {
	curs := [...][2]string{{"btc", "bitcoin"}, {"eth", "ethereum"}, {"usdt", "tron"}, {"zec", "zcash"}}
	statuses := [...]string{"created", "failed", "paid", "review"}
	amounts := [...]string{"0.01", "500.50", "999.99", "10000"}
	c := curs[variant%4]
	return orderedPayout{orderID: "target", currency: c[0], network: c[1], status: statuses[variant%4], amount: amounts[variant%4], at: attempt}
}

// quiet is base as on a quiet account: every payout paid but the newest
// two, still processing.
func quiet(base []orderedPayout) []orderedPayout {
	out := sortBy(base, newer)
	for i := range out {
		out[i].status = "paid"
		if i < 2 {
			out[i].status = "processing"
		}
	}
	return out
}

// sortBy returns items sorted by less, stably.
func sortBy(items []orderedPayout, cmpf func(a, b orderedPayout) int) []orderedPayout {
	out := slices.Clone(items)
	slices.SortStableFunc(out, cmpf)
	return out
}

func newer(a, b orderedPayout) int { return b.at.Compare(a.at) }
func older(a, b orderedPayout) int { return a.at.Compare(b.at) }
func byAmount(a, b orderedPayout) int {
	x, _ := strconv.ParseFloat(a.amount, 64)
	y, _ := strconv.ParseFloat(b.amount, 64)
	return cmpFloat(x, y)
}
func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// insertAt puts target at pos (clamped) in items.
func insertAt(items []orderedPayout, target *orderedPayout, pos int) []orderedPayout {
	out := slices.Clone(items)
	if target == nil {
		return out
	}
	return slices.Insert(out, min(pos, len(out)), *target)
}

// listOrderCase is one order of the list-order matrix. arrange lays out
// the payouts, with the target (nil: absent) given by variant: its
// position, or which group its fields put it in. absent is the verdict
// when the target is not in the list; fast says that verdict may come
// from the cutoff (the order proven), every other order must be read
// whole; absentFor, if set, gives the verdict by page size instead.
type listOrderCase struct {
	name      string
	arrange   func(base []orderedPayout, target *orderedPayout, variant int) []orderedPayout
	adjust    func(l *orderedList)
	variants  func(pageSize int) []int
	absent    ReconcileVerdict
	absentFor func(pageSize int) ReconcileVerdict
	fast      bool
}

// groups are the variants of a target placed by its fields.
func groups(int) []int { return []int{0, 1, 2, 3} }

// places are the variants of a target placed by position: both ends, the
// middle, and either side of the first page boundaries.
func places(pageSize int) []int {
	ps := []int{0, 1, matrixN / 2, matrixN - 1, matrixN, pageSize - 1, pageSize, pageSize + 1, 2 * pageSize}
	slices.Sort(ps)
	return slices.Compact(slices.DeleteFunc(ps, func(p int) bool { return p < 0 || p > matrixN }))
}

func listOrderCases() []listOrderCase {
	sorted := func(cmpf func(a, b orderedPayout) int) func([]orderedPayout, *orderedPayout, int) []orderedPayout {
		return func(base []orderedPayout, target *orderedPayout, _ int) []orderedPayout {
			return sortBy(insertAt(base, target, 0), cmpf)
		}
	}
	placed := func(arrange func([]orderedPayout) []orderedPayout) func([]orderedPayout, *orderedPayout, int) []orderedPayout {
		return func(base []orderedPayout, target *orderedPayout, pos int) []orderedPayout {
			return insertAt(arrange(base), target, pos)
		}
	}
	then := func(first, second func(a, b orderedPayout) int) func(a, b orderedPayout) int {
		return func(a, b orderedPayout) int {
			if c := first(a, b); c != 0 {
				return c
			}
			return second(a, b)
		}
	}
	byCurrency := func(a, b orderedPayout) int { return cmpString(a.currency, b.currency) }
	byStatus := func(a, b orderedPayout) int { return cmpString(a.status, b.status) }
	newestFirstList := func(base []orderedPayout) []orderedPayout { return sortBy(base, newer) }
	quietly := func(arrange func([]orderedPayout, *orderedPayout, int) []orderedPayout) func([]orderedPayout, *orderedPayout, int) []orderedPayout {
		return func(base []orderedPayout, target *orderedPayout, v int) []orderedPayout {
			return arrange(quiet(base), target, v)
		}
	}
	return []listOrderCase{
		// A quiet account: the fields differ from end to end (status) but
		// not across the gap, the case gapProven proves.
		{name: "quiet account, newest first", arrange: quietly(sorted(newer)), variants: groups, absent: PayoutNotCreated, fast: true},
		{name: "quiet account, status then newest first", arrange: quietly(sorted(then(byStatus, newer))), variants: groups, absent: PayoutNotCreated},
		{name: "quiet account, status then currency then newest first", arrange: quietly(sorted(then(byStatus, then(byCurrency, newer)))), variants: groups, absent: PayoutNotCreated},
		{name: "quiet account, currency then status then newest first", arrange: quietly(sorted(then(byCurrency, then(byStatus, newer)))), variants: groups, absent: PayoutNotCreated},
		{name: "newest first", arrange: sorted(newer), variants: groups, absent: PayoutNotCreated, fast: true},
		{name: "oldest first", arrange: sorted(older), variants: groups, absent: PayoutNotCreated, fast: true},
		{name: "currency then newest first", arrange: sorted(then(byCurrency, newer)), variants: groups, absent: PayoutNotCreated},
		{name: "currency then oldest first", arrange: sorted(then(byCurrency, older)), variants: groups, absent: PayoutNotCreated},
		{name: "currency descending then newest first", arrange: sorted(then(func(a, b orderedPayout) int { return byCurrency(b, a) }, newer)), variants: groups, absent: PayoutNotCreated},
		{name: "status then newest first", arrange: sorted(then(byStatus, newer)), variants: groups, absent: PayoutNotCreated},
		{name: "amount ascending", arrange: sorted(byAmount), variants: groups, absent: PayoutNotCreated},
		{name: "amount descending", arrange: sorted(func(a, b orderedPayout) int { return byAmount(b, a) }), variants: groups, absent: PayoutNotCreated},
		{name: "random", arrange: placed(func(base []orderedPayout) []orderedPayout {
			out := slices.Clone(base)
			r := rand.New(rand.NewPCG(1, 2)) // the same shuffle every run
			r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out
		}), variants: places, absent: PayoutNotCreated},
		{name: "reversed mid-way", arrange: placed(func(base []orderedPayout) []orderedPayout {
			out := newestFirstList(base)
			slices.Reverse(out[len(out)/2:])
			return out
		}), variants: places, absent: PayoutNotCreated},
		{name: "oldest first reversed mid-way", arrange: placed(func(base []orderedPayout) []orderedPayout {
			out := sortBy(base, older)
			slices.Reverse(out[len(out)/2:])
			return out
		}), variants: places, absent: PayoutNotCreated},
		{name: "all createdAt equal", arrange: placed(func(base []orderedPayout) []orderedPayout {
			out := slices.Clone(base)
			for i := range out {
				out[i].at = base[0].at
			}
			return out
		}), variants: places, absent: PayoutNotCreated},
		{name: "no createdAt", arrange: placed(func(base []orderedPayout) []orderedPayout {
			out := newestFirstList(base)
			for i := range out {
				out[i].at = time.Time{}
			}
			return out
		}), variants: places, absent: PayoutNotCreated},
		{name: "count one more than the list", arrange: sorted(newer), adjust: func(l *orderedList) { l.countDelta = 1 }, variants: groups, absent: PayoutStillUnknown},
		{name: "count one less than the list", arrange: sorted(newer), adjust: func(l *orderedList) { l.countDelta = -1 }, variants: groups, absent: PayoutStillUnknown},
		// Pages of 17 or more reach the list's end on every read after the
		// first (the far end, then the gap at most a page wide): none is short.
		{name: "short pages", arrange: sorted(newer), adjust: func(l *orderedList) { l.short = true }, variants: groups, absentFor: func(ps int) ReconcileVerdict {
			if ps <= 16 {
				return PayoutStillUnknown
			}
			return PayoutNotCreated
		}},
		{name: "pages overlap (duplicates)", arrange: sorted(newer), adjust: func(l *orderedList) { l.overlap = true }, variants: groups, absent: PayoutStillUnknown},
		{name: "status then newest first, the target's status changes", arrange: sorted(then(byStatus, newer)), adjust: func(l *orderedList) {
			l.change = func(n int64, l *orderedList) {
				i := slices.IndexFunc(l.items, func(p orderedPayout) bool { return p.orderID == "target" })
				if n != 2 || i < 0 {
					return
				}
				t := l.items[i]
				t.status = "zzz-settled" // to the end of the list
				l.items = append(slices.Delete(l.items, i, i+1), t)
				if i == len(l.items)-1 {
					t.status = "0-new" // it was last: to the front
					l.items = append([]orderedPayout{t}, l.items[:len(l.items)-1]...)
				}
			}
		}, variants: groups, absent: PayoutNotCreated},
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// matrixPageSizes are the server's page sizes: 1 to more than the list.
// Under -race (the README's test command) 2, 3 and 39 are left out, 40 %
// of the matrix's requests; CI's run without -race (.ci/run, the newest
// Go's step) runs them all.
var matrixPageSizes = func() []int {
	if raceDetector {
		return []int{1, 7, 16, 40, 41, 100}
	}
	return []int{1, 2, 3, 7, 16, 39, 40, 41, 100}
}()

// TestListSearchOrderMatrix: for every list order, page size and place of
// the payout looked for, the search never answers "not created" while the
// list holds it; with the payout absent it answers what the evidence
// proves: "not created" after reading the whole list or an order it proved
// (fast), "still unknown" for a list that contradicts itself.
func TestListSearchOrderMatrix(t *testing.T) {
	t.Parallel()
	attempt := time.Now().Add(-time.Minute).UTC() // the settle time has passed
	base := matrixPayouts(attempt, matrixN)
	for _, oc := range listOrderCases() {
		for _, ps := range matrixPageSizes {
			t.Run(oc.name+"/page "+strconv.Itoa(ps), func(t *testing.T) {
				l := &orderedList{maxPage: ps}
				c, err := handlerClient(l) // in process: the list is all it reads
				require.NoError(t, err)
				serve := func(items []orderedPayout) {
					l.mu.Lock()
					defer l.mu.Unlock()
					l.items, l.countDelta, l.short, l.overlap, l.change = items, 0, false, false, nil
					if oc.adjust != nil {
						oc.adjust(l)
					}
					l.requests.Store(0)
				}
				for _, v := range oc.variants(ps) {
					target := matrixTarget(attempt, v)
					serve(oc.arrange(base, &target, v))
					for _, at := range []time.Time{attempt, {}} {
						res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: at})
						require.NotNil(t, res)
						require.NotEqual(t, PayoutNotCreated, res.Verdict, "variant %d, attempt %v: %s", v, at, res.Reason)
						if err != nil {
							assert.ErrorIs(t, err, ErrUnexpectedResponse)
							assert.Equal(t, PayoutStillUnknown, res.Verdict)
						}
					}
				}
				serve(oc.arrange(base, nil, 0))
				res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: attempt})
				require.NotNil(t, res)
				absent := oc.absent
				if oc.absentFor != nil {
					absent = oc.absentFor(ps)
				}
				assert.Equal(t, absent, res.Verdict, res.Reason)
				if absent == PayoutStillUnknown {
					assert.ErrorIs(t, err, ErrUnexpectedResponse)
					return
				}
				require.NoError(t, err)
				if !oc.fast {
					assert.Contains(t, res.Reason, "the whole list was read", "an order that cannot be proven is read to its end")
				}
			})
		}
	}
}

// TestListSearchRequestsPerSearch counts the list requests of the common
// searches on 1,000 payouts, pages of 100 (and of 1), in the two orders
// the search can prove: the payout just created, and one never created.
// The counts are exact: a change is a change of cost, up or down.
func TestListSearchRequestsPerSearch(t *testing.T) {
	attempt := time.Now().Add(-time.Minute).UTC()
	base := matrixPayouts(attempt, 1000)
	target := matrixTarget(attempt, 2)
	tests := []struct {
		name     string
		order    func(a, b orderedPayout) int
		pageSize int
		present  bool
		quiet    bool // every payout paid but the newest two
		want     int
	}{
		{"newest first, created", newer, 100, true, false, 1},
		{"newest first, never created", newer, 100, false, false, 2},
		{"oldest first, created", older, 100, true, false, 2},
		{"oldest first, never created", older, 100, false, false, 2},
		// Pages of 1: the first, the probe at the count, then 16 payouts
		// in a row at each end before the proof holds.
		{"newest first, never created, pages of 1", newer, 1, false, false, 33},
		{"oldest first, never created, pages of 1", older, 1, false, false, 33},
		// Status differs from end to end, but not across the gap.
		{"newest first, never created, quiet account", newer, 100, false, true, 2},
		{"oldest first, never created, quiet account", older, 100, false, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := base
			if tt.quiet {
				items = quiet(base)
			}
			if tt.present {
				items = insertAt(items, &target, 0)
			}
			c, mux := setup(t)
			l := &orderedList{maxPage: tt.pageSize, items: sortBy(items, tt.order)}
			mux.Handle("GET /v1/payout/list", l)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: attempt})
			require.NoError(t, err)
			want := map[bool]ReconcileVerdict{true: PayoutExists, false: PayoutNotCreated}[tt.present]
			assert.Equal(t, want, res.Verdict, res.Reason)
			t.Logf("%d requests", res.Requests)
			assert.Equal(t, tt.want, res.Requests)
			assert.Equal(t, int64(res.Requests), l.requests.Load())
		})
	}
}

// TestListSearchBounded: a list whose order cannot be proven is read to
// its end, but no further than maxSearchRequests pages a look; beyond
// them the answer is "still unknown", whether or not the payout lies in
// the part left unread.
func TestListSearchBounded(t *testing.T) {
	t.Parallel()
	attempt := time.Now().Add(-time.Minute).UTC()
	base := matrixPayouts(attempt, maxSearchRequests+100)
	byCurrency := func(a, b orderedPayout) int {
		if c := cmpString(a.currency, b.currency); c != 0 {
			return c
		}
		return newer(a, b)
	}
	target := matrixTarget(attempt, 2)
	for _, present := range []bool{false, true} {
		t.Run(map[bool]string{false: "never created", true: "created, in the part unread"}[present], func(t *testing.T) {
			items := sortBy(base, byCurrency)
			if present {
				items = insertAt(items, &target, len(items)-50) // past the places read from either end
			}
			c, mux := setup(t)
			l := &orderedList{maxPage: 1, items: items}
			mux.Handle("GET /v1/payout/list", l)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: attempt})
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			require.NotNil(t, res)
			assert.Equal(t, PayoutStillUnknown, res.Verdict, res.Reason)
			assert.Contains(t, res.Reason, "not searched to the end")
			assert.Equal(t, maxSearchRequests, res.Requests)
			assert.Equal(t, int64(maxSearchRequests), l.requests.Load())
		})
	}
}

// handlerTransport serves requests with h in process (for the fuzz target).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// FuzzListSearchOrder lays out lists of the matrix's orders with the
// fuzzer's size, page size, place of the payout and shuffle, and checks
// the safety property: never "not created" while the list holds the
// payout, whatever the order; errors are typed and give "still unknown".
func FuzzListSearchOrder(f *testing.F) {
	for kind := range len(listOrderCases()) {
		f.Add(uint8(kind), uint8(7), uint8(40), uint8(20), true)
		f.Add(uint8(kind), uint8(1), uint8(45), uint8(44), true)
		f.Add(uint8(kind), uint8(3), uint8(60), uint8(0), false)
	}
	attempt := time.Now().Add(-time.Minute).UTC()
	cases := listOrderCases()
	f.Fuzz(func(t *testing.T, kind, pageSize, n, variant uint8, present bool) {
		oc := cases[int(kind)%len(cases)]
		size := int(n)%120 + 1
		base := matrixPayouts(attempt, size)
		var target *orderedPayout
		if present {
			tp := matrixTarget(attempt, int(variant))
			target = &tp
		}
		l := &orderedList{maxPage: int(pageSize)%50 + 1, items: oc.arrange(base, target, int(variant)%(size+1))}
		if oc.adjust != nil {
			oc.adjust(l)
		}
		c, err := NewClient(testBase, testKey, WithHTTPClient(&http.Client{Transport: handlerTransport{l}}), WithRetryPolicy(RetryPolicy{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{attempt, {}} {
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: at})
			switch {
			case res == nil:
				t.Fatalf("no result: %v", err)
			case err != nil && (res.Verdict != PayoutStillUnknown || !errors.Is(err, ErrUnexpectedResponse)):
				t.Fatalf("error %v with verdict %s", err, res.Verdict)
			case present && res.Verdict == PayoutNotCreated:
				t.Fatalf("%s, page %d, %d payouts, variant %d: not created while listed: %s", oc.name, l.maxPage, size, variant, res.Reason)
			case present && res.Verdict == PayoutExists && res.Payout.OrderID != "target":
				t.Fatalf("found the wrong payout %+v", res.Payout)
			}
		}
	})
}

// TestListSearchCurrencyThenCreatedAt is the reported case at its real
// size: 1,000 payouts listed by currency, then newest first, every page
// consistent with the count and every createdAt true. The payout just
// created (usdt) heads the last group, past the cutoff's place in the
// first group; the search used to stop there and answer "not created".
func TestListSearchCurrencyThenCreatedAt(t *testing.T) {
	attempt := time.Now().Add(-time.Minute).UTC()
	base := matrixPayouts(attempt, 1000)
	target := matrixTarget(attempt, 2) // usdt
	byCurrency := func(a, b orderedPayout) int {
		if c := cmpString(a.currency, b.currency); c != 0 {
			return c
		}
		return newer(a, b)
	}
	for _, present := range []bool{true, false} {
		t.Run(map[bool]string{true: "created", false: "never created"}[present], func(t *testing.T) {
			items := base
			if present {
				items = insertAt(base, &target, 0)
			}
			c, mux := setup(t)
			l := &orderedList{maxPage: 100, items: sortBy(items, byCurrency)}
			mux.Handle("GET /v1/payout/list", l)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "target", AttemptedAt: attempt})
			require.NoError(t, err)
			if present {
				assert.Equal(t, PayoutExists, res.Verdict, res.Reason)
				return
			}
			assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
			assert.Contains(t, res.Reason, "the whole list was read")
			// The first page, the far one (901-999), 100-899 and 900: each place once.
			assert.Equal(t, 11, res.Requests)
		})
	}
}

// scanAll runs ScanPayouts to its end: the orderIds yielded, with how
// many times each, and the error that ended it.
func scanAll(c *Client, params ScanPayoutsParams) (map[string]int, error) {
	seen := make(map[string]int)
	for it, err := range c.ScanPayouts(context.Background(), params) {
		if err != nil {
			return seen, err
		}
		seen[it.OrderID]++
	}
	return seen, nil
}

// TestScanPayoutsYieldsEachOnce: every payout of the list once, in both
// orders, with a list that grows while it is read, in the pages the
// list's size needs (plus the far end's read); a list that cannot be
// evidence ends the scan with ErrUnexpectedResponse.
func TestScanPayoutsYieldsEachOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		total    int
		adjust   func(*synthList)
		requests int // 0: not checked
		err      bool
	}{
		{"empty", 0, func(*synthList) {}, 1, false},
		{"one page", 40, func(*synthList) {}, 2, false},
		{"250", 250, func(*synthList) {}, 3, false},
		{"1000 in pages of 20", 1000, func(l *synthList) { l.maxPage = 20 }, 51, false},
		{"grows while read", 250, func(l *synthList) { l.growEvery = 2 }, 0, false},
		{"offset ignored", 250, func(l *synthList) { l.ignoreOffset = true }, 0, true},
		{"count smaller than the list", 250, func(l *synthList) { l.countDelta = -130 }, 0, true},
		{"count larger than the list", 250, func(l *synthList) { l.countDelta = 50 }, 0, true},
		{"count goes down", 250, func(l *synthList) { l.shrinkAfter = 2 }, 0, true},
	}
	for _, tt := range tests {
		inBothOrders(t, tt.name, tt.total, tt.adjust, func(t *testing.T, l *synthList, c *Client) {
			var last, count int
			seen, err := scanAll(c, ScanPayoutsParams{Progress: func(n, cnt int) { last, count = n, cnt }})
			if tt.err {
				require.ErrorIs(t, err, ErrUnexpectedResponse)
				return
			}
			require.NoError(t, err)
			for id, n := range seen {
				assert.Equal(t, 1, n, "orderId %s yielded %d times", id, n)
			}
			for i := range tt.total {
				assert.Contains(t, seen, "o"+strconv.Itoa(i))
			}
			assert.Equal(t, len(seen), last)
			if tt.requests > 0 {
				assert.Equal(t, int64(tt.requests), l.requests.Load(), "offsets %v", l.seen())
				assert.Equal(t, tt.total, count)
			}
		})
	}
}

// TestScanPayoutsStops: breaking out of the loop stops reading, and a
// negative page size is refused before anything is sent.
func TestScanPayoutsStops(t *testing.T) {
	l := newSynthList(1000, false)
	c := listClient(t, l)
	for range c.ScanPayouts(context.Background(), ScanPayoutsParams{}) {
		break
	}
	assert.Equal(t, int64(1), l.requests.Load())
	_, err := scanAll(c, ScanPayoutsParams{PageSize: -1})
	require.ErrorIs(t, err, ErrInvalidParams)
	assert.Equal(t, int64(1), l.requests.Load())
}

// inBothOrders runs f as a subtest on a synthetic list of total payouts
// (edited by adjust), newest first and oldest first.
func inBothOrders(t *testing.T, name string, total int, adjust func(*synthList), f func(t *testing.T, l *synthList, c *Client)) {
	for order, newestFirst := range orders() {
		t.Run(name+"/"+order, func(t *testing.T) {
			l := newSynthList(total, newestFirst)
			adjust(l)
			f(t, l, listClient(t, l))
		})
	}
}
