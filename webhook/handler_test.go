package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/testfix"
)

var whSecret = []byte("whsec-0123456789abcdef-0123456789")

const whOrder = "order-1"

// whURL is the signed webhook URL for orderID under whSecret.
func whURL(t testing.TB, orderID string) string {
	t.Helper()
	u, err := URL("https://shop.example/hooks/cryptopay", whSecret, orderID)
	require.NoError(t, err)
	return u
}

func whRequest(t testing.TB, target, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// recorder collects what the callbacks received.
type recorder struct {
	mu       sync.Mutex
	payments []*cryptopay.Payment
	payouts  []*cryptopay.Payout
	fail     atomic.Int32 // fail this many calls
	panics   atomic.Int32 // panic in this many calls
}

func (rc *recorder) onPayment(_ context.Context, p *cryptopay.Payment) error {
	if rc.panics.Add(-1) >= 0 {
		panic("callback exploded")
	}
	if rc.fail.Add(-1) >= 0 {
		return errors.New("database down")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.payments = append(rc.payments, p)
	return nil
}

func (rc *recorder) onPayout(_ context.Context, p *cryptopay.Payout) error {
	if rc.fail.Add(-1) >= 0 {
		return errors.New("database down")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.payouts = append(rc.payouts, p)
	return nil
}

func (rc *recorder) counts() (int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.payments), len(rc.payouts)
}

// syncBuffer is a log sink for tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestHandler(t testing.TB, client *cryptopay.Client, rc *recorder, logs io.Writer) *Handler {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	h, err := NewHandler(Config{
		Secret:    whSecret,
		Client:    client,
		OnPayment: rc.onPayment,
		OnPayout:  rc.onPayout,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	return h
}

func TestNewWebhookHandlerValidation(t *testing.T) {
	t.Parallel()
	cb := func(context.Context, *cryptopay.Payment) error { return nil }
	c, _ := setup(t)
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok callback", Config{Secret: whSecret, OnPayment: cb}, true},
		{"ok client only", Config{Secret: whSecret, Client: c}, true},
		{"short secret", Config{Secret: []byte("0123456789abcde"), OnPayment: cb}, false},
		{"zero secret", Config{Secret: make([]byte, 64), OnPayment: cb}, false},
		{"nothing to do", Config{Secret: whSecret}, false},
		{"negative limit", Config{Secret: whSecret, OnPayment: cb, MaxBodyBytes: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := NewHandler(tt.cfg)
			if tt.ok {
				require.NoError(t, err)
				require.NotNil(t, h)
				return
			}
			require.ErrorIs(t, err, cryptopay.ErrInvalidParams)
			assert.Nil(t, h)
		})
	}
}

func TestWebhookSecretIsCopied(t *testing.T) {
	t.Parallel()
	secret := bytes.Clone(whSecret)
	rc := &recorder{}
	h, err := NewHandler(Config{Secret: secret, OnPayment: rc.onPayment})
	require.NoError(t, err)
	for i := range secret {
		secret[i] = 'z'
	}
	body := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())
	w := serve(h, whRequest(t, whURL(t, whOrder), body))
	assert.Equal(t, http.StatusOK, w.Code)
}

// TestWebhookRequests covers every answer of a handler without a Client.
func TestWebhookRequests(t *testing.T) {
	t.Parallel()
	payment := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())
	payout := waitPayoutJSON(waitPayoutID, "paid", whOrder)
	signed := whURL(t, whOrder)
	otherOrder := whURL(t, "order-2")
	good := strings.TrimPrefix(signed, "https://shop.example/hooks/cryptopay?token=")
	tests := []struct {
		name     string
		method   string
		target   string
		body     string
		code     int
		payments int
		payouts  int
	}{
		{"payment", http.MethodPost, signed, payment, 200, 1, 0},
		{"payout", http.MethodPost, signed, payout, 200, 0, 1},
		{"GET", http.MethodGet, signed, "", 405, 0, 0},
		{"PUT", http.MethodPut, signed, payment, 405, 0, 0},
		{"no token", http.MethodPost, "/hooks/cryptopay", payment, 401, 0, 0},
		{"empty token", http.MethodPost, "/hooks/cryptopay?token=", payment, 401, 0, 0},
		{"token twice", http.MethodPost, signed + "&token=" + good, payment, 401, 0, 0},
		{"forged token", http.MethodPost, "/h?token=" + base64.RawURLEncoding.EncodeToString(make([]byte, 32)), payment, 401, 0, 0},
		{"token not base64", http.MethodPost, "/h?token=" + strings.Repeat("*", 43), payment, 401, 0, 0},
		{"token truncated", http.MethodPost, "/h?token=" + good[:42], payment, 401, 0, 0},
		{"token in hex", http.MethodPost, "/h?token=" + strings.Repeat("ab", 32), payment, 401, 0, 0},
		{"token of another order", http.MethodPost, otherOrder, payment, 401, 0, 0},
		{"body names another order", http.MethodPost, signed, strings.Replace(payment, whOrder, "order-2", 1), 401, 0, 0},
		{"orderId missing", http.MethodPost, signed, `{"paymentId":"` + waitPaymentID + `","status":"paid"}`, 401, 0, 0},
		{"empty body", http.MethodPost, signed, "", 400, 0, 0},
		{"not JSON", http.MethodPost, signed, "paid!", 400, 0, 0},
		{"truncated JSON", http.MethodPost, signed, payment[:40], 400, 0, 0},
		{"trailing data", http.MethodPost, signed, payment + "{}", 400, 0, 0},
		{"array", http.MethodPost, signed, "[" + payment + "]", 400, 0, 0},
		{"null", http.MethodPost, signed, "null", 400, 0, 0},
		{"no id", http.MethodPost, signed, `{"orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"both ids", http.MethodPost, signed, `{"paymentId":"` + waitPaymentID + `","payoutId":"x","orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"null id", http.MethodPost, signed, `{"paymentId":null,"orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"numeric id", http.MethodPost, signed, `{"paymentId":12,"orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"payment id not a UUID", http.MethodPost, signed, `{"paymentId":"../x","orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"payout id with control character", http.MethodPost, signed, `{"payoutId":"a\u0001b","orderId":"order-1","status":"paid"}`, 400, 0, 0},
		{"no status", http.MethodPost, signed, `{"paymentId":"` + waitPaymentID + `","orderId":"order-1"}`, 400, 0, 0},
		{"overlong status", http.MethodPost, signed, strings.Replace(payment, `"paid"`, `"`+strings.Repeat("p", 65)+`"`, 1), 400, 0, 0},
		{"bad amount", http.MethodPost, signed, strings.Replace(payment, "10.5", `"lots"`, 1), 400, 0, 0},
		{"amount over 128 characters", http.MethodPost, signed, strings.Replace(payment, "10.5", strings.Repeat("1", 129), 1), 400, 0, 0},
		{"orderId twice", http.MethodPost, signed, strings.Replace(payment, "{", `{"orderId":"order-2",`, 1), 400, 0, 0},
		{"orderId a number", http.MethodPost, signed, strings.Replace(payment, `"orderId":"order-1"`, `"orderId":1`, 1), 400, 0, 0},
		{"orderId escaped", http.MethodPost, signed, strings.Replace(payment, `"orderId":"order-1"`, `"orderId":"order\u002d1"`, 1), 200, 1, 0},
		{"unknown fields ok", http.MethodPost, signed, strings.Replace(payment, "{", `{"extra":{"a":[1,2]},`, 1), 200, 1, 0},
		{"unknown status ok", http.MethodPost, signed, strings.Replace(payment, `"paid"`, `"refunded"`, 1), 200, 1, 0},
		{"too large", http.MethodPost, signed, `{"pad":"` + strings.Repeat("x", 2<<20) + `"}`, 413, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := &recorder{}
			var logs syncBuffer
			h := newTestHandler(t, nil, rc, &logs)
			r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			w := serve(h, r)
			assert.Equal(t, tt.code, w.Code, w.Body.String())
			assert.LessOrEqual(t, w.Body.Len(), 32, "tiny bodies")
			assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
			if tt.code == 405 {
				assert.Equal(t, "POST", w.Header().Get("Allow"))
			}
			p, po := rc.counts()
			assert.Equal(t, tt.payments, p)
			assert.Equal(t, tt.payouts, po)
			// Nothing secret or from the body in the logs.
			l := logs.String()
			assert.NotContains(t, l, good)
			assert.NotContains(t, l, string(whSecret))
			assert.NotContains(t, l, "203.0.113.7", "customer IP from the body")
		})
	}
}

func TestWebhookChunkedBodyOverLimit(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	h, err := NewHandler(Config{Secret: whSecret, OnPayment: rc.onPayment, MaxBodyBytes: 100})
	require.NoError(t, err)
	body := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())
	r := whRequest(t, whURL(t, whOrder), body)
	r.ContentLength = -1 // unknown length: the limit applies while reading
	assert.Equal(t, http.StatusRequestEntityTooLarge, serve(h, r).Code)
	r = whRequest(t, whURL(t, whOrder), body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, serve(h, r).Code, "declared length over the limit")
	p, _ := rc.counts()
	assert.Zero(t, p)
}

func TestWebhookRereadsThroughTheAPI(t *testing.T) {
	t.Parallel()
	posted := func(status string) string { return waitPaymentJSON(waitPaymentID, status, whOrder, time.Now()) }
	tests := []struct {
		name     string
		api      step
		apiOrder string // orderId the API reports; "" means whOrder
		apiID    string // id the API reports; "" means the posted one
		body     string
		code     int
		got      cryptopay.PaymentStatus // what the callback received; "" means not called
	}{
		{"same status", step{value: "paid"}, "", "", posted("paid"), 200, cryptopay.PaymentPaid},
		{"forged paid, API waiting", step{value: "waiting"}, "", "", posted("paid"), 503, cryptopay.PaymentWaiting},
		{"stale event, API moved on", step{value: "paid"}, "", "", posted("confirming"), 200, cryptopay.PaymentPaid},
		{"late payment after expiry", step{value: "paid"}, "", "", posted("expired"), 200, cryptopay.PaymentPaid},
		{"another order's payment", step{value: "paid"}, "order-B", "", posted("paid"), 401, ""},
		{"API answers another id", step{value: "paid"}, "", paymentID, posted("paid"), 503, ""},
		{"unknown id", step{status: 404}, "", "", posted("paid"), 404, ""},
		{"API down", step{status: 503}, "", "", posted("paid"), 503, ""},
		{"API unreachable", step{err: errors.New("connection refused")}, "", "", posted("paid"), 503, ""},
		{"our key refused", step{status: 401}, "", "", posted("paid"), 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			order, id := whOrder, waitPaymentID
			if tt.apiOrder != "" {
				order = tt.apiOrder
			}
			if tt.apiID != "" {
				id = tt.apiID
			}
			s := &script{steps: []step{tt.api}, body: func(v string) string {
				return strings.Replace(waitPaymentJSON(id, v, order, time.Now()), `"paidAmount":null`, `"paidAmount":"10.5"`, 1)
			}}
			mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
			rc := &recorder{}
			var logs syncBuffer
			h := newTestHandler(t, c, rc, &logs)

			w := serve(h, whRequest(t, whURL(t, whOrder), tt.body))
			assert.Equal(t, tt.code, w.Code, w.Body.String())
			if tt.code == 503 {
				assert.NotEmpty(t, w.Header().Get("Retry-After"))
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if tt.got == "" {
				assert.Empty(t, rc.payments)
				return
			}
			require.Len(t, rc.payments, 1)
			assert.Equal(t, tt.got, rc.payments[0].Status)
			assert.True(t, rc.payments[0].PaidAmount.Valid, "the API's object, not the posted one")
			assert.NotContains(t, logs.String(), "203.0.113.7")
		})
	}
}

func TestWebhookForgedStatusDeliveredOnceAsTheAPISaysIt(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := paymentScript(step{value: "waiting"})
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
	rc := &recorder{}
	h := newTestHandler(t, c, rc, nil)
	for range 3 {
		w := serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	}
	require.Len(t, rc.payments, 1)
	assert.Equal(t, cryptopay.PaymentWaiting, rc.payments[0].Status)
	assert.Equal(t, int32(3), s.calls.Load(), "every event is re-read")
}

func TestWebhookPayoutReread(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := payoutScript(step{value: "processing"}, step{value: "paid"})
	mux.HandleFunc("GET /v1/payout/"+waitPayoutID+"/status", s.handle)
	rc := &recorder{}
	h := newTestHandler(t, c, rc, nil)
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), waitPayoutJSON(waitPayoutID, "processing", whOrder))).Code)
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), waitPayoutJSON(waitPayoutID, "processing", whOrder))).Code)
	_, n := rc.counts()
	require.Equal(t, 2, n)
	assert.Equal(t, cryptopay.PayoutProcessing, rc.payouts[0].Status)
	assert.Equal(t, cryptopay.PayoutPaid, rc.payouts[1].Status, "the second read found it paid")
}

func TestWebhookWakesWaiters(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	var paid atomic.Bool
	s := paymentScript(step{value: "waiting"})
	s.body = func(string) string {
		st := "waiting"
		if paid.Load() {
			st = "paid"
		}
		return waitPaymentJSON(waitPaymentID, st, whOrder, time.Now())
	}
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
	// Only a Client: the handler exists to wake waits.
	h, err := NewHandler(Config{Secret: whSecret, Client: c})
	require.NoError(t, err)

	done := make(chan *cryptopay.Payment, 1)
	go func() {
		p, err := c.WaitForPayment(context.Background(), cryptopay.WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour})
		assert.NoError(t, err)
		done <- p
	}()
	waitUntil(t, func() bool { return s.calls.Load() == 1 })
	paid.Store(true)
	assert.Equal(t, 200, serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now()))).Code)
	p := <-done
	assert.Equal(t, cryptopay.PaymentPaid, p.Status)
	assert.Equal(t, int32(2), s.calls.Load(), "one read by the wait, one by the handler")
}

func TestWebhookForgedEventDoesNotWakeWithPostedStatus(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := paymentScript(step{value: "waiting"})
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
	h, err := NewHandler(Config{Secret: whSecret, Client: c})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	var changes atomic.Int32
	done := make(chan *cryptopay.Payment, 1)
	go func() {
		p, _ := c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour, OnStatusChange: func(*cryptopay.Payment) { changes.Add(1) }})
		done <- p
	}()
	// The wait has read and taken its first status (the server's count
	// alone comes before the answer reaches the wait: cancelled then, the
	// wait had no status to return).
	waitUntil(t, func() bool { return changes.Load() == 1 })
	serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())))
	waitUntil(t, func() bool { return s.calls.Load() == 2 })
	cancel()
	p := <-done
	assert.Equal(t, cryptopay.PaymentWaiting, p.Status, "the wait got the API's waiting, not the posted paid")
	assert.Equal(t, int32(1), changes.Load())
}

// TestWebhookHostileBodyCostsNothingBeforeAuth posts a 1 MiB body whose
// amount has a million digits. Unauthenticated, it is refused 401 after one
// scan of the body: what the handler allocates is the body as it is read
// (growing, about twice its size; twice that again under -race) and a few
// small values, where decoding the amount allocated 2.4 GB.
// Authenticated, the amount is refused by its length, still undecoded.
func TestWebhookHostileBodyCostsNothingBeforeAuth(t *testing.T) {
	prefix := `{"paymentId":"` + waitPaymentID + `","status":"paid","payAmount":`
	suffix := `,"orderId":"order-1"}`
	body := prefix + strings.Repeat("7", DefaultMaxBodyBytes-len(prefix)-len(suffix)) + suffix
	require.Len(t, body, DefaultMaxBodyBytes)
	rc := &recorder{}
	h := newTestHandler(t, nil, rc, nil)
	forged := "/hooks/cryptopay?token=" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name    string
		target  string
		chunked bool
		code    int
		maxHeap uint64 // bytes allocated per request
	}{
		{"forged token", forged, false, http.StatusUnauthorized, 8 << 20},
		{"forged token, unknown length", forged, true, http.StatusUnauthorized, 8 << 20},
		{"valid token", whURL(t, whOrder), false, http.StatusBadRequest, 8 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := func() *http.Request {
				r := whRequest(t, tt.target, body)
				if tt.chunked {
					r.ContentLength = -1
				}
				return r
			}
			// Warm up, then count one request's allocations.
			require.Equal(t, tt.code, serve(h, req()).Code)
			r, w := req(), httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			h.ServeHTTP(w, r)
			runtime.ReadMemStats(&after)
			require.Equal(t, tt.code, w.Code)
			allocs, bytes := after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
			t.Logf("%d allocations, %d bytes", allocs, bytes)
			assert.LessOrEqual(t, bytes, tt.maxHeap)
			assert.LessOrEqual(t, allocs, uint64(100))
		})
	}
	p, _ := rc.counts()
	assert.Zero(t, p)
}

// TestWebhookBoundsConcurrentRereads fills the re-read slots with events
// whose re-read hangs; the next event is answered 503 with Retry-After at
// once, without a read, and once a slot frees up events go through again.
func TestWebhookBoundsConcurrentRereads(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	entered := make(chan string, 4)
	release := make(chan struct{})
	var reads atomic.Int32
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		id := r.PathValue("id")
		if id != paymentID {
			entered <- id
			<-release
		}
		_, _ = io.WriteString(w, waitPaymentJSON(id, "paid", whOrder, time.Now()))
	})
	rc := &recorder{}
	h, err := NewHandler(Config{Secret: whSecret, Client: c, OnPayment: rc.onPayment, MaxConcurrentRereads: 2})
	require.NoError(t, err)
	post := func(id string) *httptest.ResponseRecorder {
		return serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(id, "paid", whOrder, time.Now())))
	}

	held := []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"}
	codes := make(chan int, len(held))
	for _, id := range held {
		go func() { codes <- post(id).Code }()
	}
	<-entered
	<-entered // both slots taken
	w := post(paymentID)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Equal(t, int32(2), reads.Load(), "refused before reading")

	close(release)
	for range held {
		assert.Equal(t, http.StatusOK, <-codes)
	}
	assert.Equal(t, http.StatusOK, post(paymentID).Code, "a free slot: delivered")
	p, _ := rc.counts()
	assert.Equal(t, 3, p)

	_, err = NewHandler(Config{Secret: whSecret, Client: c, MaxConcurrentRereads: -1})
	require.ErrorIs(t, err, cryptopay.ErrInvalidParams)
}

// TestWebhookObserver checks that the observer hears once about every
// request answered, with the kind, the status code and the result word.
func TestWebhookObserver(t *testing.T) {
	t.Parallel()
	type seen struct {
		kind   string
		code   int
		result string
	}
	var mu sync.Mutex
	var got []seen
	onEvent := func(_ context.Context, ev EventInfo) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{ev.Kind, ev.StatusCode, ev.Result})
	}
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == paymentID {
			http.Error(w, `{"code":"down"}`, http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, waitPaymentJSON(r.PathValue("id"), "paid", whOrder, time.Now()))
	})
	rc := &recorder{}
	rc.fail.Store(1)
	h, err := NewHandler(Config{Secret: whSecret, Client: c, OnPayment: rc.onPayment, OnEvent: onEvent})
	require.NoError(t, err)
	body := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())
	steps := []struct {
		method, target, body string
		want                 seen
	}{
		{http.MethodGet, whURL(t, whOrder), "", seen{"", 405, "rejected"}},
		{http.MethodPost, "/hook", body, seen{"", 401, "rejected"}},
		{http.MethodPost, whURL(t, "order-2"), body, seen{"payment", 401, "rejected"}},
		{http.MethodPost, whURL(t, whOrder), "{", seen{"", 400, "rejected"}},
		{http.MethodPost, whURL(t, whOrder), body, seen{"payment", 500, "failed"}},
		{http.MethodPost, whURL(t, whOrder), body, seen{"payment", 200, "delivered"}},
		{http.MethodPost, whURL(t, whOrder), body, seen{"payment", 200, "duplicate"}},
		{http.MethodPost, whURL(t, whOrder), waitPaymentJSON(paymentID, "paid", whOrder, time.Now()), seen{"payment", 503, "retry_later"}},
		{http.MethodPost, whURL(t, whOrder), waitPayoutJSON(waitPayoutID, "paid", whOrder), seen{"payout", 404, "rejected"}},
	}
	var want []seen
	for _, s := range steps {
		r := httptest.NewRequest(s.method, s.target, strings.NewReader(s.body))
		assert.Equal(t, s.want.code, serve(h, r).Code, "%+v", s.want)
		want = append(want, s.want)
	}
	mu.Lock()
	assert.Equal(t, want, got)
	mu.Unlock()

	// Each handler reports to its own OnEvent only.
	var own atomic.Int32
	h2, err := NewHandler(Config{Secret: whSecret, Client: c, OnEvent: func(context.Context, EventInfo) { own.Add(1) }})
	require.NoError(t, err)
	serve(h2, whRequest(t, whURL(t, whOrder), body))
	assert.Equal(t, int32(1), own.Load())
	mu.Lock()
	assert.Len(t, got, len(steps), "the other handler's OnEvent was not called")
	mu.Unlock()
}

// TestWebhookDeclaredLengthAloneHoldsNoMemory declares a 1 MiB body and
// sends a short one: the handler allocates for what arrives, not for what
// is declared, so slow senders cannot make it hold memory they never send.
func TestWebhookDeclaredLengthAloneHoldsNoMemory(t *testing.T) {
	h := newTestHandler(t, nil, &recorder{}, nil)
	req := func() *http.Request {
		r := whRequest(t, "/hooks/cryptopay?token="+base64.RawURLEncoding.EncodeToString(make([]byte, 32)), `{"orderId":"order-1"}`)
		r.ContentLength = DefaultMaxBodyBytes
		return r
	}
	require.Equal(t, http.StatusUnauthorized, serve(h, req()).Code)
	r, w := req(), httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(w, r)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}

// TestWebhookLogScrubsServerText: the status the API answers a webhook's
// re-read with is server text; when the handler logs it (here: the
// callback failed), an upper-cased key in it is redacted.
func TestWebhookLogScrubsServerText(t *testing.T) {
	c, mux := setup(t)
	s := &script{steps: []step{{value: "paid " + strings.ToUpper(testKey)}}, body: func(v string) string {
		return waitPaymentJSON(waitPaymentID, v, whOrder, time.Now())
	}}
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
	rc := &recorder{}
	rc.fail.Store(1)
	var logs syncBuffer
	h := newTestHandler(t, c, rc, &logs)
	w := serve(h, whRequest(t, whURL(t, whOrder), waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Now())))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Contains(t, logs.String(), "callback failed")
	assert.Contains(t, logs.String(), "[REDACTED]")
	assert.False(t, testfix.Leaks(logs.String(), testKey), logs.String())
}

// TestWebhookObserverPanic: a panicking OnEvent does not change the
// answer and does not escape ServeHTTP.
func TestWebhookObserverPanic(t *testing.T) {
	var logs bytes.Buffer
	h, err := NewHandler(Config{
		Secret:    bytes.Repeat([]byte{7}, MinSecretLen),
		OnPayment: func(context.Context, *cryptopay.Payment) error { return nil },
		Logger:    slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnEvent:   func(context.Context, EventInfo) { panic("observer bug") },
	})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	require.NotPanics(t, func() { h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hook", nil)) })
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Contains(t, logs.String(), "OnEvent")
}

// TestWebhookOtherSecretLogsTheSecret: a token signed with another secret
// (a common setup mistake: the URL was signed by a process with a different
// secret) is refused with 401, and the logged reason says the secret may
// differ, so whoever reads the log knows where to look.
func TestWebhookOtherSecretLogsTheSecret(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h := newTestHandler(t, nil, &recorder{}, &logs)
	u, err := URL("https://shop.example/hooks/cryptopay", []byte(strings.Repeat("o", MinSecretLen)), whOrder)
	require.NoError(t, err)
	w := serve(h, whRequest(t, u, `{"paymentId":"00000000-0000-4000-8000-000000000001","orderId":"`+whOrder+`","status":"paid"}`))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Contains(t, logs.String(), "signed with another secret")
	assert.NotContains(t, w.Body.String(), "secret", "the reason goes to the log, never to the sender")
}
