package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// gateway is a hostile loopback proxy in front of the fake: edit may
// rewrite a create request's body before it is forwarded, and answer may
// answer a create itself (without forwarding it). It counts the creates
// and list reads that reach it.
type gateway struct {
	srv            *httptest.Server
	creates, lists atomic.Int64
	edit           func(body map[string]any)
	answer         func(w http.ResponseWriter) bool
	cutAnswer      bool // forward a create, then cut its answer's body off after the status
	mu             sync.Mutex
	cached         []byte // the first create answer, its orderId removed
}

func (r *qrig) gateway(t *testing.T, g *gateway) *cryptopay.Client {
	t.Helper()
	target, err := url.Parse(r.fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.Method == http.MethodPost && req.URL.Path == "/v1/payout":
			g.creates.Add(1)
			if g.answer != nil && g.answer(w) {
				return
			}
			if g.edit != nil {
				var body map[string]any
				b, _ := io.ReadAll(req.Body)
				require.NoError(t, json.Unmarshal(b, &body))
				g.edit(body)
				b, _ = json.Marshal(body)
				req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			}
			if g.cutAnswer {
				rec := httptest.NewRecorder()
				proxy.ServeHTTP(rec, req)
				body := rec.Body.Bytes()
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.WriteHeader(rec.Code)
				_, _ = w.Write(body[:len(body)/2])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the connection closes mid-body
			}
		case req.URL.Path == "/v1/payout/list":
			g.lists.Add(1)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(g.srv.Close)
	c, err := cryptopay.NewClient(g.srv.URL, r.fake.APIKey, cryptopay.WithInsecureHTTP(), cryptopay.WithTimeout(5*time.Second),
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 20 * time.Millisecond}))
	require.NoError(t, err)
	return c
}

// waitIntent polls q until orderID's intent satisfies cond (a generous
// bound on a hang, not a measurement).
func waitIntent(t *testing.T, q *pgstore.Queue, orderID, what string, cond func(*pgstore.Intent) bool) *pgstore.Intent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		in, err := q.Get(context.Background(), orderID)
		if err == nil && cond(in) {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: intent %+v, err %v", what, in, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server that stores another orderId than the one sent (a gateway that
// truncates it to 32 characters, as a varchar(32) column in MySQL's
// non-strict mode does) answers 2xx with the orderId it stored. The
// answer is evidence that the server acted: the intent is parked for a
// person with the answer's ids, and no "not created" from the list (which
// never shows the orderId sent) makes the queue send again. Before, each
// reconciliation said "not created" and the queue paid again and again.
func TestQueueAlteredOrderIDIsEvidence(t *testing.T) {
	r := newQRig(t)
	g := &gateway{edit: func(body map[string]any) {
		if id, _ := body["orderId"].(string); len(id) > 32 {
			body["orderId"] = id[:32]
		}
	}}
	client := r.gateway(t, g)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Client = client })
	p := payoutParams(1)
	p.OrderID = "withdrawal-2026-11-25-customer-000001-a" // 39 characters
	r.enqueue(t, q, p)
	r.payAll(t)
	run(t, q)
	waitIntent(t, q, p.OrderID, "parked with the 2xx on record", func(in *pgstore.Intent) bool {
		return in.State == pgstore.StateParked && in.Hold == pgstore.HoldServerActed
	})
	// The parked intent is still reconciled (a payout found by its orderId
	// would be followed); let the list be read a few more times.
	lists := g.lists.Load()
	deadline := time.Now().Add(30 * time.Second)
	for g.lists.Load() < lists+3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.GreaterOrEqual(t, g.lists.Load(), lists+3, "reconciled again while parked")
	in := waitIntent(t, q, p.OrderID, "still parked", func(in *pgstore.Intent) bool { return in.State == pgstore.StateParked })
	assert.Equal(t, int64(1), g.creates.Load(), "one create request")
	assert.Len(t, r.fake.Payouts(), 1, "one payout at the server")
	assert.Equal(t, 1, in.Attempts)
	assert.Empty(t, in.PayoutID, "an answer for another orderId is not bound to the intent")
	assert.Contains(t, in.LastError, p.OrderID[:32], "the orderId the answer named is on record")
	assert.Contains(t, in.LastError, r.fake.Payouts()[0].ID, "the payout id the answer named is on record")
	assert.Empty(t, r.effectCounts(t), "not final: a person decides")
}

// A caching gateway that replays the first create answer, its orderId
// removed, to every later create binds nothing: intent b is parked with
// the 2xx on record, never made paid with a's payout id, and never sent
// again on a list verdict.
func TestQueueReplayedAnswerIsNotMatched(t *testing.T) {
	r := newQRig(t)
	g := &gateway{}
	g.answer = func(w http.ResponseWriter) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.cached == nil {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(g.cached)
		return true
	}
	client := r.gateway(t, g)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Client = client })
	a, b := payoutParams(1), payoutParams(2)
	r.enqueue(t, q, a)
	r.payAll(t)
	stop := run(t, q)
	waitIntent(t, q, a.OrderID, "a paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	stop()
	ids := r.fake.PayoutIDsWithOrderID(a.OrderID)
	require.Len(t, ids, 1)
	g.mu.Lock()
	g.cached = []byte(`{"payoutId":"` + ids[0] + `","status":"created","walletAddress":"TXYZwallet","amount":10.25,` +
		`"currency":"usdt","network":"tron","networkFeeByUser":false,"customerId":"cust-1","customerIp":"203.0.113.7"}`)
	g.mu.Unlock()

	r.enqueue(t, q, b)
	run(t, q)
	waitIntent(t, q, b.OrderID, "b parked", func(in *pgstore.Intent) bool {
		return in.State == pgstore.StateParked && in.Hold == pgstore.HoldServerActed
	})
	lists := g.lists.Load()
	deadline := time.Now().Add(30 * time.Second)
	for g.lists.Load() < lists+3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	in := waitIntent(t, q, b.OrderID, "b still parked", func(in *pgstore.Intent) bool { return in.State == pgstore.StateParked })
	assert.Equal(t, int64(2), g.creates.Load(), "b's create sent once")
	assert.Empty(t, in.PayoutID, "b is not bound to a's payout")
	assert.Equal(t, 1, in.Attempts)
	assert.Contains(t, in.LastError, ids[0], "the id the answer named is on record")
	assert.True(t, strings.Contains(in.LastError, "names no orderId"), in.LastError)
	assert.Equal(t, map[string]int{a.OrderID: 1}, r.effectCounts(t), "no effect for b")
}

// A 2xx whose body breaks off is evidence too. A gateway that truncates
// the orderId (so the list never shows the one sent) and whose answer is
// cut mid-body: the intent is parked with HoldServerActed after one
// create request. Before, the SDK reported the cut 2xx like no answer at
// all, the list said "not created", and the queue sent again until
// MaxAttempts: three payouts for one intent.
func TestQueueCutAnswerIsEvidence(t *testing.T) {
	r := newQRig(t)
	g := &gateway{cutAnswer: true, edit: func(body map[string]any) {
		if id, _ := body["orderId"].(string); len(id) > 32 {
			body["orderId"] = id[:32]
		}
	}}
	client := r.gateway(t, g)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Client = client })
	p := payoutParams(1)
	p.OrderID = "withdrawal-2026-11-25-customer-000001-a"
	r.enqueue(t, q, p)
	run(t, q)
	in := waitIntent(t, q, p.OrderID, "parked", func(in *pgstore.Intent) bool { return in.State == pgstore.StateParked && in.Hold != "" })
	lists := g.lists.Load()
	waitCount(t, "more reconciliations", int(lists)+3, func() int { return int(g.lists.Load()) })
	assert.Equal(t, pgstore.HoldServerActed, in.Hold, in.LastError)
	assert.Equal(t, int64(1), g.creates.Load(), "one create request")
	assert.Len(t, r.fake.Payouts(), 1, "one payout at the server")
}
