package cryptopay

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaseURLEndingInV1Refused: every call adds /v1/... itself, so a base
// URL ending in /v1 would send every request to /v1/v1/... and fail with a
// 404 naming the wrong path; it is refused with a message that says so.
func TestBaseURLEndingInV1Refused(t *testing.T) {
	for _, base := range []string{"https://api.example.com/v1", "https://api.example.com/v1/", "https://api.example.com/gw/V1", "http://127.0.0.1:8080/api/v1//"} {
		c, err := NewClient(base, testKey)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, base)
		assert.Equal(t, "baseURL", ve.Field)
		assert.Contains(t, ve.Reason, "/v1/...", "the message says why")
		assert.Nil(t, c)
	}
	for _, base := range []string{"https://api.example.com/v10", "https://api.example.com/v1x", "https://v1.example.com", "https://api.example.com/v1/gw"} {
		_, err := NewClient(base, testKey)
		assert.NoError(t, err, base)
	}
}

// TestErrorsNameTheFullPath: with a base path prefix, every kind of error
// names the path requested, prefix included.
func TestErrorsNameTheFullPath(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /gateway/v1/currencies", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) })
	mux.HandleFunc("GET /gateway/v1/balance", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{`)) })
	mux.HandleFunc("POST /gateway/v1/payout", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("GET /gateway/v1/payout/list", resetAfterReading)
	c, err := NewClient(srv.URL+"/gateway/", testKey, WithRetryPolicy(fastRetry))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = c.ListCurrencies(ctx)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "/gateway/v1/currencies", apiErr.Path)
	assert.Contains(t, err.Error(), "GET /gateway/v1/currencies: 404")

	_, err = c.GetBalances(ctx)
	var re *ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "/gateway/v1/balance", re.Path)

	_, err = c.CreatePayout(ctx, validPayoutParams())
	var ou *OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, "/gateway/v1/payout", ou.Path)

	_, err = c.ListPayouts(ctx, ListPayoutsParams{Limit: 3})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "cryptopay: GET /gateway/v1/payout/list: "), err.Error())
	assert.NotContains(t, err.Error(), "limit=3", "no query string")
}

// TestContextDoneBeforeTheCall: a ctx already cancelled or expired gives
// the usual "cryptopay: METHOD PATH:" error, still matching the context's
// error, and nothing is sent.
func TestContextDoneBeforeTheCall(t *testing.T) {
	c, mux := setup(t)
	var sent atomic.Bool
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { sent.Store(true) })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tt := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		_, err := c.CreatePayout(tt.ctx, validPayoutParams())
		require.ErrorIs(t, err, tt.want)
		assert.True(t, strings.HasPrefix(err.Error(), "cryptopay: POST /v1/payout: "), err.Error())
		assert.NotErrorIs(t, err, ErrOutcomeUnknown, "nothing was sent")
		_, err = c.GetBalances(tt.ctx)
		assert.True(t, strings.HasPrefix(err.Error(), "cryptopay: GET /v1/balance: "), err.Error())
		assert.True(t, errors.Is(err, tt.want))
	}
	assert.False(t, sent.Load())
}

// TestMaxConnsPerHost: many concurrent calls on one Client open no more
// connections than the bound (default DefaultMaxConnsPerHost, or
// WithMaxConnsPerHost's), counted by the server as it accepts them. Without
// a bound, 2,000 callers against a slow server open about 2,000.
func TestMaxConnsPerHost(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  []Option
		bound int64
	}{
		{"default", nil, DefaultMaxConnsPerHost},
		{"WithMaxConnsPerHost(16)", []Option{WithMaxConnsPerHost(16)}, 16},
	} {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			lb := newLoopback(t, func(n int64, w http.ResponseWriter, _ *http.Request) {
				if n <= tt.bound {
					<-release // hold the first connections busy, so the others must wait or dial
				}
				_, _ = w.Write([]byte(`[]`))
			})
			c := lb.client(t, tt.opts...)
			t.Cleanup(c.CloseIdleConnections)
			const callers = 2000
			var wg sync.WaitGroup
			var failed atomic.Int64
			for range callers {
				wg.Go(func() {
					if _, err := c.ListCurrencies(context.Background()); err != nil {
						failed.Add(1)
					}
				})
			}
			for lb.hits.Load() < tt.bound { // every connection the bound allows is busy
				time.Sleep(time.Millisecond)
			}
			close(release)
			wg.Wait()
			assert.Zero(t, failed.Load())
			assert.EqualValues(t, callers, lb.hits.Load())
			assert.LessOrEqual(t, lb.conns.Load(), tt.bound, "connections opened")
		})
	}
	_, err := NewClient(testBase, testKey, WithMaxConnsPerHost(0))
	assert.ErrorIs(t, err, ErrInvalidParams)
}
