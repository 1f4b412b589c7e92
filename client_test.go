package cryptopay

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/internal/benchfloor"
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
		resp := Response{StatusCode: 200, Attempts: 9}
		_, err := c.CreatePayout(tt.ctx, validPayoutParams(), WithResponseInto(&resp))
		require.ErrorIs(t, err, tt.want)
		assert.Zero(t, resp, "no attempt was made")
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
			conns := countConns(t, c)
			const callers = 1000 // several times the default bound
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
			// Counted on the client's side, from a dial's return to the
			// connection's Close: the connections open at once. The pool
			// may close a connection and dial a replacement during the run
			// (the server then sees bound+1 in all); net/http hands the
			// closing connection's slot to a waiting dial just before it
			// closes the socket (persistConn.closeLocked: decConnsPerHost,
			// then conn.Close), so each such close can overlap one dial.
			_, peak, closed := conns.counts()
			assert.LessOrEqual(t, peak, tt.bound+closed, "connections open at once (beyond the bound only by a replacement overlapping its predecessor's close)")
			assert.GreaterOrEqual(t, peak, tt.bound, "every connection the bound allows was used")
		})
	}
	_, err := NewClient(testBase, testKey, WithMaxConnsPerHost(0))
	assert.ErrorIs(t, err, ErrInvalidParams)
}

func TestNewClientValidation(t *testing.T) {
	tests := []struct {
		name, base, key string
		opts            []Option
		field           string
	}{
		{"ok https", "https://api.example.com", "k", nil, ""},
		{"ok https with prefix", "https://api.example.com/gw/", "k", nil, ""},
		{"ok http loopback v4", "http://127.0.0.1:8080", "k", nil, ""},
		{"ok http loopback v6", "http://[::1]:8080", "k", nil, ""},
		{"ok http localhost", "http://localhost:8080", "k", nil, ""},
		{"http remote refused", "http://api.example.com", "k", nil, "baseURL"},
		{"http private refused", "http://10.0.0.5", "k", nil, "baseURL"},
		{"http remote with insecure", "http://api.example.com", "k", []Option{WithInsecureHTTP()}, ""},
		{"empty key", "https://api.example.com", "", nil, "apiKey"},
		{"blank key", "https://api.example.com", "   ", nil, "apiKey"},
		{"key with newline", "https://api.example.com", "k\r\nX-Evil: 1", nil, "apiKey"},
		{"unparsable", "https://[::1", "k", nil, "baseURL"},
		{"no scheme", "api.example.com", "k", nil, "baseURL"},
		{"ftp", "ftp://api.example.com", "k", nil, "baseURL"},
		{"no host", "https://", "k", nil, "baseURL"},
		{"credentials", "https://u:p@api.example.com", "k", nil, "baseURL"},
		{"query", "https://api.example.com/?a=1", "k", nil, "baseURL"},
		{"negative timeout", "https://api.example.com", "k", []Option{WithTimeout(-1)}, "WithTimeout"},
		{"nil http client", "https://api.example.com", "k", []Option{WithHTTPClient(nil)}, "WithHTTPClient"},
		{"negative retries", "https://api.example.com", "k", []Option{WithRetryPolicy(RetryPolicy{MaxRetries: -1})}, "WithRetryPolicy"},
		{"user agent newline", "https://api.example.com", "k", []Option{WithHeader("User-Agent", "a\nb")}, "WithHeader"},
		{"zero max response", "https://api.example.com", "k", []Option{WithMaxResponseBytes(0)}, "WithMaxResponseBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.base, tt.key, tt.opts...)
			if tt.field == "" {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.field, ve.Field)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Nil(t, c)
			if tt.key != "" && len(tt.key) > 3 {
				assert.NotContains(t, err.Error(), tt.key)
			}
		})
	}
}

// TestNewClientEmptyBaseURL: an empty base URL is refused as empty, not
// as a URL with the wrong scheme.
func TestNewClientEmptyBaseURL(t *testing.T) {
	for _, base := range []string{"", "  \t"} {
		_, err := NewClient(base, "k")
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%q", base)
		assert.Equal(t, "baseURL", ve.Field)
		assert.Contains(t, ve.Reason, "is empty", "%q", base)
		assert.NotContains(t, ve.Reason, "scheme", "%q", base)
	}
}

func TestBaseURLPrefixKept(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /gateway/v1/currencies", answer(200, `[]`))
	c, err := NewClient(srv.URL+"/gateway/", "k_0123456789")
	require.NoError(t, err)
	_, err = c.ListCurrencies(context.Background())
	require.NoError(t, err)
}

func TestWithHTTPClientNotMutated(t *testing.T) {
	mt := httpmock.NewMockTransport()
	hc := &http.Client{Transport: mt, Timeout: 7 * time.Second}
	_, err := NewClient(testBase, testKey, WithHTTPClient(hc), WithTimeout(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, hc.Timeout)
	assert.Same(t, mt, hc.Transport)
	assert.Nil(t, hc.CheckRedirect)
	assert.Nil(t, http.DefaultClient.Transport, "globals untouched")
	assert.Equal(t, time.Duration(0), http.DefaultClient.Timeout)
}

func TestDefaultTransport(t *testing.T) {
	tr := newTransport(DefaultMaxConnsPerHost)
	require.NotNil(t, tr.TLSClientConfig)
	assert.Equal(t, uint16(tls.VersionTLS12), tr.TLSClientConfig.MinVersion)
	assert.False(t, tr.TLSClientConfig.InsecureSkipVerify)
	assert.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 64)
	assert.NotSame(t, http.DefaultTransport, tr)
}

// TestBenchFloorTransportIsTheDefault: the benchmarks' floor
// (internal/benchfloor) runs on the SDK's default transport settings and
// per-attempt timeout, TLS aside (it talks to loopback over HTTP), so that
// what the benchmarks compare is the clients, not their transports.
func TestBenchFloorTransportIsTheDefault(t *testing.T) {
	hc := benchfloor.NewHTTPClient()
	assert.Equal(t, DefaultTimeout, hc.Timeout)
	floor, ok := hc.Transport.(*http.Transport)
	require.True(t, ok)
	sdk := newTransport(DefaultMaxConnsPerHost)
	assert.Equal(t, reflect.ValueOf(sdk.Proxy).Pointer(), reflect.ValueOf(floor.Proxy).Pointer(), "Proxy")
	require.NotNil(t, floor.DialContext)
	// The rest, field by field (the dialer's timeouts are inside a closure).
	for _, tr := range []*http.Transport{sdk, floor} {
		tr.Proxy, tr.DialContext, tr.TLSClientConfig = nil, nil, nil
	}
	assert.Equal(t, sdk, floor)
}

// TestTLS11Refused: a server that offers only TLS 1.1 is refused, and the
// failure is permanent (not retried).
func TestTLS11Refused(t *testing.T) {
	var hits int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	quietErrorLog(srv)
	srv.StartTLS()
	defer srv.Close()
	c, err := NewClient(srv.URL, testKey, WithRetryPolicy(fastRetry))
	require.NoError(t, err)
	_, err = c.GetBalances(context.Background())
	require.Error(t, err)
	assert.Zero(t, hits)
}

// TestUntrustedCertificateNotRetried: a certificate error is permanent.
func TestUntrustedCertificateNotRetried(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	quietErrorLog(srv)
	srv.StartTLS()
	defer srv.Close()
	c, err := NewClient(srv.URL, testKey, WithRetryPolicy(fastRetry))
	require.NoError(t, err)
	_, err = c.GetBalances(context.Background())
	require.Error(t, err)
	assert.True(t, isPermanentTransportError(err), "%v", err)
}

func TestClientPrintsNoKey(t *testing.T) {
	c, err := NewClient(testBase, testKey)
	require.NoError(t, err)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("client", "c", c)
	for _, out := range []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c),
		fmt.Sprintf("%v", *c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), fmt.Sprint(c), c.String(),
		logs.String(),
	} {
		assert.NotContains(t, out, testKey)
	}
	assert.Contains(t, c.String(), "[REDACTED]")
	assert.Contains(t, fmt.Sprintf("%+v", c), testBase)
	var nilClient *Client
	assert.Equal(t, "cryptopay.Client(nil)", nilClient.String())
}

func TestDefaultLoggerSilent(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/balance", answer(200, `[]`))
	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.False(t, c.logger.Enabled(context.Background(), slog.LevelError), "the default logger discards everything")
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
	// One connection per request would be 1280. Pooled, it is about one per
	// caller (64 to 90 when the machine is quiet), but not exactly: the
	// transport's read loop puts a connection back in the pool after the
	// caller has read the body, so a caller's next call can start first and
	// dial (seen: 112 on a loaded machine, on go1.27). What is certain, and
	// asserted, is that connections are reused many times over.
	t.Logf("%d connections for %d requests from %d callers", lb.conns.Load(), callers*calls, callers)
	assert.LessOrEqual(t, lb.conns.Load(), int64(callers*calls/4), "connections are pooled and reused, not one per request")
}

// TestSecurityPlainHTTPOnlyToLoopback: plain http:// is accepted only for
// hosts that are loopback by address or are "localhost", so the key never
// crosses a network in clear text unless WithInsecureHTTP says so.
func TestSecurityPlainHTTPOnlyToLoopback(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.8.9.10", true},
		{"http://[::1]:9", true},
		{"http://LOCALHOST", true},
		{"http://[::ffff:127.0.0.1]", true},
		{"https://api.example.com", true},
		{"http://127.0.0.1.nip.io", false},
		{"http://localhost.example.com", false},
		{"http://localhost.", false},
		{"http://0.0.0.0", false},
		{"http://10.0.0.1", false},
		{"http://[::]", false},
		{"http://example.com@127.0.0.1", false}, // credentials in the URL
		{"https://user:pass@api.example.com", false},
		{"ftp://api.example.com", false},
		{"//api.example.com", false},
	} {
		_, err := NewClient(tc.url, "k_0123456789")
		if tc.ok {
			assert.NoError(t, err, tc.url)
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidParams, tc.url)
		if u, perr := url.Parse(tc.url); perr == nil && u.Scheme == "http" && u.User == nil {
			_, err = NewClient(tc.url, "k_0123456789", WithInsecureHTTP())
			assert.NoError(t, err, "%s with WithInsecureHTTP", tc.url)
		}
	}
}
