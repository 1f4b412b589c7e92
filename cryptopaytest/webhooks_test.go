package cryptopaytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// hookReceiver records the webhooks it receives; fail decides the answer.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	ctypes []string
	calls  atomic.Int32
	fail   func(n int32) int // status for the n-th call (from 1)
}

func newHookReceiver(t *testing.T, fail func(n int32) int) *hookReceiver {
	h := &hookReceiver{fail: fail}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		status := http.StatusOK
		if h.fail != nil {
			status = h.fail(n)
		}
		if status < 300 {
			h.mu.Lock()
			h.bodies = append(h.bodies, b)
			h.ctypes = append(h.ctypes, r.Header.Get("Content-Type"))
			h.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) received() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.bodies...)
}

func statusOf(t *testing.T, body []byte) string {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	return m["status"].(string)
}

func TestWebhooksPaymentInOrder(t *testing.T) {
	rcv := newHookReceiver(t, nil)
	s := newServer(t)
	c := s.Client()
	params := paymentParams()
	params.WebhookURL = rcv.URL + "/hook?token=abc"
	p, err := c.CreatePayment(ctx(t), params)
	require.NoError(t, err)

	require.NoError(t, s.SetPaymentStatus(p.ID, cryptopay.PaymentConfirming))
	require.NoError(t, s.Pay(p.ID, dec("5")))
	require.NoError(t, s.Pay(p.ID, dec("5.1")))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))

	got := rcv.received()
	require.Len(t, got, 3)
	assert.Equal(t, []string{"confirming", "paid_partial", "paid"}, []string{statusOf(t, got[0]), statusOf(t, got[1]), statusOf(t, got[2])})
	assert.Equal(t, "application/json", rcv.ctypes[0])

	// The body is the status-response shape, which the SDK reads.
	var hp cryptopay.Payment
	require.NoError(t, json.Unmarshal(got[2], &hp))
	assert.Equal(t, p.ID, hp.ID)
	assert.True(t, hp.PaidAmount.Decimal.Equal(dec("10.1")))
	assert.True(t, hp.MerchantAmount.Decimal.Equal(dec("10")))

	recs := s.Webhooks()
	require.Len(t, recs, 3)
	for _, d := range recs {
		assert.Equal(t, "payment", d.Kind)
		assert.Equal(t, p.ID, d.ObjectID)
		assert.Equal(t, params.WebhookURL, d.URL)
		assert.Equal(t, 1, d.Attempt)
		assert.Equal(t, 200, d.StatusCode)
		assert.True(t, d.Delivered())
		assert.False(t, d.Time.IsZero())
	}
	assert.Equal(t, "paid", recs[2].Status)
}

func TestWebhooksPayoutAndExpiry(t *testing.T) {
	rcv := newHookReceiver(t, nil)
	s := newServer(t)
	pid := createPayment(t, s, `{"amount":1,"platformFeeByUser":false,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+rcv.URL+`"}`)
	poid := createPayout(t, s, `{"walletAddress":"0xabc","amount":1,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+rcv.URL+`"}`)
	s.Advance(cryptopaytest.DefaultPaymentTTL)
	require.NoError(t, s.SetPayoutStatus(poid, cryptopay.PayoutProcessing))
	require.NoError(t, s.SetPayoutStatus(poid, cryptopay.PayoutPaid))
	got, err := s.WaitWebhooks(ctx(t), 3)
	require.NoError(t, err)
	byKind := map[string][]string{}
	for _, d := range got {
		byKind[d.Kind] = append(byKind[d.Kind], d.Status)
	}
	assert.Equal(t, []string{"expired"}, byKind["payment"])
	assert.Equal(t, []string{"processing", "paid"}, byKind["payout"])
	for _, d := range got {
		if d.Kind == "payout" {
			assert.Equal(t, poid, d.ObjectID)
			var po cryptopay.Payout
			require.NoError(t, json.Unmarshal(d.Body, &po))
			assert.Equal(t, poid, po.ID)
		} else {
			assert.Equal(t, pid, d.ObjectID)
		}
	}
}

func TestWebhooksRetried(t *testing.T) {
	rcv := newHookReceiver(t, func(n int32) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	s := newServer(t, cryptopaytest.WithWebhookRetry(5, time.Millisecond))
	id := createPayout(t, s, `{"walletAddress":"0xabc","amount":1,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+rcv.URL+`"}`)
	require.NoError(t, s.SetPayoutStatus(id, cryptopay.PayoutCancelled))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	recs := s.Webhooks()
	require.Len(t, recs, 3)
	for i, d := range recs {
		assert.Equal(t, i+1, d.Attempt)
		assert.Equal(t, "cancelled", d.Status)
	}
	assert.Equal(t, 503, recs[0].StatusCode)
	assert.False(t, recs[0].Delivered())
	assert.Equal(t, 204, recs[2].StatusCode)
	assert.True(t, recs[2].Delivered())
	assert.Len(t, rcv.received(), 1)
}

func TestWebhooksGiveUpAndTransportErrors(t *testing.T) {
	// A closed port: every attempt is a transport error.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	s := newServer(t, cryptopaytest.WithWebhookRetry(3, time.Millisecond))
	id := createPayout(t, s, `{"walletAddress":"0xabc","amount":1,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+url+`/x"}`)
	require.NoError(t, s.SetPayoutStatus(id, cryptopay.PayoutFailed))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	recs := s.Webhooks()
	require.Len(t, recs, 3, "3 attempts in all")
	for _, d := range recs {
		assert.Zero(t, d.StatusCode)
		assert.NotEmpty(t, d.Err)
		assert.False(t, d.Delivered())
	}
}

func TestWebhooksNonLoopbackNotSent(t *testing.T) {
	s := newServer(t)
	id := createPayment(t, s, `{"amount":1,"platformFeeByUser":false,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"https://shop.example/hook"}`)
	require.NoError(t, s.SetPaymentStatus(id, cryptopay.PaymentFailed))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	recs := s.Webhooks()
	require.Len(t, recs, 1, "not retried")
	assert.Contains(t, recs[0].Err, "not loopback")
}

func TestWebhooksCustomClientAnyHost(t *testing.T) {
	var hits atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		hits.Add(1)
		assert.Equal(t, "shop.example", r.URL.Host)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
	})}
	s := newServer(t, cryptopaytest.WithWebhookClient(hc), cryptopaytest.WithWebhookAnyHost())
	id := createPayment(t, s, `{"amount":1,"platformFeeByUser":false,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"https://shop.example/hook"}`)
	require.NoError(t, s.SetPaymentStatus(id, cryptopay.PaymentFailed))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	assert.Equal(t, int32(1), hits.Load())
	assert.True(t, s.Webhooks()[0].Delivered())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWebhooksStopOnClose(t *testing.T) {
	// A receiver that always fails and a long backoff: Close must not wait
	// for the retries.
	rcv := newHookReceiver(t, func(int32) int { return 500 })
	s := cryptopaytest.NewServer(cryptopaytest.WithWebhookRetry(10, time.Hour))
	id := createPayout(t, s, `{"walletAddress":"0xabc","amount":1,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+rcv.URL+`"}`)
	require.NoError(t, s.SetPayoutStatus(id, cryptopay.PayoutFailed))
	_, err := s.WaitWebhooks(ctx(t), 1)
	require.NoError(t, err)
	closeReturns(t, s) // with a retry an hour away
	assert.Len(t, s.Webhooks(), 1)
	_, err = s.WaitWebhooks(ctx(t), 2)
	assert.Error(t, err, "no more deliveries after Close")
	assert.NoError(t, s.WaitWebhooksIdle(ctx(t)), "nothing pending after Close")
}

func TestWaitWebhooksContext(t *testing.T) {
	s := newServer(t)
	c, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	got, err := s.WaitWebhooks(c, 1)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, got)
}

// burstPayments creates n payments that post to url and moves each to
// confirming, which queues one webhook event per payment at once.
func burstPayments(t *testing.T, s *cryptopaytest.Server, n int, url string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createPayment(t, s, `{"amount":1,"platformFeeByUser":false,"currency":"eth","network":"eth",
			"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+url+`"}`)
	}
	for _, id := range ids {
		require.NoError(t, s.SetPaymentStatus(id, cryptopay.PaymentConfirming))
	}
	return ids
}

// TestWebhooksConcurrencyBounded sends a burst of events, four times the
// bound or more (under -race fewer: 256, 40 and 10, where every event
// costs more than the figures need), to one loopback receiver and counts
// the attempts and connections open at once. The receiver holds the first
// attempts until the bound is reached (or a second has passed), so the
// burst presses on the bound: a sender that ignored it would have every
// event in flight.
func TestWebhooksConcurrencyBounded(t *testing.T) {
	t.Parallel() // its own fake and receiver; it counts, measures no heap
	tests := []struct {
		name               string
		opts               []cryptopaytest.ServerOption
		limit              int
		events, raceEvents int
	}{
		{"default bound", nil, cryptopaytest.DefaultWebhookConcurrency, 2000, 4 * cryptopaytest.DefaultWebhookConcurrency},
		{"bound of 4", []cryptopaytest.ServerOption{cryptopaytest.WithWebhookConcurrency(4)}, 4, 300, 40},
		{"bound of 1", []cryptopaytest.ServerOption{cryptopaytest.WithWebhookConcurrency(1)}, 1, 50, 10},
	}
	for _, tt := range tests {
		if cryptopaytest.RaceDetector {
			tt.events = tt.raceEvents
		}
		t.Run(tt.name, func(t *testing.T) {
			var inflight, peak, conns, open, peakOpen atomic.Int64
			seen := make(map[string]int)
			var mu sync.Mutex
			full := make(chan struct{}) // closed once the bound was reached
			var fullOnce sync.Once
			rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := inflight.Add(1)
				defer inflight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n >= int64(tt.limit) {
					fullOnce.Do(func() { close(full) })
				}
				select { // well within the sender's 5 s timeout
				case <-full:
				case <-time.After(time.Second):
					fullOnce.Do(func() { close(full) })
				}
				var m map[string]any
				if json.NewDecoder(r.Body).Decode(&m) == nil {
					mu.Lock()
					seen[m["paymentId"].(string)]++
					mu.Unlock()
				}
				time.Sleep(time.Millisecond) // keep attempts overlapping
			}))
			rcv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				switch st {
				case http.StateNew:
					n := open.Add(1)
					conns.Add(1)
					for p := peakOpen.Load(); n > p && !peakOpen.CompareAndSwap(p, n); p = peakOpen.Load() {
					}
				case http.StateClosed, http.StateHijacked:
					open.Add(-1)
				}
			}
			rcv.Start()
			t.Cleanup(rcv.Close)
			s := newServer(t, tt.opts...)
			ids := burstPayments(t, s, tt.events, rcv.URL)
			c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, s.WaitWebhooksIdle(c))

			assert.LessOrEqual(t, peak.Load(), int64(tt.limit), "attempts in flight at once")
			// The sender's transport holds at most limit connections; the receiver
			// may see a replaced one close after its successor opened.
			assert.LessOrEqual(t, peakOpen.Load(), int64(2*tt.limit), "connections open at once at the receiver")
			assert.Equal(t, tt.events, s.WebhooksRecorded())
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, seen, tt.events, "every event delivered")
			for _, id := range ids {
				assert.Equal(t, 1, seen[id], "payment %s delivered once", id)
			}
			t.Logf("%d events: peak %d in flight, %d connections open at most, %d opened", tt.events, peak.Load(), peakOpen.Load(), conns.Load())
		})
	}
}

func TestWebhooksOrderPerObjectUnderBound(t *testing.T) {
	// One worker, two objects with interleaved events, one object's first
	// attempt failing: each object's events still arrive in order, and a
	// retry's wait does not block the other object.
	var mu sync.Mutex
	got := map[string][]string{}
	var calls atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&m))
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		got[m["paymentId"].(string)] = append(got[m["paymentId"].(string)], m["status"].(string))
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	s := newServer(t, cryptopaytest.WithWebhookConcurrency(1), cryptopaytest.WithWebhookRetry(3, 20*time.Millisecond))
	a := burstPayments(t, s, 1, rcv.URL)[0]
	b := burstPayments(t, s, 1, rcv.URL)[0]
	require.NoError(t, s.SetPaymentStatus(a, cryptopay.PaymentLocked))
	require.NoError(t, s.SetPaymentStatus(b, cryptopay.PaymentLocked))
	require.NoError(t, s.Pay(a, dec("1")))
	require.NoError(t, s.Pay(b, dec("1")))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	mu.Lock()
	defer mu.Unlock()
	want := []string{"confirming", "locked", "paid"}
	assert.Equal(t, want, got[a])
	assert.Equal(t, want, got[b])
	assert.Equal(t, 7, s.WebhooksRecorded(), "6 events, one retried once")
}

func TestWebhookLogIsARing(t *testing.T) {
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
	})}
	tests := []struct {
		name   string
		size   int
		events int
		want   int
	}{
		{"not full", 10, 4, 4},
		{"exactly full", 5, 5, 5},
		{"wrapped", 5, 12, 5},
		{"size 1", 1, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, cryptopaytest.WithWebhookClient(hc), cryptopaytest.WithWebhookLog(tt.size),
				cryptopaytest.WithWebhookConcurrency(1))
			id := createPayment(t, s, `{"amount":100,"platformFeeByUser":false,"currency":"eth","network":"eth",
				"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"http://127.0.0.1:9/h"}`)
			for range tt.events {
				require.NoError(t, s.Pay(id, dec("1")))
			}
			_, err := s.WaitWebhooks(ctx(t), tt.events)
			require.NoError(t, err, "WaitWebhooks counts every attempt, not the ring's length")
			require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
			assert.Equal(t, tt.events, s.WebhooksRecorded())
			recs := s.Webhooks()
			require.Len(t, recs, tt.want)
			// The newest attempts, oldest first: paid amounts run up to events.
			for i, d := range recs {
				var m map[string]any
				dc := json.NewDecoder(bytes.NewReader(d.Body))
				dc.UseNumber()
				require.NoError(t, dc.Decode(&m))
				assert.Equal(t, json.Number(strconv.Itoa(tt.events-tt.want+i+1)), m["paidAmount"])
			}
		})
	}
}

func TestWebhookOptionsRefuseBadValues(t *testing.T) {
	for _, o := range []cryptopaytest.ServerOption{
		cryptopaytest.WithWebhookConcurrency(0), cryptopaytest.WithWebhookConcurrency(-3),
		cryptopaytest.WithWebhookLog(0), cryptopaytest.WithWebhookLog(-1),
	} {
		s, err := cryptopaytest.StartServer(o)
		assert.Nil(t, s)
		assert.ErrorIs(t, err, cryptopaytest.ErrInvalid)
	}
}

func TestWebhooksHonourRetryAfter(t *testing.T) {
	// A receiver that sheds load with 503 and Retry-After: 1 gets its next
	// attempt after a wait of a second, although the backoff is 1 ms. The
	// wait is read from the retry's timer (started at once here), not from
	// the clock.
	var arrivals atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrivals.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(rcv.Close)
	s := newServer(t, cryptopaytest.WithWebhookRetry(3, time.Millisecond))
	waits := cryptopaytest.RecordRetryWaits(s)
	burstPayments(t, s, 1, rcv.URL)
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitWebhooksIdle(c))
	recs := s.Webhooks()
	require.Len(t, recs, 2)
	assert.Equal(t, time.Second, recs[0].RetryAfter)
	assert.True(t, recs[1].Delivered())
	assert.Equal(t, int32(2), arrivals.Load())
	assert.Equal(t, []time.Duration{time.Second}, waits(), "the one retry waited for Retry-After, not the 1 ms backoff")
}
