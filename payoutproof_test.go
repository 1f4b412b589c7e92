package cryptopay

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proofMaxN is the largest list the exhaustive small-list test runs
// (TestListProofSmallLists): 0 means 5, or 3 under the race detector
// (which makes each run ten times slower); -proof.n=8 runs every size to 8.
var proofMaxN = flag.Int("proof.n", 0, "largest list TestListProofSmallLists runs (0: 5, or 3 with -race)")

// proofPayout is one payout of a proofList.
type proofPayout struct {
	orderID string
	at      int // createdAt, in seconds after the list's base: equal values tie
	amount  string
	status  string
}

// proofEvent is what happens to a proofList before one request.
type proofEvent int

const (
	evNone       proofEvent = iota
	evCreate                // a payout created, newer than every other
	evCreateTied            // a payout created in the newest payout's second (a tie)
	evUpdate                // the hidden payout's status changes
	evCreateOld             // a payout created with a createdAt older than every other (backdated; not in proofScenarios)
)

func (e proofEvent) String() string {
	return [...]string{"quiet", "create", "create tied", "update", "create backdated"}[e]
}

// Adversary modes: how a proofList orders the payouts that share a
// createdAt, for each request anew.
const (
	advFixed    = iota // always the same order (a quiet list)
	advRotate          // rotated by the request's number
	advHideBack        // the hidden payout out of the page, behind it if it can (in a place already read, newest first)
	advHideNext        // out of the page, ahead of it if it can
	advModes
)

// proofList is a payout list that keeps the model of docs/reconcile.md
// (payouts never deleted, each page a window of the list at its request,
// its count the list's size then) and plays against the search within
// it: the payouts sharing a createdAt are ordered anew on every request
// (advRotate, or advHide*: out of the page asked for, when the tie allows
// it, the payout hidden), and one payout is created or updated before
// request eventAt.
type proofList struct {
	mu          sync.Mutex
	items       []proofPayout
	newestFirst bool
	counted     bool
	maxPage     int
	mode        int
	hide        string // the orderId the adversary hides
	event       proofEvent
	eventAt     int
	requests    int
	// A server that bends the model (the attacks of TestListProofAttacks):
	// render adds JSON fields to an item as served at a request (a key
	// given twice: the decoder keeps the last), countAt gives the count
	// served instead of the list's size, and window the positions served
	// instead of [offset, offset+limit).
	render  func(request int, p proofPayout) string
	countAt func(request, size int) int
	window  func(request, offset, limit, size int) (lo, hi int)
	reorder func(request int, list []proofPayout) []proofPayout // the list as served at a request, from its sorted arrangement
}

func (l *proofList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, limit := listQuery(r, l.maxPage)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if l.requests == l.eventAt {
		l.happen()
	}
	list := l.arrange(offset, limit)
	if l.reorder != nil {
		list = l.reorder(l.requests, list)
	}
	if l.render == nil && l.countAt == nil && l.window == nil && l.reorder == nil {
		writeProofPage(w, list, offset, limit, l.counted)
		return
	}
	lo, hi := offset, offset+limit
	if l.window != nil {
		lo, hi = l.window(l.requests, offset, limit, len(list))
	}
	count := len(list)
	if l.countAt != nil {
		count = l.countAt(l.requests, count)
	}
	req := l.requests
	writeProofItems(w, list, lo, hi, count, l.counted, func(p proofPayout) string {
		if l.render == nil {
			return ""
		}
		return l.render(req, p)
	})
}

// listQuery reads a list request's offset and limit (1 to maxPage: the
// server serves the limit, up to its page size).
func listQuery(r *http.Request, maxPage int) (offset, limit int) {
	q := r.URL.Query()
	limit, _ = strconv.Atoi(q.Get("limit"))
	offset, _ = strconv.Atoi(q.Get("offset"))
	return offset, min(max(limit, 1), maxPage)
}

// writeProofPage answers with the payouts at [offset, offset+limit) of
// list, and its size as the count if counted.
func writeProofPage(w http.ResponseWriter, list []proofPayout, offset, limit int, counted bool) {
	writeProofItems(w, list, offset, offset+limit, len(list), counted, nil)
}

// writeProofItems answers with the payouts at [lo, hi) of list (within
// it), each with the fields extra adds (nil: none), and count if counted.
func writeProofItems(w http.ResponseWriter, list []proofPayout, lo, hi, count int, counted bool, extra func(proofPayout) string) {
	b := []byte(`{"payout":[`)
	for pos := max(lo, 0); pos < len(list) && pos < hi; pos++ {
		if pos > max(lo, 0) {
			b = append(b, ',')
		}
		it := list[pos]
		b = fmt.Appendf(b, `{"status":%q,"amount":%s,"orderId":%q,"customerId":"c","payCurrency":{"name":"usdt"},"payNetwork":{"name":"tron"},"createdAt":%q`,
			it.status, it.amount, it.orderID, proofBase.Add(time.Duration(it.at)*time.Second).Format(time.RFC3339))
		if extra != nil {
			if x := extra(it); x != "" {
				b = append(append(b, ','), x...)
			}
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if counted {
		b = fmt.Appendf(b, `,"count":%d`, count)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '}'))
}

// proofBase is the createdAt of a proofList's payouts at 0: an hour ago,
// so that every attempt time is past its settle time.
var proofBase = time.Now().Add(-time.Hour).UTC().Truncate(time.Second)

// happen applies the event.
func (l *proofList) happen() {
	newest := 0
	for _, it := range l.items {
		newest = max(newest, it.at)
	}
	switch l.event {
	case evCreate:
		l.items = append(l.items, proofPayout{orderID: "new", at: newest + 1, amount: "1.5", status: "created"})
	case evCreateTied:
		l.items = append(l.items, proofPayout{orderID: "new", at: newest, amount: "1.5", status: "created"})
	case evCreateOld:
		l.items = append(l.items, proofPayout{orderID: "new", at: -1, amount: "1.5", status: "created"})
	case evUpdate:
		for i := range l.items {
			if l.items[i].orderID == l.hide {
				l.items[i].status = "processing"
			}
		}
	}
}

// arrange lays the list out for a request of [offset, offset+limit):
// sorted by createdAt, each tie ordered by the adversary.
func (l *proofList) arrange(offset, limit int) []proofPayout {
	list := slices.Clone(l.items)
	slices.SortStableFunc(list, func(a, b proofPayout) int {
		if l.newestFirst {
			return b.at - a.at
		}
		return a.at - b.at
	})
	for lo := 0; lo < len(list); {
		hi := lo + 1
		for hi < len(list) && list[hi].at == list[lo].at {
			hi++
		}
		l.order(list[lo:hi], lo, offset, limit)
		lo = hi
	}
	return list
}

// order orders one tie, at positions [a, a+len(tie)), for a request of
// [offset, offset+limit).
func (l *proofList) order(tie []proofPayout, a, offset, limit int) {
	g := len(tie)
	if g < 2 || l.mode == advFixed {
		return
	}
	slices.SortFunc(tie, func(x, y proofPayout) int { return cmpString(x.orderID, y.orderID) })
	r := l.requests % g
	rotated := append(slices.Clone(tie[r:]), tie[:r]...)
	copy(tie, rotated)
	if l.mode == advRotate {
		return
	}
	h := slices.IndexFunc(tie, func(p proofPayout) bool { return p.orderID == l.hide })
	if h < 0 {
		return
	}
	// Places in the tie outside the page, in the mode's preference.
	var out []int
	for q := range g {
		if pos := a + q; pos < offset || pos >= offset+limit {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return // the page covers the whole tie: the hidden payout shows
	}
	q := out[0] // ahead of the page (or the first place behind it)
	if l.mode == advHideBack {
		q = out[len(out)-1]
		for _, c := range out {
			if a+c < offset {
				q = c // the last place before the page
			}
		}
	} else {
		for _, c := range slices.Backward(out) {
			if a+c >= offset+limit {
				q = c // the first place after the page
			}
		}
	}
	hidden := tie[h]
	rest := slices.Delete(slices.Clone(tie), h, h+1)
	copy(tie, slices.Insert(rest, q, hidden))
}

// proofTies are the tie layouts of n payouts (oldest first): each value is
// a payout's createdAt second.
func proofTies(n int) map[string][]int {
	out := map[string][]int{}
	none, all, pairs, mid := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		none[i], pairs[i], mid[i] = i, i/2, i
		if i > 0 && i < n-1 {
			mid[i] = 1 // every payout but the oldest and the newest in one second
		}
	}
	out["distinct"] = none
	if n >= 2 {
		out["all tied"], out["pairs"] = all, pairs
	}
	if n >= 4 {
		out["middle tied"] = mid
	}
	return out
}

// proofScenario is one run of the exhaustive test.
type proofScenario struct {
	n, pageSize     int
	ties            string
	at              []int
	newestFirst     bool
	counted         bool
	event           proofEvent
	eventAt         int
	mode            int
	hide            int // the payout hidden (and looked for)
	reconcileOrScan string
	cutoffShift     time.Duration // added to the cutoff (the hidden payout's second)
	// keyOf replaces the count proof's key (nil: identity), for
	// TestListProofHashCollisions.
	keyOf func(*PayoutListItem) uint64
}

func (sc proofScenario) String() string {
	order := map[bool]string{true: "newest first", false: "oldest first"}[sc.newestFirst]
	count := map[bool]string{true: "counted", false: "no count"}[sc.counted]
	return fmt.Sprintf("%s: %d payouts (%s), pages of %d, %s, %s, %s before request %d, adversary %d hiding o%d",
		sc.reconcileOrScan, sc.n, sc.ties, sc.pageSize, order, count, sc.event, sc.eventAt, sc.mode, sc.hide)
}

// list builds the scenario's list.
func (sc proofScenario) list() *proofList {
	l := &proofList{newestFirst: sc.newestFirst, counted: sc.counted, maxPage: sc.pageSize, mode: sc.mode,
		hide: "o" + strconv.Itoa(sc.hide), event: sc.event, eventAt: sc.eventAt}
	for i := range sc.n {
		l.items = append(l.items, proofPayout{orderID: "o" + strconv.Itoa(i), at: sc.at[i], amount: "1.5", status: "paid"})
	}
	return l
}

// proofOutcome is what one run showed.
type proofOutcome struct {
	requests int
	reread   bool // the search read the list again
	unknown  bool // it ended with an error
	wrong    string
}

// runProof runs the scenario through ReconcilePayout (looking for the
// hidden payout, attempted just after it was created, so that the
// cutoff is its createdAt) or ScanPayouts, and reports a wrong answer:
// not_created for a payout that existed when the search began, or a scan
// that ends without error missing one, or yields one twice.
func runProof(sc proofScenario) proofOutcome { return runProofOn(sc, sc.list()) }

// proofSearch is a search of the scenario's kind on c: its cutoff skip,
// and the skip's proof, run on lists of a few payouts (a run of 1 at each
// end, not minSortedRun), with the scenario's key.
func proofSearch(sc proofScenario, c *Client, orderID string, cutoff time.Time) *payoutSearch {
	s := newPayoutSearch(context.Background(), c, orderID, cutoff, nil)
	s.minRun = 1
	if sc.keyOf != nil {
		s.keyOf = sc.keyOf
	}
	return s
}

// runProofOn is runProof on the list server h.
func runProofOn(sc proofScenario, h http.Handler) proofOutcome {
	c, err := handlerClient(h)
	if err != nil {
		return proofOutcome{wrong: err.Error()}
	}
	var out proofOutcome
	if sc.reconcileOrScan == "reconcile" {
		target, attempted := "never-sent", proofBase
		if sc.n > 0 {
			target = "o" + strconv.Itoa(sc.hide)
			attempted = proofBase.Add(time.Duration(sc.at[sc.hide])*time.Second + time.Second)
		}
		s := proofSearch(sc, c, target, attempted.Add(sc.cutoffShift-time.Second))
		err := s.run()
		out.requests, out.reread, out.unknown = s.requests, s.rereading, err != nil
		switch {
		case err != nil && !errors.Is(err, ErrUnexpectedResponse):
			out.wrong = "an untyped error: " + err.Error()
		case err == nil && s.found == nil && sc.n > 0:
			out.wrong = "not created, but " + target + " is listed"
		case s.found != nil && s.found.OrderID != target:
			out.wrong = "found the wrong payout " + s.found.OrderID
		}
		return out
	}
	s := proofSearch(sc, c, "", time.Time{})
	s.maxReqs = math32
	seen := map[string]int{}
	s.visit = func(it *PayoutListItem) bool { seen[it.OrderID]++; return true }
	err = s.run()
	out.requests, out.reread, out.unknown = s.requests, s.rereading, err != nil
	for id, k := range seen {
		if k > 1 {
			out.wrong = fmt.Sprintf("yielded %s %d times", id, k)
		}
	}
	switch {
	case err != nil && !errors.Is(err, ErrUnexpectedResponse):
		out.wrong = "an untyped error: " + err.Error()
	case err == nil:
		for i := range sc.n {
			if seen["o"+strconv.Itoa(i)] == 0 {
				out.wrong = fmt.Sprintf("ended without error, missing o%d", i)
			}
		}
	}
	return out
}

// math32 bounds a scan in the test (the real one has no bound).
const math32 = 1 << 12

// proofScenarios runs fn on every scenario up to maxN payouts whose base
// keep admits (nil: every one): each tie layout, page size 1 to 4, both
// orders, with and without a count, through ReconcilePayout and
// ScanPayouts, each payout hidden, every adversary, quiet or with one
// creation (newer, or tied with the newest) or one update at every
// request boundary the quiet run reaches (and one past it). The quiet run
// uses keyOf (nil: identity). The bases are shared among GOMAXPROCS
// goroutines, so fn must be safe for concurrent use.
func proofScenarios(maxN int, keyOf func(*PayoutListItem) uint64, keep func(proofScenario) bool, fn func(proofScenario)) {
	bases := make(chan proofScenario)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for base := range bases {
				proofEvents(base, runProof(base).requests, fn)
			}
		})
	}
	for _, base := range proofBases(maxN) {
		if base.keyOf = keyOf; keep == nil || keep(base) {
			bases <- base
		}
	}
	close(bases)
	wg.Wait()
}

// proofBases lists the quiet scenarios of proofScenarios, adversary
// advFixed and no event, in a fixed order.
func proofBases(maxN int) []proofScenario {
	var out []proofScenario
	for n := 0; n <= maxN; n++ {
		ties := proofTies(n)
		for _, tie := range slices.Sorted(maps.Keys(ties)) {
			for pageSize := 1; pageSize <= min(4, n+1); pageSize++ { // larger pages read these lists as n+1 does
				for _, newestFirst := range []bool{true, false} {
					for _, counted := range []bool{true, false} {
						for _, how := range []string{"reconcile", "scan"} {
							for hide := range max(n, 1) {
								out = append(out, proofScenario{n: n, pageSize: pageSize, ties: tie, at: ties[tie], newestFirst: newestFirst,
									counted: counted, hide: hide, reconcileOrScan: how})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// proofEvents runs fn on base's scenarios: every adversary, quiet or with
// one event before every request up to quiet+1 (the quiet run's requests,
// and one past them). A scan's adversary that hides nothing runs once,
// with hide 0.
func proofEvents(base proofScenario, quiet int, fn func(proofScenario)) {
	for mode := range advModes {
		for ev := evNone; ev <= evUpdate; ev++ {
			last := quiet + 1
			if ev == evNone {
				last = 1
			}
			if base.reconcileOrScan == "scan" && base.hide > 0 && mode <= advRotate && ev != evUpdate {
				continue
			}
			for at := 1; at <= last; at++ {
				sc := base
				sc.mode, sc.event, sc.eventAt = mode, ev, at
				fn(sc)
			}
		}
	}
}

// TestListProofSmallLists is the exhaustive small-list test of the count
// proof (docs/reconcile.md): in every scenario of proofScenarios, never
// "not created" for a payout that existed when the search began, never a
// scan that ends without error missing one (or yielding one twice); and a
// quiet list (no tie reordered, nothing created or updated) is proven in
// its first pass, with the requests it always took.
func TestListProofSmallLists(t *testing.T) {
	t.Parallel()
	maxN := *proofMaxN
	if maxN == 0 {
		maxN = map[bool]int{false: 5, true: 3}[raceDetector]
	}
	var tally proofTally
	proofScenarios(maxN, nil, nil, func(sc proofScenario) {
		out := runProof(sc)
		tally.add(t, sc, out, 20)
		if sc.event == evNone && sc.mode == advFixed {
			assert.False(t, out.reread, "%v: a quiet list read again", sc)
			assert.False(t, out.unknown, "%v: a quiet list unknown", sc)
		}
	})
	t.Logf("%d scenarios: %d wrong, %d read again, %d unknown", tally.runs, tally.wrong, tally.reread, tally.unknown)
	require.Zero(t, tally.wrong)
}

// proofTally counts the outcomes of scenarios run concurrently.
type proofTally struct {
	mu                           sync.Mutex
	runs, reread, unknown, wrong int
}

// add counts out, and fails t on a wrong answer (the first limit named).
func (ta *proofTally) add(t *testing.T, sc proofScenario, out proofOutcome, limit int) {
	t.Helper()
	ta.mu.Lock()
	defer ta.mu.Unlock()
	ta.runs++
	if out.reread {
		ta.reread++
	}
	if out.unknown {
		ta.unknown++
	}
	if out.wrong != "" {
		if ta.wrong++; ta.wrong <= limit {
			t.Errorf("%v: %s", sc, out.wrong)
		}
	}
}

// TestReconcileTiesReorderedAndOneCreation is the reported case, through
// ReconcilePayout as the queue calls it (with the attempt time; lists
// this small are read whole): a provider whose createdAt has one-second
// precision lists the payouts of one second in another order on every
// request, and one payout is created while the search pages. The search
// used to see a payout twice, skip the one looked for, count the new one
// in its place, and answer not_created.
func TestReconcileTiesReorderedAndOneCreation(t *testing.T) {
	t.Parallel()
	var runs, unknown int
	for n := 3; n <= 8; n++ {
		for tie, at := range proofTies(n) {
			if tie == "distinct" {
				continue
			}
			for pageSize := 2; pageSize <= 4; pageSize++ {
				for _, newestFirst := range []bool{true, false} {
					for hide := range n {
						for eventAt := 1; eventAt <= n/pageSize+3; eventAt++ {
							sc := proofScenario{n: n, pageSize: pageSize, ties: tie, at: at, newestFirst: newestFirst, counted: true,
								event: evCreate, eventAt: eventAt, mode: advRotate, hide: hide, reconcileOrScan: "reconcile"}
							l := sc.list()
							c, err := handlerClient(l)
							require.NoError(t, err)
							target := "o" + strconv.Itoa(hide)
							res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: target,
								AttemptedAt: proofBase.Add(time.Duration(at[hide]) * time.Second)})
							require.NotNil(t, res)
							runs++
							require.NotEqual(t, PayoutNotCreated, res.Verdict, "%v: %s", sc, res.Reason)
							if err != nil {
								unknown++
								require.ErrorIs(t, err, ErrUnexpectedResponse)
								assert.Equal(t, PayoutStillUnknown, res.Verdict)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d searches, %d still unknown, none not_created", runs, unknown)
}

// updatedList serves payouts ordered by updatedAt, newest first: an
// update moves a payout to the top, and a payout created goes there too.
type updatedList struct {
	mu       sync.Mutex
	order    []int // payout numbers, in list order
	maxPage  int
	counted  bool
	moveAt   int // before this request, the payout move goes to the top
	move     int
	createAt int // before this request, a payout is created (0: none)
	requests int
}

func (l *updatedList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, limit := listQuery(r, l.maxPage)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if l.requests == l.moveAt {
		i := slices.Index(l.order, l.move)
		l.order = slices.Insert(slices.Delete(l.order, i, i+1), 0, l.move)
	}
	if l.requests == l.createAt {
		l.order = slices.Insert(l.order, 0, len(l.order))
	}
	list := make([]proofPayout, len(l.order))
	for pos, i := range l.order {
		list[pos] = proofPayout{orderID: "o" + strconv.Itoa(i), at: i, amount: "1.5", status: "paid"}
	}
	writeProofPage(w, list, offset, limit, l.counted)
}

// TestScanPayoutsListByUpdatedAt: a list ordered by updatedAt moves a
// payout updated while it is read from a page not yet read to one already
// read; with a payout created meanwhile filling its place (or no count),
// the scan used to end without an error and without it. Every move of
// every payout at every request, pages of 1 to 4, with and without a
// count and a creation: the scan yields every payout, or ends with an
// error.
func TestScanPayoutsListByUpdatedAt(t *testing.T) {
	t.Parallel()
	var runs, unknown int
	for n := 2; n <= 6; n++ {
		for pageSize := 1; pageSize <= 4; pageSize++ {
			for _, counted := range []bool{true, false} {
				for move := range n {
					for moveAt := 1; moveAt <= n+2; moveAt++ {
						for _, createAt := range []int{0, moveAt, moveAt + 1} {
							l := &updatedList{maxPage: pageSize, counted: counted, moveAt: moveAt, move: move, createAt: createAt}
							for i := range n {
								l.order = append(l.order, n-1-i) // o(n-1) first: created, and so updated, last
							}
							c, err := handlerClient(l)
							require.NoError(t, err)
							seen, err := scanAll(c, ScanPayoutsParams{})
							runs++
							if err != nil {
								unknown++
								require.ErrorIs(t, err, ErrUnexpectedResponse)
								continue
							}
							for i := range n {
								require.Equal(t, 1, seen["o"+strconv.Itoa(i)], "%d payouts, pages of %d, counted %v, o%d moved before request %d, created before %d: o%d",
									n, pageSize, counted, move, moveAt, createAt, i)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d scans, %d ended with an error, none without one missing a payout", runs, unknown)
}

// TestScanPayoutsTwinsOfOneOrderID: two payouts of one orderId created in
// the same second with different amounts are two payouts (the amount is
// part of a payout's key): the scan yields both, with or without a count,
// whichever pages they fall on.
func TestScanPayoutsTwinsOfOneOrderID(t *testing.T) {
	at := proofBase.Format(time.RFC3339)
	for _, counted := range []bool{true, false} {
		for pageSize := 1; pageSize <= 4; pageSize++ {
			t.Run(fmt.Sprintf("counted %v, pages of %d", counted, pageSize), func(t *testing.T) {
				items := []string{
					`{"status":"paid","amount":1,"orderId":"a","customerId":"c","createdAt":"` + at + `"}`,
					`{"status":"paid","amount":10.25,"orderId":"twin","customerId":"c","createdAt":"` + at + `"}`,
					`{"status":"paid","amount":20.5,"orderId":"twin","customerId":"c","createdAt":"` + at + `"}`,
					`{"status":"paid","amount":2,"orderId":"b","customerId":"c","createdAt":"` + at + `"}`,
				}
				c, mux := setup(t)
				mux.HandleFunc("GET /v1/payout/list", func(w http.ResponseWriter, r *http.Request) {
					q := r.URL.Query()
					limit, _ := strconv.Atoi(q.Get("limit"))
					offset, _ := strconv.Atoi(q.Get("offset"))
					hi := min(len(items), offset+min(max(limit, 1), pageSize))
					page := "[]"
					if offset < hi {
						page = "[" + strings.Join(items[offset:hi], ",") + "]"
					}
					count := ""
					if counted {
						count = `,"count":` + strconv.Itoa(len(items))
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"payout":` + page + count + `}`))
				})
				var amounts []string
				for it, err := range c.ScanPayouts(context.Background(), ScanPayoutsParams{}) {
					require.NoError(t, err)
					if it.OrderID == "twin" {
						amounts = append(amounts, it.Amount.String())
					}
				}
				slices.Sort(amounts)
				assert.Equal(t, []string{"10.25", "20.5"}, amounts)
			})
		}
	}
}

// TestListProofRequests counts the list requests of ReconcilePayout (a
// payout never created, attempted just after the newest payout) and of
// ScanPayouts on 1,000 payouts 3 s apart, pages of 100, in both orders: a quiet
// list, one whose payouts share a createdAt seven at a time and are
// listed in another order on every request, and a quiet list where one
// payout is created before the second request. The counts are exact (BENCHMARKS.md):
// the quiet ones are those of the search before the count proof.
func TestListProofRequests(t *testing.T) {
	t.Parallel()
	const n = 1000
	tests := []struct {
		name        string
		tied        bool
		create      bool
		newestFirst bool
		reconcile   int // requests
		scan        int
	}{
		{"quiet, newest first", false, false, true, 2, 11},
		{"quiet, oldest first", false, false, false, 2, 11},
		// A tie cut by a page boundary and reordered may hide a payout: the
		// scan reads the list once more (the search stopped at the cutoff
		// proves its part of the list at once).
		{"ties reordered, newest first", true, false, true, 2, 21},
		{"ties reordered, oldest first", true, false, false, 2, 21},
		// The new payout tops the list: one more page shows it.
		{"one creation, newest first", false, true, true, 4, 12},
		{"one creation, oldest first", false, true, false, 3, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := make([]int, n)
			for i := range at {
				at[i] = i * 3 // 40 payouts within the clock skew
				if tt.tied {
					at[i] = i / 7 * 21
				}
			}
			sc := proofScenario{n: n, pageSize: 100, at: at, newestFirst: tt.newestFirst, counted: true, hide: -1}
			if tt.tied {
				sc.mode = advRotate
			}
			if tt.create {
				sc.event, sc.eventAt = evCreate, 2
			}
			l := sc.list()
			c, err := handlerClient(l)
			require.NoError(t, err)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent",
				AttemptedAt: proofBase.Add(time.Duration(at[n-1])*time.Second + time.Second)})
			require.NoError(t, err)
			assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)

			l = sc.list()
			c, err = handlerClient(l)
			require.NoError(t, err)
			seen, err := scanAll(c, ScanPayoutsParams{})
			require.NoError(t, err)
			assert.Len(t, seen, n+map[bool]int{false: 0, true: 1}[tt.create])
			t.Logf("ReconcilePayout %d requests, ScanPayouts %d", res.Requests, l.requests)
			assert.Equal(t, tt.reconcile, res.Requests, "ReconcilePayout")
			assert.Equal(t, tt.scan, l.requests, "ScanPayouts")
		})
	}
}

// handlerClient is a client served by h in process, without retries.
func handlerClient(h http.Handler) (*Client, error) {
	return NewClient(testBase, testKey, WithHTTPClient(&http.Client{Transport: handlerTransport{h}}), WithRetryPolicy(RetryPolicy{}))
}

// everyOrderList is a proofList (no adversary of its own) whose server,
// on each request, may serve any order of each tie: choice[i] picks the
// page request i+1 shows among every distinct window the ties'
// permutations give (0 past the script), and options records how many
// there were, so that TestListProofEveryOrder can walk them all.
type everyOrderList struct {
	*proofList
	choice  []int
	options []int
}

func (l *everyOrderList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, limit := listQuery(r, l.maxPage)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if l.requests == l.eventAt {
		l.happen()
	}
	l.mode = advFixed
	base := l.arrange(offset, limit)
	var windows []string
	var lists [][]proofPayout
	for _, list := range permuteTies(base) {
		var key strings.Builder
		for pos := offset; pos < len(list) && pos < offset+limit; pos++ {
			key.WriteString(list[pos].orderID + ",")
		}
		if !slices.Contains(windows, key.String()) {
			windows = append(windows, key.String())
			lists = append(lists, list)
		}
	}
	i := len(l.options)
	l.options = append(l.options, len(lists))
	pick := 0
	if i < len(l.choice) {
		pick = l.choice[i]
	}
	writeProofPage(w, lists[pick], offset, limit, l.counted)
}

// permuteTies returns every arrangement of list (sorted by createdAt)
// that orders each tie in any way.
func permuteTies(list []proofPayout) [][]proofPayout {
	out := [][]proofPayout{slices.Clone(list)}
	for lo := 0; lo < len(list); {
		hi := lo + 1
		for hi < len(list) && list[hi].at == list[lo].at {
			hi++
		}
		var next [][]proofPayout
		for _, l := range out {
			for _, p := range permutations(l[lo:hi]) {
				m := slices.Clone(l)
				copy(m[lo:hi], p)
				next = append(next, m)
			}
		}
		out, lo = next, hi
	}
	return out
}

// permutations returns every order of xs.
func permutations(xs []proofPayout) [][]proofPayout {
	if len(xs) <= 1 {
		return [][]proofPayout{slices.Clone(xs)}
	}
	var out [][]proofPayout
	for i := range xs {
		rest := slices.Delete(slices.Clone(xs), i, i+1)
		for _, p := range permutations(rest) {
			out = append(out, append([]proofPayout{xs[i]}, p...))
		}
	}
	return out
}

// proofEvery makes TestListProofEveryOrder walk lists of 3 payouts too
// (92,318 sequences of pages, about a minute; 2 payouts in CI).
var proofEvery = flag.Bool("proof.every", false, "TestListProofEveryOrder walks lists of 3 payouts too (about a minute)")

// TestListProofEveryOrder walks every order the server can give each tie
// on every request, for lists of up to 2 payouts with a tie (3 with
// -proof.every), pages of 1
// to 3 (of 2 and 3 for 3 payouts), both orders, with and without a count, quiet or with one payout
// created at every request boundary, through ReconcilePayout's search
// (each payout looked for) and ScanPayouts: every sequence of pages such
// a server can answer, not one adversary. Never a wrong answer (see
// runProof).
func TestListProofEveryOrder(t *testing.T) {
	t.Parallel()
	var leaves, unknown int
	maxN := 2
	if *proofEvery {
		maxN = 3
	}
	for n := 1; n <= maxN; n++ {
		for tie, at := range proofTies(n) {
			if tie == "distinct" {
				continue // nothing to reorder: TestListProofSmallLists covers it
			}
			for pageSize := 1; pageSize <= min(3, n); pageSize++ {
				if n == 3 && pageSize == 1 {
					continue // a tie of 3 or 4 on pages of 1: millions of sequences
				}
				for _, newestFirst := range []bool{true, false} {
					for _, counted := range []bool{true, false} {
						for _, how := range []string{"reconcile", "scan"} {
							for hide := range map[bool]int{true: n, false: 1}[how == "reconcile"] {
								for _, ev := range []proofEvent{evNone, evCreate} {
									for eventAt := 1; eventAt <= map[bool]int{true: 1, false: 2*n + 2}[ev == evNone]; eventAt++ {
										sc := proofScenario{n: n, pageSize: pageSize, ties: tie, at: at, newestFirst: newestFirst, counted: counted,
											event: ev, eventAt: eventAt, hide: hide, reconcileOrScan: how}
										if ev == evNone {
											sc.eventAt = 0
										}
										l, u := walkEveryOrder(t, sc)
										leaves += l
										unknown += u
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d sequences of pages, %d unknown, none wrong", leaves, unknown)
}

// walkEveryOrder runs sc once for every sequence of pages its server can
// answer (by replay: the script of choices counts up like an odometer,
// deepest request first) and fails the test on a wrong answer.
func walkEveryOrder(t *testing.T, sc proofScenario) (leaves, unknown int) {
	t.Helper()
	var choice []int
	for {
		l := &everyOrderList{proofList: sc.list(), choice: choice}
		out := runProofOn(sc, l)
		leaves++
		if out.unknown {
			unknown++
		}
		require.Empty(t, out.wrong, "%v, pages chosen %v of %v", sc, choice, l.options)
		require.Less(t, leaves, 20_000, "%v: too many sequences to walk", sc)
		j := len(l.options) - 1
		for j >= 0 && pickAt(choice, j)+1 >= l.options[j] {
			j--
		}
		if j < 0 {
			return leaves, unknown
		}
		next := make([]int, j+1)
		for i := range j {
			next[i] = pickAt(choice, i)
		}
		next[j] = pickAt(choice, j) + 1
		choice = next
	}
}

func pickAt(choice []int, i int) int {
	if i < len(choice) {
		return choice[i]
	}
	return 0
}

// TestListProofAttacks runs the scenarios of proofScenarios (lists of up
// to 2 payouts, 1 under the race detector; for the last attack, lists of
// 4 whose middle payouts share a second) against servers that bend what
// the spec leaves open, and asserts that none gives a wrong answer (see
// runProof): the count proof holds, or the answer is unknown.
//   - A payout read twice must give one key (docs/reconcile.md, "Key"): a
//     wallet renamed or shown in another case or not at all, an id sent on
//     some reads only, a currency in another case, a createdAt in another
//     zone or format, an amount written another way. The first four
//     counted one payout as two, which let a hidden one go unseen.
//   - Pages that are not the window asked for, with and without a count:
//     the offset ignored (on every request, on one, with a count that
//     stays small), more items than the limit, the window one place early,
//     a short page that is not the end.
//     The count proof does not rest on positions.
//   - The cutoff skip: the payout looked for without createdAt, a payout
//     created backdated (older than every other) or with a createdAt in
//     the future during the search, and a
//     list sorted by createdAt's second whose createdAt has a fraction,
//     with the cutoff inside the second of the payout looked for (its
//     payouts in any order within a second): the skip used to stop at a
//     payout of that second created before the cutoff, with one created
//     after it listed behind.
func TestListProofAttacks(t *testing.T) {
	at := func(p proofPayout) time.Time { return proofBase.Add(time.Duration(p.at) * time.Second) }
	every := func(req int, xs ...string) string { return xs[req%len(xs)] }
	tests := []struct {
		name string
		bend func(sc *proofScenario, l *proofList)
		maxN int                      // 0: 2
		only func(proofScenario) bool // nil: every scenario
	}{
		{"wallet label renamed", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, _ proofPayout) string {
				return `"payoutWallet":{"label":"` + every(req, "main", "Main wallet") + `","address":"TQ1"}`
			}
		}, 0, nil},
		{"wallet address in another case, or absent", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, _ proofPayout) string {
				return every(req, `"payoutWallet":{"address":"0xAbC1"}`, `"payoutWallet":{"address":"0xabc1"}`, ``)
			}
		}, 0, nil},
		{"id on some reads only", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, p proofPayout) string { return every(req, `"payoutId":"p-`+p.orderID+`"`, ``) }
		}, 0, nil},
		{"currency and network in another case", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, _ proofPayout) string {
				return every(req, `"payCurrency":{"name":"USDT"},"payNetwork":{"name":"TRON"}`, ``)
			}
		}, 0, nil},
		{"createdAt in another zone and format", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, p proofPayout) string {
				return `"createdAt":"` + every(req, at(p).In(time.FixedZone("", 5*3600+1800)).Format("2006-01-02T15:04:05.000-07:00"), at(p).Format(time.RFC3339)) + `"`
			}
		}, 0, nil},
		{"amount written another way", func(_ *proofScenario, l *proofList) {
			l.render = func(req int, _ proofPayout) string {
				return `"amount":` + every(req, `"1.50"`, `1.5e0`, `"1.5"`, `15e-1`)
			}
		}, 0, nil},
		{"offset ignored", func(_ *proofScenario, l *proofList) {
			l.window = func(_, _, limit, _ int) (int, int) { return 0, limit }
		}, 0, nil},
		{"offset ignored, count at most 1", func(_ *proofScenario, l *proofList) {
			l.window = func(_, _, limit, _ int) (int, int) { return 0, limit }
			l.countAt = func(_, size int) int { return min(size, 1) }
		}, 0, nil},
		{"offset ignored on the second request", func(_ *proofScenario, l *proofList) {
			l.window = func(req, offset, limit, _ int) (int, int) {
				if req == 2 {
					return 0, limit
				}
				return offset, offset + limit
			}
		}, 0, nil},
		{"one item more than the limit", func(_ *proofScenario, l *proofList) {
			l.window = func(_, offset, limit, _ int) (int, int) { return offset, offset + limit + 1 }
		}, 0, nil},
		{"the window one place early on the second request", func(_ *proofScenario, l *proofList) {
			l.window = func(req, offset, limit, _ int) (int, int) {
				if req == 2 {
					return offset - 1, offset + limit - 1
				}
				return offset, offset + limit
			}
		}, 0, nil},
		{"a short page, not empty, on the second request", func(_ *proofScenario, l *proofList) {
			l.window = func(req, offset, limit, _ int) (int, int) {
				if req == 2 {
					return offset, offset + max(limit-1, 1)
				}
				return offset, offset + limit
			}
		}, 0, nil},
		{"no createdAt on the payout looked for", func(_ *proofScenario, l *proofList) {
			hide := l.hide
			l.render = func(_ int, p proofPayout) string {
				if p.orderID != hide {
					return ""
				}
				return `"createdAt":null`
			}
		}, 0, nil},
		{"a payout created backdated", func(sc *proofScenario, l *proofList) {
			if sc.event == evCreate {
				sc.event, l.event = evCreateOld, evCreateOld
			}
		}, 0, nil},
		{"a payout created in the future", func(_ *proofScenario, l *proofList) {
			l.render = func(_ int, p proofPayout) string {
				if p.orderID != "new" {
					return ""
				}
				return `"createdAt":"` + at(p).Add(24*time.Hour).Format(time.RFC3339) + `"`
			}
		}, 0, nil},
		{"sorted by the second, cutoff within it", func(sc *proofScenario, l *proofList) {
			sc.cutoffShift = 250 * time.Millisecond
			hide := l.hide
			l.render = func(_ int, p proofPayout) string {
				var frac time.Duration // the payout looked for, and the new one, after the cutoff; the others of its second before
				if p.orderID == hide || p.orderID == "new" {
					frac = 500 * time.Millisecond
				}
				return `"createdAt":"` + at(p).Add(frac).Format(time.RFC3339Nano) + `"`
			}
		}, 4, func(sc proofScenario) bool {
			return sc.reconcileOrScan == "reconcile" && sc.counted && sc.ties == "middle tied"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			neverWrong(t, cmp.Or(tt.maxN, map[bool]int{false: 2, true: 1}[raceDetector]), nil, tt.only, func(sc proofScenario) proofOutcome {
				l := sc.list()
				tt.bend(&sc, l)
				return runProofOn(sc, l)
			})
		})
	}
}

// scriptedList serves, at request i, the list lists[i-1] (the last one
// after them), with its count, in pages of at most maxPage.
type scriptedList struct {
	mu       sync.Mutex
	lists    [][]proofPayout
	maxPage  int
	requests int
}

func (l *scriptedList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, limit := listQuery(r, l.maxPage)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	writeProofPage(w, l.lists[min(l.requests, len(l.lists))-1], offset, limit, true)
}

// TestListProofRegionPageOutOfOrder: a page read again that shows a
// payout created after the cutoff behind one created before it proves the
// list is not sorted as the cutoff skip's bound needs: the region's count
// is then unknown. Here the server lists c behind e on the re-read page
// that closes the region's count (3 = a, b, c), while z, created after
// the cutoff, sits unseen before e: the search used to answer not
// created for z.
func TestListProofRegionPageOutOfOrder(t *testing.T) {
	t.Parallel()
	p := func(id string, at int) proofPayout {
		return proofPayout{orderID: id, at: at, amount: "1.5", status: "paid"}
	}
	a, b, c, z := p("a", 13), p("b", 13), p("c", 13), p("z", 13) // one second, after the cutoff (10)
	e, f, g, h, i := p("e", 9), p("f", 8), p("g", 7), p("h", 6), p("i", 5)
	sorted := []proofPayout{a, b, c, z, e, f, g, h, i}
	l := &scriptedList{maxPage: 2, lists: [][]proofPayout{
		sorted,                      // 1: [a b] at 0
		sorted,                      // 2: the far end, [i] at 8
		{z, a, b, c, e, f, g, h, i}, // 3: [b c] at 2 (the tie reordered)
		sorted,                      // 4: [e f] at 4: the cutoff, sorted at both ends; 3 of 4 after it seen
		sorted,                      // 5: the re-read, [a] at 0
		sorted,                      // 6: [b c] at 1
		{a, b, z, e, c, f, g, h, i}, // 7: [e c] at 3: c behind e
		sorted,                      // 8: the second re-read, [a b] at 0
		{z, a, b, c, e, f, g, h, i}, // 9 on: [b c] at 2, [e f] at 4
	}}
	c0, err := handlerClient(l)
	require.NoError(t, err)
	s := proofSearch(proofScenario{}, c0, "z", proofBase.Add(10*time.Second))
	err = s.run()
	require.Nil(t, s.found)
	var pe *ListProofError
	require.ErrorAs(t, err, &pe, "the search answered not created for z (requests %d)", s.requests)
	assert.Equal(t, proofBase.Add(10*time.Second), pe.Since)
}

// TestListProofHashCollisions: a payout's key is a 64-bit hash, and two
// keys that collide are merged: in L (keys), in L_R (keysR) and in the
// page fingerprints. Merging only undercounts, so the proof is harder to
// close, never wrong: with every key colliding, or keys that collide by
// pairs, no scenario of proofScenarios (lists of up to 2 payouts, 1 under
// the race detector) gives a wrong answer (see runProof). The payout
// looked for is matched by its orderId, never by its hash.
func TestListProofHashCollisions(t *testing.T) {
	tests := []struct {
		name string
		hash func(*PayoutListItem) uint64
	}{
		{"every key collides", func(*PayoutListItem) uint64 { return 7 }},
		{"keys collide by pairs", func(it *PayoutListItem) uint64 { return identity(it) >> 1 << 1 }},
		{"keys collide by the last digit of the orderId", func(it *PayoutListItem) uint64 {
			return uint64(it.OrderID[len(it.OrderID)-1] % 2)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			neverWrong(t, map[bool]int{false: 2, true: 1}[raceDetector], tt.hash, nil, runProof)
		})
	}
}

// neverWrong runs the scenarios of proofScenarios up to maxN payouts,
// with the count proof's key keyOf (nil: identity) and the bases keep
// admits (nil: all), through run, and fails the test on each wrong
// answer (the first 5 named).
func neverWrong(t *testing.T, maxN int, keyOf func(*PayoutListItem) uint64, keep func(proofScenario) bool, run func(proofScenario) proofOutcome) {
	t.Helper()
	var tally proofTally
	proofScenarios(maxN, keyOf, keep, func(sc proofScenario) { tally.add(t, sc, run(sc), 5) })
	t.Logf("%d scenarios, %d unknown, %d wrong", tally.runs, tally.unknown, tally.wrong)
}

// TestScanPayoutsTwinsOnTwoPages: two payouts that share a key (orderId
// t, one amount, one second), a paid and a failed one, read on different
// pages: the scan proves there are two when a re-read page shows both,
// and must yield each once. It used to yield the one read first again
// (the second copy on the page), and the other never. If the one yielded
// changed between the reads, the pages cannot tell which is which: the
// scan ends unknown.
func TestScanPayoutsTwinsOnTwoPages(t *testing.T) {
	x := proofPayout{orderID: "x", at: 9, amount: "1.5", status: "paid"}
	a := proofPayout{orderID: "t", at: 5, amount: "1.5", status: "paid"}
	b := proofPayout{orderID: "t", at: 5, amount: "1.5", status: "failed"}
	changed := a
	changed.status = "failed"
	tests := []struct {
		name     string
		reread   []proofPayout // the list from the first re-read on (request 3)
		statuses []string      // yielded for orderId t; nil: the scan ends unknown
	}{
		{"the twins swap places", []proofPayout{x, b, a}, []string{"failed", "paid"}},
		{"the twins keep their places", []proofPayout{x, a, b}, []string{"failed", "paid"}},
		{"the one yielded changed", []proofPayout{x, b, changed}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Pages of 2, newest first: [x a] and [b] (3 listed, 2 keys
			// proven), then the re-read [x], [b a] or [a b].
			l := &scriptedList{maxPage: 2, lists: [][]proofPayout{{x, a, b}, {x, a, b}, tt.reread}}
			c, err := handlerClient(l)
			require.NoError(t, err)
			var statuses []string
			var scanErr error
			for it, err := range c.ScanPayouts(context.Background(), ScanPayoutsParams{}) {
				if err != nil {
					scanErr = err
					break
				}
				if it.OrderID == "t" {
					statuses = append(statuses, string(it.Status))
				}
			}
			if tt.statuses == nil {
				var pe *ListProofError
				require.ErrorAs(t, scanErr, &pe, "yielded %v", statuses)
				assert.Contains(t, pe.Ambiguous, "t")
				return
			}
			require.NoError(t, scanErr)
			slices.Sort(statuses)
			assert.Equal(t, tt.statuses, statuses)
		})
	}
}
