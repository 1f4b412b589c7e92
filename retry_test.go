package cryptopay

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPayoutPostNeverResent(t *testing.T) {
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		opts    []Option
		also    error
	}{
		{"reset after processing", resetAfterReading, nil, nil},
		{"500 after processing", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"code":"internal","message":"db timeout"}`))
		}, nil, ErrServer},
		{"503 after processing", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(503)
		}, nil, ErrServer},
		{"stall past the attempt timeout", func(w http.ResponseWriter, r *http.Request) {
			_, _ = readAll(r) // lets the server notice the client leaving
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, []Option{WithTimeout(100 * time.Millisecond)}, nil},
		{"truncated 200 body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"payoutId":"po_1","status":"cre`))
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb := newLoopback(t, func(_ int64, w http.ResponseWriter, r *http.Request) { tt.handler(w, r) })
			var logs bytes.Buffer
			opts := append([]Option{WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, tt.opts...)
			c := lb.client(t, opts...)
			_, err := c.CreatePayout(context.Background(), validPayoutParams())
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			var ou *OutcomeUnknownError
			require.ErrorAs(t, err, &ou)
			assert.Equal(t, "wd-1", ou.OrderID)
			assert.Equal(t, "/v1/payout", ou.Path)
			assert.Contains(t, err.Error(), `orderId "wd-1"`)
			if tt.also != nil {
				assert.ErrorIs(t, err, tt.also)
			}
			assert.EqualValues(t, 1, lb.hits.Load(), "a payout POST that may have been processed must reach the server exactly once")
			assert.Contains(t, logs.String(), "outcome unknown")
			assert.NotContains(t, logs.String(), testKey)
		})
	}
}

func TestPostNotRetriedOn429(t *testing.T) {
	lb := newLoopback(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(429)
	})
	_, err := lb.client(t).CreatePayment(context.Background(), validPaymentParams())
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown, "a 429 is a definite no")
	assert.EqualValues(t, 1, lb.hits.Load())
}

func TestPostRetriedWhenConnectionRefused(t *testing.T) {
	// A port with nothing listening: every attempt fails at dial, nothing
	// is ever sent, so the POST may be retried and the error is not
	// "outcome unknown".
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var logs bytes.Buffer
	c, err := NewClient("http://"+addr, testKey, WithRetryPolicy(fastRetry),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	_, err = c.CreatePayout(context.Background(), validPayoutParams())
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, fastRetry.MaxRetries+1, strings.Count(logs.String(), "cryptopay request"), logs.String())
	assert.Contains(t, logs.String(), "connection failed before sending")
}

func TestPostRecoversAfterRefusedDial(t *testing.T) {
	// First attempt refused at dial (nothing listening), then the server
	// comes up on the same port: the payout is created exactly once. The
	// server starts when the first attempt has ended refused (not after a
	// sleep), so the order holds however slow the machine.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(payoutBody))
	})}
	defer srv.Close()
	var first AttemptResult
	var listenErr error
	obs := Observer{OnAttemptEnd: func(_ context.Context, _ CallInfo, res AttemptResult) {
		if res.Attempt != 1 {
			return
		}
		first = res
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			listenErr = err
			return
		}
		go func() { _ = srv.Serve(ln2) }()
	}}
	c, err := NewClient("http://"+addr, testKey, WithRetryPolicy(fastRetry), WithObserver(obs))
	require.NoError(t, err)
	var resp Response
	p, err := c.CreatePayout(context.Background(), validPayoutParams(), WithResponseInto(&resp))
	if listenErr != nil {
		t.Skipf("port taken by another process: %v", listenErr)
	}
	require.NoError(t, err)
	assert.True(t, isDialError(first.Err), "the first attempt was refused at dial: %v", first.Err)
	assert.True(t, first.Retry, "and retried")
	assert.Equal(t, 2, resp.Attempts)
	assert.Equal(t, "po_77", p.ID)
	assert.EqualValues(t, 1, hits.Load())
}

func TestGetRetries(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		retried   bool
		wantError error
	}{
		{"429", 429, true, ErrRateLimited},
		{"500", 500, true, ErrServer},
		{"502", 502, true, ErrServer},
		{"503", 503, true, ErrServer},
		{"504", 504, true, ErrServer},
		{"501 not retried", 501, false, ErrServer},
		{"400 not retried", 400, false, ErrInvalidRequest},
		{"401 not retried", 401, false, ErrUnauthorized},
		{"404 not retried", 404, false, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name+" then success", func(t *testing.T) {
			c, mux := setup(t)
			var n atomic.Int64
			mux.HandleFunc("GET /v1/currencies", func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= 2 {
					answer(tt.status, `{"code":"x","message":"y"}`)(w, r)
					return
				}
				answer(200, `[]`)(w, r)
			})
			_, err := c.ListCurrencies(context.Background())
			if tt.retried {
				require.NoError(t, err)
				assert.EqualValues(t, 3, n.Load())
			} else {
				assert.ErrorIs(t, err, tt.wantError)
				assert.EqualValues(t, 1, n.Load())
			}
		})
		if tt.retried {
			t.Run(tt.name+" exhausts the budget", func(t *testing.T) {
				c, mux := setup(t)
				var n atomic.Int64
				mux.HandleFunc("GET /v1/currencies", func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					answer(tt.status, `{"code":"busy","message":"try later"}`)(w, r)
				})
				_, err := c.ListCurrencies(context.Background())
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr, "the last response becomes the error")
				assert.ErrorIs(t, err, tt.wantError)
				assert.Equal(t, "busy", apiErr.Code)
				assert.EqualValues(t, fastRetry.MaxRetries+1, n.Load())
			})
		}
	}
}

func TestGetRetriesTransportErrors(t *testing.T) {
	c, mux := setup(t)
	var n atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			resetAfterReading(w, r) // connection reset by peer
			return
		}
		answer(200, `[]`)(w, r)
	})
	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, n.Load())
}

func TestPostTransportErrorWithoutTraceIsUnknown(t *testing.T) {
	// A custom transport that reports no connection events gives no proof
	// that nothing was sent: the POST is not resent. (A mock transport:
	// every real one reports its connection events.)
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodPost, testBase+"/v1/payout", httpmock.NewErrorResponder(errors.New("broken pipe")))
	_, err := c.CreatePayout(context.Background(), validPayoutParams())
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, mt.GetTotalCallCount())
}

func TestGetRetriesTruncatedBody(t *testing.T) {
	lb := newLoopback(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte(`[{"currency":"us`))
			return
		}
		_, _ = w.Write([]byte(`[{"currency":"usdt","network":"tron"}]`))
	})
	cur, err := lb.client(t).ListCurrencies(context.Background())
	require.NoError(t, err)
	assert.Len(t, cur, 1)
	assert.EqualValues(t, 2, lb.hits.Load())
}

func TestNoRetriesPolicy(t *testing.T) {
	c, mux := setup(t, WithRetryPolicy(RetryPolicy{}))
	var n atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(503)
	})
	_, err := c.GetBalances(context.Background())
	assert.ErrorIs(t, err, ErrServer)
	assert.EqualValues(t, 1, n.Load())
}

func TestRetryAfterHonouredAndCapped(t *testing.T) {
	t.Run("beyond the cap: no retry, the 429 is returned with RetryAfter", func(t *testing.T) {
		c, mux := setup(t)
		var n atomic.Int64
		mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Retry-After", "3600")
			answer(429, `{"code":"rate_limited","message":"slow down"}`)(w, r)
		})
		_, err := c.GetBalances(context.Background())
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, time.Hour, apiErr.RetryAfter)
		assert.EqualValues(t, 1, n.Load())
	})
	t.Run("backoff waits at least Retry-After up to the cap", func(t *testing.T) {
		p := RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 3 * time.Second}
		ra, ok := parseRetryAfter("2", time.Now())
		require.True(t, ok)
		for n := range 5 {
			w := backoff(p, n, ra)
			assert.GreaterOrEqual(t, w, 2*time.Second)
			assert.LessOrEqual(t, w, 3*time.Second)
		}
	})
}

func TestBackoffBoundsAndJitter(t *testing.T) {
	minW, maxW := 100*time.Millisecond, 2*time.Second
	seen := map[time.Duration]bool{}
	for n := range 64 {
		w := backoff(RetryPolicy{MinWait: minW, MaxWait: maxW}, n, 0)
		base := maxW
		if n < 5 {
			base = minW << n
		}
		assert.GreaterOrEqual(t, w, base/2, "attempt %d", n)
		assert.LessOrEqual(t, w, base, "attempt %d", n)
		seen[w] = true
	}
	assert.Greater(t, len(seen), 10, "waits are jittered")
}

func TestContextCancelStopsBackoff(t *testing.T) {
	decided := make(chan struct{}, 8)
	c, mux := setup(t, WithRetryPolicy(RetryPolicy{MaxRetries: 5, MinWait: time.Hour, MaxWait: time.Hour}),
		WithLogger(slog.New(signalHandler{decided})))
	mux.HandleFunc("GET /v1/balance", answer(503, ``))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetBalances(ctx)
		done <- err
	}()
	<-decided // the first attempt was answered and a one-hour wait begins
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "503", "says what the last attempt saw")
	case <-time.After(10 * time.Second):
		t.Fatal("the wait between retries did not end with the context")
	}
}

// signalHandler is a slog handler that signals every debug record.
type signalHandler struct{ ch chan struct{} }

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(context.Context, slog.Record) error {
	select {
	case h.ch <- struct{}{}:
	default:
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// TestRetryAfterBeyondRange: a Retry-After too large for int64 seconds, or
// a date years ahead, reads as "longer than MaxWait": no retry, and
// APIError.RetryAfter set, capped at 24 hours like the seconds form.
func TestRetryAfterBeyondRange(t *testing.T) {
	for _, v := range []string{"99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "86401"} {
		t.Run(v, func(t *testing.T) {
			c, mux := setup(t)
			var n atomic.Int64
			mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
				n.Add(1)
				w.Header().Set("Retry-After", v)
				w.WriteHeader(http.StatusTooManyRequests)
			})
			_, err := c.GetBalances(context.Background())
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 24*time.Hour, apiErr.RetryAfter)
			assert.EqualValues(t, 1, n.Load(), "not retried")
		})
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"-1", 0, false},
		{"999999999999", 24 * time.Hour, true},
		{"99999999999999999999", 24 * time.Hour, true},
		{"+5", 0, false},
		{"Fri, 31 Dec 9999 23:59:59 GMT", 24 * time.Hour, true},
		{"Sun, 22 Nov 2026 10:00:30 GMT", 30 * time.Second, true},
		{"Sun, 22 Nov 2026 09:00:00 GMT", 0, true},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// TestShouldRetry is the table of the one retry decision: every case for
// GET and POST, with its reason.
func TestShouldRetry(t *testing.T) {
	p := RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: time.Second}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	cert := &tls.CertificateVerificationError{Err: errors.New("unknown authority")}
	tests := []struct {
		name   string
		o      attemptOutcome
		retry  bool
		reason string
	}{
		{"GET 200", attemptOutcome{status: 200}, false, ""},
		{"GET 404", attemptOutcome{status: 404}, false, ""},
		{"GET 501", attemptOutcome{status: 501}, false, ""},
		{"GET 503", attemptOutcome{status: 503, statusText: "503 Service Unavailable"}, true, "status 503 Service Unavailable"},
		{"GET 429 Retry-After within MaxWait", attemptOutcome{status: 429, statusText: "429 Too Many Requests", retryAfter: time.Second, hasRA: true}, true, "status 429 Too Many Requests"},
		{"GET 429 Retry-After beyond MaxWait", attemptOutcome{status: 429, retryAfter: 2 * time.Second, hasRA: true}, false, "Retry-After beyond the maximum wait"},
		{"GET reset", attemptOutcome{err: reset}, true, "transport error"},
		{"GET dial", attemptOutcome{err: dial}, true, "connection failed before sending"},
		{"GET certificate", attemptOutcome{err: cert}, false, "permanent transport error"},
		{"GET ctx done", attemptOutcome{err: context.Canceled, ctxDone: true}, false, "context done"},
		{"GET 503 ctx done", attemptOutcome{status: 503, ctxDone: true}, false, "context done"},
		{"GET budget spent", attemptOutcome{status: 503, statusText: "503 Service Unavailable", attempt: 4}, false, "giving up after 4 attempt(s): status 503 Service Unavailable"},
		{"GET last retry", attemptOutcome{status: 502, statusText: "502 Bad Gateway", attempt: 3}, true, "status 502 Bad Gateway"},
		{"POST 200", attemptOutcome{post: true, status: 200}, false, ""},
		{"POST 503", attemptOutcome{post: true, status: 503}, false, "create request not resent after the server answered"},
		{"POST 429", attemptOutcome{post: true, status: 429}, false, "create request not resent after the server answered"},
		{"POST reset after sending", attemptOutcome{post: true, err: reset}, false, "request may have reached the server; not resent"},
		{"POST timeout after sending", attemptOutcome{post: true, err: &attemptTimeoutError{d: time.Second, err: context.DeadlineExceeded}}, false, "request may have reached the server; not resent"},
		{"POST reset, proof nothing was sent", attemptOutcome{post: true, err: reset, notSent: true}, true, "request not sent"},
		{"POST dial", attemptOutcome{post: true, err: dial}, true, "connection failed before sending"},
		{"POST dial, budget spent", attemptOutcome{post: true, err: dial, attempt: 4}, false, "giving up after 4 attempt(s): connection failed before sending"},
		{"POST certificate", attemptOutcome{post: true, err: cert}, false, "permanent transport error"},
		{"POST ctx done", attemptOutcome{post: true, err: context.Canceled, ctxDone: true}, false, "request may have reached the server; not resent"},
		{"POST ctx done, not sent", attemptOutcome{post: true, err: context.Canceled, ctxDone: true, notSent: true}, false, "context done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.attempt == 0 {
				tt.o.attempt = 1
			}
			retry, reason := shouldRetry(&tt.o, p)
			assert.Equal(t, tt.retry, retry)
			assert.Equal(t, tt.reason, reason)
		})
	}
}

// TestShouldRetryNeverResendsAPostThatMayHaveArrived: whatever the policy,
// status, error or attempt number, a POST is retried only on a dial error
// or with proof that nothing was sent.
func TestShouldRetryNeverResendsAPostThatMayHaveArrived(t *testing.T) {
	errs := []error{nil, errors.New("broken pipe"), io.ErrUnexpectedEOF, context.DeadlineExceeded,
		&net.OpError{Op: "read", Err: errors.New("reset")}, &net.OpError{Op: "write", Err: errors.New("reset")}}
	for _, p := range []RetryPolicy{{}, DefaultRetryPolicy(), {MaxRetries: 1000, MaxWait: time.Hour}} {
		for _, err := range errs {
			for status := 100; status < 600; status++ {
				o := attemptOutcome{post: true, attempt: 1, err: err, status: status, retryAfter: 0, hasRA: true}
				if err != nil {
					o.status = 0
				}
				retry, reason := shouldRetry(&o, p)
				require.False(t, retry, "status %d err %v: %s", status, err, reason)
				if err != nil {
					break
				}
			}
		}
	}
}
