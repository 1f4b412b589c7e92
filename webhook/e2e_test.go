package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

var e2eSecret = []byte("e2e-webhook-secret-0123456789abcdef")

// hookEnv is a fake API, a Client for it, and a merchant's webhook endpoint
// (a webhook.Handler with that Client) on loopback.
type hookEnv struct {
	srv    *cryptopaytest.Server
	client *cryptopay.Client
	hook   *httptest.Server

	mu       sync.Mutex
	payments []*cryptopay.Payment
	payouts  []*cryptopay.Payout
	fail     atomic.Int32 // the next n callbacks fail
}

func newHookEnv(t testing.TB, opts ...cryptopaytest.ServerOption) *hookEnv {
	t.Helper()
	e := &hookEnv{srv: cryptopaytest.NewServer(opts...)}
	t.Cleanup(e.srv.Close)
	e.client = e.srv.Client()
	h, err := webhook.NewHandler(webhook.Config{
		Secret: e2eSecret,
		Client: e.client,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			if e.fail.Add(-1) >= 0 {
				return errors.New("order database unavailable")
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.payments = append(e.payments, p)
			return nil
		},
		OnPayout: func(_ context.Context, p *cryptopay.Payout) error {
			if e.fail.Add(-1) >= 0 {
				return errors.New("order database unavailable")
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.payouts = append(e.payouts, p)
			return nil
		},
	})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/hooks/cryptopay", h)
	e.hook = httptest.NewServer(mux)
	t.Cleanup(e.hook.Close)
	return e
}

func (e *hookEnv) url(t testing.TB, orderID string) string {
	t.Helper()
	u, err := webhook.URL(e.hook.URL+"/hooks/cryptopay", e2eSecret, orderID)
	require.NoError(t, err)
	return u
}

func (e *hookEnv) createPayment(t testing.TB, orderID string) *cryptopay.Payment {
	t.Helper()
	p, err := e.client.CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("25.50"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.9", OrderID: orderID,
		WebhookURL: e.url(t, orderID),
	})
	require.NoError(t, err)
	return p
}

func (e *hookEnv) idle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.srv.WaitWebhooksIdle(ctx))
}

func (e *hookEnv) gotPayments() []*cryptopay.Payment {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*cryptopay.Payment(nil), e.payments...)
}

func (e *hookEnv) post(t *testing.T, method, target, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := e.hook.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestE2EPaymentWebhookFlow(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	p := e.createPayment(t, "order-flow")
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	e.idle(t)

	got := e.gotPayments()
	require.Len(t, got, 1, "exactly once")
	api, err := e.client.GetPayment(context.Background(), p.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentPaid, got[0].Status)
	assert.Equal(t, api.ID, got[0].ID)
	assert.Equal(t, "order-flow", got[0].OrderID)
	assert.True(t, got[0].PaidAmount.Valid)
	assert.True(t, api.PaidAmount.Decimal.Equal(got[0].PaidAmount.Decimal))
	assert.True(t, api.MerchantAmount.Decimal.Equal(got[0].MerchantAmount.Decimal))
	for _, d := range e.srv.Webhooks() {
		assert.True(t, d.Delivered(), "attempt %d: %d %s", d.Attempt, d.StatusCode, d.Err)
	}
}

func TestE2ELatePaymentAfterExpiry(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	p := e.createPayment(t, "order-late")
	e.srv.Advance(cryptopaytest.DefaultPaymentTTL + time.Minute)
	e.idle(t)
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	e.idle(t)
	var seen []cryptopay.PaymentStatus
	for _, g := range e.gotPayments() {
		seen = append(seen, g.Status)
	}
	assert.Equal(t, []cryptopay.PaymentStatus{cryptopay.PaymentExpired, cryptopay.PaymentPaid}, seen,
		"terminal is not final: the late payment is delivered")
}

func TestE2EPayoutWebhookFlow(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	po, err := e.client.CreatePayout(context.Background(), cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("3"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.9", OrderID: "wd-1", WebhookURL: e.url(t, "wd-1"),
	})
	require.NoError(t, err)
	require.NoError(t, e.srv.SetPayoutStatus(po.ID, cryptopay.PayoutProcessing))
	e.idle(t)
	require.NoError(t, e.srv.SetPayoutStatus(po.ID, cryptopay.PayoutPaid))
	e.idle(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(t, e.payouts, 2)
	assert.Equal(t, cryptopay.PayoutProcessing, e.payouts[0].Status)
	assert.Equal(t, cryptopay.PayoutPaid, e.payouts[1].Status)
	assert.True(t, e.payouts[1].PaidAmount.Valid)
}

func TestE2ERejectsForgeries(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	a := e.createPayment(t, "order-A")
	b := e.createPayment(t, "order-B")
	require.NoError(t, e.srv.Pay(b.ID, b.PayAmount)) // B is paid, A is not
	e.idle(t)
	bDelivery := e.srv.Webhooks()[0]
	require.Equal(t, b.ID, bDelivery.ObjectID)
	before := len(e.gotPayments())
	require.Equal(t, 1, before)

	aURL := e.url(t, "order-A")
	u, _ := url.Parse(aURL)
	noToken := e.hook.URL + u.Path
	wrongToken := noToken + "?token=" + strings.Repeat("A", 43)
	paidBodyForA := strings.Replace(string(bDelivery.Body), b.ID, a.ID, 1)
	paidBodyForA = strings.ReplaceAll(paidBodyForA, "order-B", "order-A")
	bBodyClaimingA := strings.ReplaceAll(string(bDelivery.Body), "order-B", "order-A")

	tests := []struct {
		name, method, target, body string
		code                       int
	}{
		{"missing token", http.MethodPost, noToken, paidBodyForA, http.StatusUnauthorized},
		{"forged token", http.MethodPost, wrongToken, paidBodyForA, http.StatusUnauthorized},
		{"B's genuine body under A's token", http.MethodPost, aURL, string(bDelivery.Body), http.StatusUnauthorized},
		{"B's id claiming order A", http.MethodPost, aURL, bBodyClaimingA, http.StatusUnauthorized},
		{"unknown payment id", http.MethodPost, aURL, strings.Replace(paidBodyForA, a.ID, "00000000-0000-4000-8000-000000000000", 1), http.StatusNotFound},
		{"wrong method", http.MethodGet, aURL, "", http.StatusMethodNotAllowed},
		{"oversized body", http.MethodPost, aURL, `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, http.StatusRequestEntityTooLarge},
		{"not JSON", http.MethodPost, aURL, "<xml/>", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.code, e.post(t, tt.method, tt.target, tt.body))
		})
	}
	assert.Len(t, e.gotPayments(), before, "no callback for any forgery")

	// A forged "paid" under A's genuine token: the callback gets the API's
	// version (waiting), once, and never "paid"; the sender is asked to
	// retry because the posted status is ahead of the API.
	for range 3 {
		assert.Equal(t, http.StatusServiceUnavailable, e.post(t, http.MethodPost, aURL, paidBodyForA))
	}
	got := e.gotPayments()
	require.Len(t, got, before+1)
	assert.Equal(t, a.ID, got[before].ID)
	assert.Equal(t, cryptopay.PaymentWaiting, got[before].Status)
	st, err := e.srv.PaymentStatus(a.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, st)
}

func TestE2EReplayIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	p := e.createPayment(t, "order-replay")
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	e.idle(t)
	d := e.srv.Webhooks()[0]
	for range 5 {
		assert.Equal(t, http.StatusOK, e.post(t, http.MethodPost, d.URL, string(d.Body)), "acknowledged")
	}
	assert.Len(t, e.gotPayments(), 1, "a replayed event reaches the callback once")
}

func TestE2ECallbackFailureIsRedelivered(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t, cryptopaytest.WithWebhookRetry(5, time.Millisecond))
	e.fail.Store(2)
	p := e.createPayment(t, "order-retry")
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	e.idle(t)
	var codes []int
	for _, d := range e.srv.Webhooks() {
		codes = append(codes, d.StatusCode)
	}
	assert.Equal(t, []int{500, 500, 200}, codes, "the fake retried until the callback succeeded")
	got := e.gotPayments()
	require.Len(t, got, 1)
	assert.Equal(t, cryptopay.PaymentPaid, got[0].Status)
}

func TestE2EAPIDownMeansRetry(t *testing.T) {
	t.Parallel()
	// The handler's 503 asks for a retry in 5 s; the webhook client takes
	// that Retry-After off (recording it), so the redelivery waits the
	// fake's 1 ms backoff instead.
	ra := &retryAfterTaker{base: &http.Transport{}}
	t.Cleanup(ra.base.CloseIdleConnections)
	e := newHookEnv(t, cryptopaytest.WithWebhookRetry(5, time.Millisecond),
		cryptopaytest.WithWebhookClient(&http.Client{Transport: ra, Timeout: 5 * time.Second}))
	p := e.createPayment(t, "order-apidown")
	// The handler's re-read fails (4 attempts inside GetPayment), so the
	// webhook is answered 503 and the fake redelivers.
	e.srv.InjectFault(cryptopaytest.RouteGetPayment, cryptopaytest.Fault{Times: 4, Status: http.StatusServiceUnavailable})
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	e.idle(t)
	var codes []int
	for _, d := range e.srv.Webhooks() {
		codes = append(codes, d.StatusCode)
	}
	assert.Equal(t, []int{503, 200}, codes)
	assert.Equal(t, []string{"5"}, ra.taken(), "the 503 asked the sender to come back in 5 s")
	assert.Len(t, e.gotPayments(), 1)
}

// retryAfterTaker sends webhooks through base and takes the Retry-After
// header off every answer, recording its value.
type retryAfterTaker struct {
	base *http.Transport
	mu   sync.Mutex
	got  []string
}

func (rt *retryAfterTaker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(r)
	if err == nil && resp.Header.Get("Retry-After") != "" {
		rt.mu.Lock()
		rt.got = append(rt.got, resp.Header.Get("Retry-After"))
		rt.mu.Unlock()
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

func (rt *retryAfterTaker) taken() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.got...)
}

func TestE2EWebhookWakesWaiter(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	p := e.createPayment(t, "order-wake")
	before := e.srv.Requests(cryptopaytest.RouteGetPayment)

	type result struct {
		p   *cryptopay.Payment
		err error
	}
	done := make(chan result, 1)
	go func() {
		// An hour between polls: only the webhook can end this wait soon.
		got, err := e.client.WaitForPayment(context.Background(), cryptopay.WaitForPaymentParams{ID: p.ID, PollInterval: time.Hour})
		done <- result{got, err}
	}()
	hookUntil(t, func() bool { return e.srv.Requests(cryptopaytest.RouteGetPayment) == before+1 })
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, cryptopay.PaymentPaid, r.p.Status)
	assert.True(t, r.p.PaidAmount.Valid)
	e.idle(t)
	assert.Equal(t, before+2, e.srv.Requests(cryptopaytest.RouteGetPayment),
		"one read by the wait, one by the handler: the wake-up hands over the handler's read")
}

func TestE2EWaitForPayoutPolls(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	po, err := e.client.CreatePayout(context.Background(), cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("1.25"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.9", OrderID: "wd-poll",
	})
	require.NoError(t, err)
	var seen []cryptopay.PayoutStatus
	moves := []cryptopay.PayoutStatus{cryptopay.PayoutReview, cryptopay.PayoutProcessing, cryptopay.PayoutConfirming, cryptopay.PayoutPaid}
	got, err := e.client.WaitForPayout(context.Background(), cryptopay.WaitForPayoutParams{ID: po.ID, PollInterval: time.Millisecond, MaxPollInterval: time.Millisecond, OnStatusChange: func(p *cryptopay.Payout) {
		seen = append(seen, p.Status)
		// Drive the fake from the callback: each status seen moves it on.
		if len(seen) <= len(moves) {
			assert.NoError(t, e.srv.SetPayoutStatus(po.ID, moves[len(seen)-1]))
		}
	}})
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PayoutPaid, got.Status)
	assert.Equal(t, []cryptopay.PayoutStatus{"created", "review", "processing", "confirming", "paid"}, seen)
}

func TestE2EWaitNotFound(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	_, err := e.client.WaitForPayment(context.Background(), cryptopay.WaitForPaymentParams{ID: "00000000-0000-4000-8000-000000000000", PollInterval: time.Millisecond})
	require.ErrorIs(t, err, cryptopay.ErrNotFound)
	assert.Equal(t, 1, e.srv.Requests(cryptopaytest.RouteGetPayment))
}

// hookUntil polls cond every millisecond; it is a bound, not a timing assertion.
func hookUntil(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// burstResult is what one run of burstOfCompletions saw.
type burstResult struct {
	delivered int64 // paid events that reached the callback
	busy      int64 // events answered 503 (backpressure or retry later)
}

// burstPoll is how often the waits of burstOfCompletions poll: never within
// the test's deadline, so a wait can only return by being woken.
const burstPoll = time.Hour

// burstOfCompletions creates n payments, starts a wait for each (polling
// every burstPoll), pays them all at once and waits for the waits to
// return. Each payment's webhook goes to a handler sharing the waits'
// Client, which wakes them.
func burstOfCompletions(t *testing.T, n int) burstResult {
	srv := cryptopaytest.NewServer(cryptopaytest.WithWebhookRetry(12, 20*time.Millisecond))
	defer srv.Close()
	client := srv.Client()
	var res burstResult
	delivered := make(map[string]int, n)
	var mu sync.Mutex
	hook := httptest.NewServer(burstHandler(t, client, &res, &mu, delivered))
	defer hook.Close()
	hookURL := func(order string) string {
		u, err := webhook.URL(hook.URL, e2eSecret, order)
		require.NoError(t, err)
		return u
	}
	inProcess := srv.Client(cryptopay.WithHTTPClient(&http.Client{Transport: handlerTransport{srv.Handler()}}))
	payments := createPayments(t, inProcess, n, hookURL)

	// The deadline only bounds a failure: no wait's poll timer fires before it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	readsBefore := srv.Requests(cryptopaytest.RouteGetPayment)
	var wg sync.WaitGroup
	var returned atomic.Int64
	for _, p := range payments {
		wg.Go(func() {
			got, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: p.ID, PollInterval: burstPoll, MaxPollInterval: burstPoll})
			assert.NoError(t, err, "payment %s: a wait returns only when woken", p.ID)
			if err == nil {
				returned.Add(1)
				assert.Equal(t, cryptopay.PaymentPaid, got.Status)
			}
		})
	}
	for srv.Requests(cryptopaytest.RouteGetPayment)-readsBefore < n { // every wait has read once
		require.NoError(t, ctx.Err())
		time.Sleep(time.Millisecond)
	}
	// Each wait has made its first read and now sleeps for an hour: every
	// read from here on follows a wake-up.
	assert.Equal(t, n, srv.Requests(cryptopaytest.RouteGetPayment)-readsBefore, "polls before the wake-up: one per wait")
	for _, p := range payments {
		require.NoError(t, srv.Pay(p.ID, p.PayAmount))
	}
	wg.Wait()
	assert.Equal(t, int64(n), returned.Load(), "waits woken by webhooks")
	require.NoError(t, srv.WaitWebhooksIdle(ctx))
	mu.Lock()
	defer mu.Unlock()
	for _, p := range payments {
		assert.Equal(t, 1, delivered[p.ID], "payment %s: its paid event reaches the callback once", p.ID)
		res.delivered += int64(delivered[p.ID])
	}
	return res
}

// burstHandler is the merchant's handler of burstOfCompletions: it counts
// the paid events per payment and the 503 answers.
func burstHandler(t *testing.T, client *cryptopay.Client, res *burstResult, mu *sync.Mutex, delivered map[string]int) http.Handler {
	h, err := webhook.NewHandler(webhook.Config{
		Secret: e2eSecret,
		Client: client,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			if p.Status == cryptopay.PaymentPaid {
				mu.Lock()
				delivered[p.ID]++
				mu.Unlock()
			}
			return nil
		},
		OnEvent: func(_ context.Context, ev webhook.EventInfo) {
			if ev.StatusCode == http.StatusServiceUnavailable {
				mu.Lock()
				res.busy++
				mu.Unlock()
			}
		},
	})
	require.NoError(t, err)
	return h
}

// TestE2EBurstOfCompletions pays 10,000 payments at once (250 under -race,
// still four times the fake's and the handler's bound of 64, to keep the
// README's test command quick; CI runs it at full size without -race),
// each with a wait whose poll timer is an hour: every wait returns
// (so each was woken through a handler on the same Client, not by its
// timer), each after exactly one read before the wake-up, and every paid
// event reaches the callback exactly once (the fake sends 64 at a time; the
// handler re-reads at most 64 at a time and asks for a retry beyond that).
func TestE2EBurstOfCompletions(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 payments")
	}
	t.Parallel() // its own fake, Client and handler; it counts, measures no heap
	n := 10_000
	if raceEnabled {
		n = 250
	}
	woken := burstOfCompletions(t, n)
	t.Logf("%d completions woken by webhooks (%d busy answers)", n, woken.busy)
	assert.Equal(t, int64(n), woken.delivered)
}

// TestE2EWaitForPayoutByOrderIDLearnsTheIDFromAWebhook: a payout whose
// create answer was lost is followed by its orderId. The wait reads the
// list once (the item has no payout id); the payout's webhooks, re-read
// by the handler on the same Client, hand the wait the payout with its
// id, so the wait ends on the final status with no further read of its
// own.
func TestE2EWaitForPayoutByOrderIDLearnsTheIDFromAWebhook(t *testing.T) {
	e := newHookEnv(t, cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1000)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const order = "wd-e2e-follow-hook"
	e.srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	_, err := e.client.CreatePayout(ctx, cryptopay.CreatePayoutParams{WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE",
		Amount: decimal.RequireFromString("12.5"), Currency: "usdt", Network: "tron", CustomerID: "cust-1",
		CustomerIP: "203.0.113.9", OrderID: order, WebhookURL: e.url(t, order)})
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
	res, err := e.client.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: order})
	require.NoError(t, err)
	require.Equal(t, cryptopay.PayoutExists, res.Verdict, res.Reason)
	ids := e.srv.PayoutIDsWithOrderID(order)
	require.Len(t, ids, 1)

	lists := e.srv.Requests(cryptopaytest.RouteListPayouts)
	done := make(chan *cryptopay.Payout, 1)
	go func() {
		p, err := e.client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: order, PollInterval: time.Hour})
		assert.NoError(t, err)
		done <- p
	}()
	hookUntil(t, func() bool { return e.srv.Requests(cryptopaytest.RouteListPayouts) > lists })
	require.NoError(t, e.srv.SetPayoutStatus(ids[0], cryptopay.PayoutProcessing))
	e.idle(t)
	require.NoError(t, e.srv.SetPayoutStatus(ids[0], cryptopay.PayoutPaid))
	final := <-done
	require.NotNil(t, final)
	assert.Equal(t, cryptopay.PayoutPaid, final.Status)
	assert.Equal(t, ids[0], final.ID, "the webhook taught the wait the payout id")
	assert.Equal(t, lists+1, e.srv.Requests(cryptopaytest.RouteListPayouts), "one list read by the wait")
	e.idle(t)
	assert.Equal(t, 2, e.srv.Requests(cryptopaytest.RouteGetPayout), "only the handler's re-reads, one per webhook")
}
