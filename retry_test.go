package cryptopay

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resetAfterReading reads the whole request, then drops the connection with
// an RST: the server processed it, the client sees a reset.
func resetAfterReading(w http.ResponseWriter, r *http.Request) {
	_, _ = readAll(r)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

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
	// comes up on the same port: the payout is created exactly once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(payoutBody))
	})}
	c, err := NewClient("http://"+addr, testKey, WithRetryPolicy(RetryPolicy{MaxRetries: 50, MinWait: 5 * time.Millisecond, MaxWait: 10 * time.Millisecond}))
	require.NoError(t, err)
	go func() {
		time.Sleep(20 * time.Millisecond)
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		_ = srv.Serve(ln2)
	}()
	defer srv.Close()
	p, err := c.CreatePayout(context.Background(), validPayoutParams())
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		t.Skip("port taken")
	}
	require.NoError(t, err)
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
			c, mt := setupMock(t)
			// (A.Times(2).Then(B) would not run A twice: count by hand.)
			var n atomic.Int64
			mt.RegisterResponder(http.MethodGet, testBase+"/v1/currencies", func(*http.Request) (*http.Response, error) {
				if n.Add(1) <= 2 {
					return httpmock.NewStringResponse(tt.status, `{"code":"x","message":"y"}`), nil
				}
				return httpmock.NewStringResponse(200, `[]`), nil
			})
			_, err := c.ListCurrencies(context.Background())
			if tt.retried {
				require.NoError(t, err)
				assert.Equal(t, 3, mt.GetTotalCallCount())
			} else {
				assert.ErrorIs(t, err, tt.wantError)
				assert.Equal(t, 1, mt.GetTotalCallCount())
			}
		})
		if tt.retried {
			t.Run(tt.name+" exhausts the budget", func(t *testing.T) {
				c, mt := setupMock(t)
				mt.RegisterResponder(http.MethodGet, testBase+"/v1/currencies", httpmock.NewStringResponder(tt.status, `{"code":"busy","message":"try later"}`))
				_, err := c.ListCurrencies(context.Background())
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr, "the last response becomes the error")
				assert.ErrorIs(t, err, tt.wantError)
				assert.Equal(t, "busy", apiErr.Code)
				assert.Equal(t, fastRetry.MaxRetries+1, mt.GetTotalCallCount())
			})
		}
	}
}

func TestGetRetriesTransportErrors(t *testing.T) {
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance",
		httpmock.NewErrorResponder(errors.New("connection reset by peer")).Times(1).Then(httpmock.NewStringResponder(200, `[]`)))
	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, mt.GetTotalCallCount())
}

func TestPostTransportErrorWithoutTraceIsUnknown(t *testing.T) {
	// A custom transport that reports no connection events gives no proof
	// that nothing was sent: the POST is not resent.
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
	c, mt := setupMock(t, WithRetryPolicy(RetryPolicy{}))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", httpmock.NewStringResponder(503, ``))
	_, err := c.GetBalances(context.Background())
	assert.ErrorIs(t, err, ErrServer)
	assert.Equal(t, 1, mt.GetTotalCallCount())
}

func TestRetryAfterHonouredAndCapped(t *testing.T) {
	t.Run("beyond the cap: no retry, the 429 is returned with RetryAfter", func(t *testing.T) {
		c, mt := setupMock(t)
		mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", func(*http.Request) (*http.Response, error) {
			r := httpmock.NewStringResponse(429, `{"code":"rate_limited","message":"slow down"}`)
			r.Header.Set("Retry-After", "3600")
			return r, nil
		})
		_, err := c.GetBalances(context.Background())
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, time.Hour, apiErr.RetryAfter)
		assert.Equal(t, 1, mt.GetTotalCallCount())
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
	c, mt := setupMock(t, WithRetryPolicy(RetryPolicy{MaxRetries: 5, MinWait: time.Hour, MaxWait: time.Hour}),
		WithLogger(slog.New(signalHandler{decided})))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", httpmock.NewStringResponder(503, ``))
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

func TestCanceledContextSendsNothing(t *testing.T) {
	c, mt := setupMock(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.CreatePayout(ctx, validPayoutParams())
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 0, mt.GetTotalCallCount())
}

func TestConnectionsReusedAfterErrors(t *testing.T) {
	lb := newLoopback(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		switch n % 3 {
		case 0:
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"code":"not_found","message":"no"}`))
		case 1:
			w.WriteHeader(503)
			_, _ = w.Write([]byte(strings.Repeat("x", 10<<10)))
		default:
			_, _ = w.Write([]byte(`[]`))
		}
	})
	c := lb.client(t)
	for range 30 {
		_, _ = c.ListCurrencies(context.Background())
	}
	assert.EqualValues(t, 1, lb.conns.Load(), "errors, retries and large error bodies must not cost a new connection")
}

func TestConcurrentCallersShareAPool(t *testing.T) {
	lb := newLoopback(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		_, _ = w.Write([]byte(`[{"currency":"usdt","network":"tron"}]`))
	})
	c := lb.client(t)
	const callers, calls = 64, 20
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, err := c.ListCurrencies(context.Background()); err != nil {
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failures.Load())
	assert.EqualValues(t, callers*calls, lb.hits.Load())
	// Plain net/http with the same pool opens 64 to 90 here (a few extra in
	// the first burst); one per request would be 1280.
	assert.LessOrEqual(t, lb.conns.Load(), int64(callers*3/2), "about one connection per caller, not one per request")
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
