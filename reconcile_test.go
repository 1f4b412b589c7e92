package cryptopay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthList is a payout list generated on the fly, cheap enough for
// 100,000 payouts: payout i (0 the oldest) has orderId "o<i>" and createdAt
// base + i*step. The fields below misbehave the ways real servers do.
type synthList struct {
	total       atomic.Int64
	newestFirst bool
	maxPage     int // default 100
	base        time.Time
	step        time.Duration

	noTimes      bool          // no createdAt at all
	shuffled     bool          // createdAt goes both ways
	ignoreOffset bool          // every page is the first
	repeatFrom   int           // offsets past it serve the page at it (0: off)
	countDelta   int           // added to the count sent
	noCount      bool          // no count field
	lagFor       int           // the newest payout is not listed (nor counted) in the first lagFor requests
	growEvery    int           // one payout is added after every growEvery requests
	shrinkAfter  int           // from that request on, the count sent is 1 lower
	onRequest    func(n int64) // called with each request's number

	requests atomic.Int64
	mu       sync.Mutex
	offsets  []int // offsets asked for, in order
}

func newSynthList(total int, newestFirst bool) *synthList {
	l := &synthList{newestFirst: newestFirst, maxPage: 100, step: time.Second,
		base: time.Now().Add(-time.Duration(total+3600) * time.Second).UTC().Truncate(time.Second)}
	l.total.Store(int64(total))
	return l
}

// newest is the createdAt of the newest payout.
func (l *synthList) newest() time.Time {
	return l.base.Add(time.Duration(l.total.Load()-1) * l.step)
}

func (l *synthList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := l.requests.Add(1)
	if l.onRequest != nil {
		l.onRequest(n)
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	l.mu.Lock()
	l.offsets = append(l.offsets, offset)
	l.mu.Unlock()
	if limit <= 0 || limit > l.maxPage {
		limit = l.maxPage
	}
	switch {
	case l.ignoreOffset:
		offset = 0
	case l.repeatFrom > 0 && offset > l.repeatFrom:
		offset = l.repeatFrom
	}
	total := int(l.total.Load())
	if int(n) <= l.lagFor {
		total--
	}
	if l.growEvery > 0 && int(n)%l.growEvery == 0 {
		l.total.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(l.page(offset, limit, total, int(n)))
}

// page renders the items at [offset, offset+limit) of a list of total.
func (l *synthList) page(offset, limit, total, n int) []byte {
	b := make([]byte, 0, 64+200*limit)
	b = append(b, `{"payout":[`...)
	for pos := offset; pos < total && pos < offset+limit; pos++ {
		i := pos // payout number: 0 is the oldest
		if l.newestFirst {
			i = total - 1 - pos
		}
		if pos > offset {
			b = append(b, ',')
		}
		b = l.item(b, i, "o"+strconv.Itoa(i))
	}
	b = append(b, ']')
	if !l.noCount {
		count := total + l.countDelta
		if l.shrinkAfter > 0 && n >= l.shrinkAfter {
			count--
		}
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(count), 10)
	}
	return append(b, '}')
}

func (l *synthList) item(b []byte, i int, id string) []byte {
	b = append(b, `{"status":"paid","amount":1.5,"orderId":"`...)
	b = append(b, id...)
	b = append(b, `","customerId":"c","payCurrency":{"name":"usdt"},"payNetwork":{"name":"tron"},"payoutWallet":{"label":"l","address":"T`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `"}`...)
	if !l.noTimes {
		at := l.base.Add(time.Duration(i) * l.step)
		if l.shuffled && i%2 == 1 {
			at = at.Add(-time.Duration(i) * l.step / 2)
		}
		b = append(b, `,"createdAt":"`...)
		b = at.AppendFormat(b, time.RFC3339)
		b = append(b, '"')
	}
	return append(b, '}')
}

func (l *synthList) seen() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.offsets...)
}

// listClient serves l on setup's mux.
func listClient(t *testing.T, l *synthList) *Client {
	t.Helper()
	c, mux := setup(t)
	mux.Handle("GET /v1/payout/list", l)
	return c
}

func orders() map[string]bool { return map[string]bool{"oldest first": false, "newest first": true} }

// TestFindNewestPayoutInFewRequests: the payout just created is the newest;
// whichever order the server lists in, at most 3 list requests find it.
func TestFindNewestPayoutInFewRequests(t *testing.T) {
	for name, newestFirst := range orders() {
		for _, total := range []int{1, 2, 99, 100, 101, 250, 10_000, 100_000} {
			for _, maxPage := range []int{100, 20} {
				t.Run(name+"/"+strconv.Itoa(total)+"/page"+strconv.Itoa(maxPage), func(t *testing.T) {
					l := newSynthList(total, newestFirst)
					l.maxPage = maxPage
					c := listClient(t, l)
					want := "o" + strconv.Itoa(total-1)
					it, found, err := findPayout(c, context.Background(), want)
					require.NoError(t, err)
					require.True(t, found)
					assert.Equal(t, want, it.OrderID)
					assert.LessOrEqual(t, l.requests.Load(), int64(3), "offsets %v", l.seen())

					res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: want, AttemptedAt: l.newest()})
					require.NoError(t, err)
					assert.Equal(t, PayoutExists, res.Verdict, res.Reason)
					assert.Equal(t, want, res.Payout.OrderID)
					assert.LessOrEqual(t, res.Requests, 3)
				})
			}
		}
	}
}

// TestReconcileMissingInFewRequests: a payout that was never created is
// reported as such after reading back to the attempt (minus the skew),
// not after reading the whole account.
func TestReconcileMissingInFewRequests(t *testing.T) {
	for name, newestFirst := range orders() {
		for _, total := range []int{0, 1, 100, 1000, 100_000} {
			t.Run(name+"/"+strconv.Itoa(total), func(t *testing.T) {
				l := newSynthList(total, newestFirst)
				c := listClient(t, l)
				attempted := time.Now().Add(-time.Minute) // the settle time has passed
				res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: attempted})
				require.NoError(t, err)
				assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
				assert.Nil(t, res.Payout)
				assert.LessOrEqual(t, res.Requests, 2, "offsets %v", l.seen())
				assert.Equal(t, int64(res.Requests), l.requests.Load())
				assert.Contains(t, res.Reason, "no payout with this orderId is listed")
			})
		}
	}
}

// TestReconcileReadsEverythingAfterTheCutoff: payouts created after the
// cutoff are all read, in either order, before "not created".
func TestReconcileReadsEverythingAfterTheCutoff(t *testing.T) {
	for name, newestFirst := range orders() {
		t.Run(name, func(t *testing.T) {
			l := newSynthList(1000, newestFirst)
			c := listClient(t, l)
			// 350 payouts (650..999) were created after the cutoff.
			attempted := l.base.Add(650*time.Second + DefaultReconcileClockSkew)
			for _, want := range []string{"o650", "o700", "o999", "o820"} {
				res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: want, AttemptedAt: attempted})
				require.NoError(t, err)
				assert.Equal(t, PayoutExists, res.Verdict, "%s: %s", want, res.Reason)
			}
			l.requests.Store(0)
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "o649x", AttemptedAt: attempted})
			require.NoError(t, err)
			assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
			assert.LessOrEqual(t, res.Requests, 6, "350 payouts to read: 4 pages, plus the first and the probe")
			assert.Contains(t, res.Reason, "before the cutoff")
		})
	}
}

// reconcileTestSettle is the settle time of searches that must look twice:
// the first look starts before it has passed only if the test reaches it in
// less time, so it is long enough for a loaded machine (a 20 ms one made a
// preempted test look once and see the payout as not created).
const reconcileTestSettle = time.Second

// TestReconcileLooksAgainAfterSettleTime: the list lags behind creation; a
// search before the settle time that finds nothing waits and looks again.
// That the second look waits for the settle time is shown by counts, not
// the clock: with an hour to go no second look comes before ctx ends ("ctx
// ends while waiting"), and with the settle time past there is one look.
func TestReconcileLooksAgainAfterSettleTime(t *testing.T) {
	t.Parallel()
	for name, newestFirst := range orders() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newSynthList(500, newestFirst)
			l.lagFor = 2 // the first look (2 requests oldest first, 1 newest first) misses it
			if newestFirst {
				l.lagFor = 1
			}
			c := listClient(t, l)
			attempted := time.Now()
			res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "o499", AttemptedAt: attempted, SettleTime: reconcileTestSettle})
			require.NoError(t, err)
			assert.Equal(t, PayoutExists, res.Verdict, res.Reason)
			assert.Equal(t, int(l.requests.Load()), res.Requests, "both looks are counted")
			assert.Greater(t, res.Requests, l.lagFor, "it looked again")
		})
	}
	t.Run("still not listed after the settle time", func(t *testing.T) {
		t.Parallel()
		l := newSynthList(500, false)
		c := listClient(t, l)
		res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: time.Now(), SettleTime: reconcileTestSettle})
		require.NoError(t, err)
		assert.Equal(t, PayoutNotCreated, res.Verdict, res.Reason)
		assert.Equal(t, 4, res.Requests, "two looks of two requests")
	})
	t.Run("settle time already past: one look", func(t *testing.T) {
		t.Parallel()
		l := newSynthList(500, false)
		c := listClient(t, l)
		res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "never-sent", AttemptedAt: time.Now().Add(-time.Second), SettleTime: 20 * time.Millisecond})
		require.NoError(t, err)
		assert.Equal(t, PayoutNotCreated, res.Verdict)
		assert.Equal(t, 2, res.Requests)
	})
	t.Run("ctx ends while waiting", func(t *testing.T) {
		t.Parallel()
		l := newSynthList(500, false)
		c := listClient(t, l)
		ctx, cancel := context.WithCancel(context.Background())
		l.onRequest = func(n int64) {
			if n == 2 {
				cancel()
			}
		}
		res, err := c.ReconcilePayout(ctx, ReconcileParams{OrderID: "never-sent", AttemptedAt: time.Now(), SettleTime: time.Hour})
		assert.ErrorIs(t, err, context.Canceled)
		require.NotNil(t, res)
		assert.Equal(t, PayoutStillUnknown, res.Verdict)
		assert.Equal(t, 2, res.Requests, "the first look only: the second waits for the settle time")
	})
}

func TestReconcileAPIError(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payout/list", serveJSON(401, `{"code":"unauthorized","message":"bad key"}`, nil, nil))
	res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "wd-1", AttemptedAt: time.Now()})
	assert.ErrorIs(t, err, ErrUnauthorized)
	require.NotNil(t, res)
	assert.Equal(t, PayoutStillUnknown, res.Verdict)
	assert.Equal(t, 1, res.Requests)
}

func TestReconcileParamsValidate(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name   string
		params ReconcileParams
		field  string
	}{
		{"no order", ReconcileParams{AttemptedAt: now}, "OrderID"},
		{"order not UTF-8", ReconcileParams{OrderID: "wd-\xff\xfe-42", AttemptedAt: now}, "OrderID"},
		{"attempt in the future", ReconcileParams{OrderID: "wd-1", AttemptedAt: now.Add(time.Hour)}, "AttemptedAt"},
		{"negative settle time", ReconcileParams{OrderID: "wd-1", AttemptedAt: now, SettleTime: -1}, "SettleTime"},
		{"negative skew", ReconcileParams{OrderID: "wd-1", AttemptedAt: now, ClockSkew: -1}, "ClockSkew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var hits atomic.Int32
			mux.HandleFunc("/", serveJSON(200, `{"payout":[],"count":0}`, nil, &hits))
			res, err := c.ReconcilePayout(context.Background(), tt.params)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.field, ve.Field)
			assert.Nil(t, res)
			assert.Zero(t, hits.Load())
		})
	}
}

func TestReconcileVerdictString(t *testing.T) {
	for v, s := range map[ReconcileVerdict]string{PayoutExists: "exists", PayoutNotCreated: "not_created", PayoutStillUnknown: "still_unknown", 0: "invalid"} {
		assert.Equal(t, s, v.String())
	}
}

// BenchmarkReconcile measures ReconcilePayout, with and without an attempt time, on
// accounts of 1,000 to 100,000 payouts (one a second, the newest a second
// old), served by a generated list on loopback in either order, for the
// newest payout and for one that was never created. Metric requests/op:
// list requests per call.
//
//	go test -run '^$' -bench Reconcile -benchtime 5x .
func BenchmarkReconcile(b *testing.B) {
	for _, total := range []int{1000, 10_000, 100_000} {
		for _, newestFirst := range []bool{false, true} {
			for _, target := range []string{"newest", "missing"} {
				for _, call := range []string{"ReconcilePayout", "ReconcilePayout-no-attempt-time"} {
					order := map[bool]string{false: "oldest-first", true: "newest-first"}[newestFirst]
					b.Run(call+"/"+order+"/"+strconv.Itoa(total)+"/"+target, func(b *testing.B) {
						benchReconcile(b, total, newestFirst, target == "newest", call == "ReconcilePayout")
					})
				}
			}
		}
	}
}

func benchReconcile(b *testing.B, total int, newestFirst, newest, reconcile bool) {
	l := newSynthList(total, newestFirst)
	l.base = time.Now().Add(-time.Duration(total) * time.Second).UTC().Truncate(time.Second)
	srv := httptest.NewServer(l)
	b.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, testKey)
	require.NoError(b, err)
	order := "never-sent"
	if newest {
		order = "o" + strconv.Itoa(total-1)
	}
	params := ReconcileParams{OrderID: order, AttemptedAt: time.Now().Add(-time.Minute)}
	ctx := context.Background()
	var requests int64
	for b.Loop() {
		before := l.requests.Load()
		if reconcile {
			res, err := c.ReconcilePayout(ctx, params)
			if err != nil || (res.Verdict == PayoutExists) != newest {
				b.Fatalf("%v %+v", err, res)
			}
		} else if _, found, err := findPayout(c, ctx, order); err != nil || found != newest {
			b.Fatalf("%v %v", err, found)
		}
		requests += l.requests.Load() - before
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
}
