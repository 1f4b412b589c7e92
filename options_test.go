package cryptopay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithHeader: the header goes on this call's request only; the
// Client's own headers and the next call are unchanged.
func TestWithHeader(t *testing.T) {
	c, mux := setup(t)
	var seen []http.Header
	var mu sync.Mutex
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		_, _ = w.Write([]byte(payoutBody))
	})
	ctx := context.Background()
	_, err := c.CreatePayout(ctx, validPayoutParams(), WithHeader("x-trace-id", "t-1"), WithHeader("User-Agent", "batch/7"))
	require.NoError(t, err)
	_, err = c.CreatePayout(ctx, validPayoutParams())
	require.NoError(t, err)

	require.Len(t, seen, 2)
	assert.Equal(t, "t-1", seen[0].Get("X-Trace-Id"))
	assert.True(t, strings.HasPrefix(seen[0].Get("User-Agent"), "batch/7 cryptopay-go/"), "the caller's User-Agent goes in front of the SDK's token")
	assert.Equal(t, testKey, seen[0].Get("X-Api-Key"), "the key is still the Client's")
	assert.Equal(t, "application/json", seen[0].Get("Content-Type"))
	assert.Empty(t, seen[1].Get("X-Trace-Id"), "a per-call option never changes the Client")
	assert.True(t, strings.HasPrefix(seen[1].Get("User-Agent"), "cryptopay-go/"))
	assert.NotContains(t, c.cfg.headers.post, "X-Trace-Id")
}

// TestWithHeaderRefused: the SDK's own headers, the framing ones and
// the idempotency keys that make net/http replay a POST are refused with a
// ValidationError before anything is sent.
func TestWithHeaderRefused(t *testing.T) {
	tests := []struct{ key, value string }{
		{"x-api-key", "other"}, {"X-API-KEY", "other"}, {"Host", "evil.example"}, {"Content-Length", "1"},
		{"Idempotency-Key", "k1"}, {"idempotency-key", "k1"}, {"X-Idempotency-Key", "k1"},
		{"Transfer-Encoding", "chunked"}, {"Connection", "close"},
		{"X-Trace", "a\r\nX-Api-Key: other"}, {"X-Trace", "a\nb"}, {"Bad Name", "v"}, {"", "v"}, {"X:Y", "v"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			c, mux := setup(t)
			var n atomic.Int64
			mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { n.Add(1) })
			_, err := c.CreatePayout(context.Background(), validPayoutParams(), WithHeader(tt.key, tt.value))
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Equal(t, "WithHeader", ve.Field)
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
			assert.Zero(t, n.Load(), "nothing was sent")
		})
	}
}

// TestWithTimeout bounds each attempt of one call: a GET whose
// first attempt hangs is retried and succeeds; a POST whose attempt hangs
// after the server read it is not resent.
func TestWithTimeout(t *testing.T) {
	t.Parallel()
	// Long enough for an attempt that is answered (the GET's second) to
	// fit in it on a loaded machine under -race; each hanging attempt
	// costs this much.
	const attemptBound = 2 * time.Second
	c, mux := setup(t) // the Client's own timeout: 30 s
	var gets, posts atomic.Int64
	hang := func(r *http.Request) { <-r.Context().Done() } // until the client gives up
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
		if gets.Add(1) == 1 {
			hang(r)
			return
		}
		_, _ = w.Write([]byte(`[]`))
	})
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		_, _ = readAll(r)
		hang(r)
	})
	ctx := context.Background()
	// The two calls wait out their hanging attempts side by side.
	postErr := make(chan error, 1)
	go func() {
		_, err := c.CreatePayout(ctx, validPayoutParams(), WithTimeout(attemptBound))
		postErr <- err
	}()
	var resp Response
	_, err := c.GetBalances(ctx, WithTimeout(attemptBound), WithResponseInto(&resp))
	require.NoError(t, err)
	assert.Equal(t, 2, resp.Attempts)

	err = <-postErr
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	assert.EqualValues(t, 1, posts.Load())
	assert.Equal(t, DefaultTimeout, c.timeout, "the Client's timeout is unchanged")

	_, err = c.GetBalances(ctx, WithTimeout(-time.Second))
	assert.ErrorIs(t, err, ErrInvalidParams)
}

// TestWithRetryPolicy changes how this call's reads are retried,
// and cannot make a POST be resent.
func TestWithRetryPolicy(t *testing.T) {
	c, mux := setup(t) // the Client retries 3 times
	var gets, posts atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
		gets.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) {
		if posts.Add(1) == 1 {
			resetAfterReading(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx := context.Background()
	many := RetryPolicy{MaxRetries: 6, MinWait: time.Millisecond, MaxWait: time.Millisecond}
	for _, tt := range []struct {
		p    RetryPolicy
		want int64
	}{{RetryPolicy{}, 1}, {many, 7}} {
		gets.Store(0)
		_, err := c.GetBalances(ctx, WithRetryPolicy(tt.p))
		require.ErrorIs(t, err, ErrServer)
		assert.Equal(t, tt.want, gets.Load())
	}
	for range 2 { // a reset after reading, then a 503: each sent once
		_, err := c.CreatePayout(ctx, validPayoutParams(), WithRetryPolicy(many))
		require.ErrorIs(t, err, ErrOutcomeUnknown)
	}
	assert.EqualValues(t, 2, posts.Load(), "no policy makes a POST be resent")

	gets.Store(0)
	_, err := c.GetBalances(ctx)
	require.Error(t, err)
	assert.EqualValues(t, fastRetry.MaxRetries+1, gets.Load(), "the Client's policy is unchanged")

	_, err = c.GetBalances(ctx, WithRetryPolicy(RetryPolicy{MaxRetries: -1}))
	assert.ErrorIs(t, err, ErrInvalidParams)
}

// TestWithResponseInto fills the Response on success and on every kind of
// error.
func TestWithResponseInto(t *testing.T) {
	c, mux := setup(t)
	var n atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", n.Add(1)))
		_, _ = w.Write([]byte(`[]`))
	})
	mux.HandleFunc("GET /v1/currencies", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Request-Id", "req-busy")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx := context.Background()

	var ok Response
	_, err := c.GetBalances(ctx, WithResponseInto(&ok))
	require.NoError(t, err)
	assert.Equal(t, 200, ok.StatusCode)
	assert.Equal(t, "req-1", ok.RequestID)
	assert.Equal(t, "req-1", ok.Header.Get("X-Request-Id"))
	assert.Equal(t, 1, ok.Attempts)
	assert.Positive(t, ok.Duration)
	assert.Equal(t, "HTTP/1.1", ok.Proto)

	var failed Response
	_, err = c.ListCurrencies(ctx, WithResponseInto(&failed))
	require.ErrorIs(t, err, ErrServer)
	assert.Equal(t, 503, failed.StatusCode)
	assert.Equal(t, "req-busy", failed.RequestID)
	assert.Equal(t, fastRetry.MaxRetries+1, failed.Attempts)

	refused := refusedClient(t)
	none := Response{StatusCode: 999, Header: http.Header{"Stale": {"x"}}}
	_, err = refused.GetBalances(ctx, WithResponseInto(&none))
	require.Error(t, err)
	assert.Zero(t, none.StatusCode, "no response came")
	assert.Nil(t, none.Header)
	assert.Equal(t, fastRetry.MaxRetries+1, none.Attempts)

	_, err = c.GetBalances(ctx, WithResponseInto(nil))
	assert.ErrorIs(t, err, ErrInvalidParams)
}

// refusedClient is a Client for a 127.0.0.1 port nothing listens on.
func refusedClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := NewClient("http://"+addr, testKey, append([]Option{WithRetryPolicy(fastRetry)}, opts...)...)
	require.NoError(t, err)
	return c
}

// countingClient is a Client whose every request is counted and answered
// with an empty list.
func countingClient(t *testing.T) (*Client, *atomic.Int64) {
	c, mux := setup(t)
	n := new(atomic.Int64)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte(`[]`))
	})
	return c, n
}

// TestPerCallOptionErrorsSendNothing: an invalid option fails the call
// before it is sent, and a nil option is ignored.
func TestPerCallOptionErrorsSendNothing(t *testing.T) {
	c, n := countingClient(t)
	_, err := c.GetBalances(context.Background(), nil)
	require.NoError(t, err)
	_, err = c.GetBalances(context.Background(), WithTimeout(-1))
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	assert.EqualValues(t, 1, n.Load())
}

// TestOptionLevels: an Option that shapes the Client is refused per call,
// WithResponseInto is refused by NewClient, and WithTimeout(0) means no
// per-attempt bound on both levels.
func TestOptionLevels(t *testing.T) {
	c, n := countingClient(t)
	clientOnly := map[string]Option{
		"WithHTTPClient":             WithHTTPClient(http.DefaultClient),
		"WithInsecureHTTP":           WithInsecureHTTP(),
		"WithLogger":                 WithLogger(nil),
		"WithMaxConcurrentWaitReads": WithMaxConcurrentWaitReads(1),
		"WithMaxConnsPerHost":        WithMaxConnsPerHost(1),
		"WithMaxResponseBytes":       WithMaxResponseBytes(1),
		"WithObserver":               WithObserver(Observer{}),
		"WithWakeupBus":              WithWakeupBus(nil),
	}
	for name, o := range clientOnly {
		_, err := c.GetBalances(context.Background(), o)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, name)
		assert.Equal(t, name, ve.Field)
		assert.ErrorIs(t, err, ErrInvalidParams)
	}
	assert.Zero(t, n.Load(), "a refused option sends nothing")

	_, err := NewClient(testBase, testKey, WithResponseInto(new(Response)))
	assert.ErrorIs(t, err, ErrInvalidParams)

	nc, err := NewClient(testBase, testKey, WithTimeout(0))
	require.NoError(t, err)
	assert.Zero(t, nc.timeout, "0 is no bound on the Client")
	_, err = c.GetBalances(context.Background(), WithTimeout(0))
	require.NoError(t, err, "0 is no bound on a call")
}
