package cryptopay

// Fixture policy for the root package's tests. Pick the first that fits:
//
//  1. Unit tests of one method or one behaviour of the request path use
//     setup(t): a Client wired to an httptest server on 127.0.0.1 and the
//     *http.ServeMux behind it (go-github's pattern). Register handlers on the
//     mux with the API's paths ("GET /v1/balance"); an unregistered route
//     answers 404, so a test sees exactly the requests it expects.
//  2. End-to-end tests (a whole flow: create, pay, wait, webhook) use the
//     fake server in cryptopaytest, from the external test package
//     cryptopay_test.
//  3. Socket-level tests (connection counts, resets after the request was
//     read, raw frames) use newLoopback(t, handler): a real server that
//     counts requests and accepted connections.
//
// setupMock (an httpmock transport, no socket) remains only for tests that
// need a transport error no real server can produce (for example an error
// string carrying the key); new tests do not use it.

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"
)

const (
	testBase = "https://api.cryptopay.test"
	testKey  = "sk_test_4f9c2b7e1d0a"
)

// fastRetry keeps retry waits in milliseconds so tests stay quick.
var fastRetry = RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond}

// setup starts an httptest server on 127.0.0.1 serving a fresh ServeMux and
// returns a Client for it (fast retries; opts are applied after) and the mux.
// The server stops when the test ends.
func setup(t *testing.T, opts ...Option) (*Client, *http.ServeMux) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, testKey, append([]Option{WithRetryPolicy(fastRetry)}, opts...)...)
	require.NoError(t, err)
	return c, mux
}

// loopback starts a real server on 127.0.0.1 that counts requests and new
// connections.
type loopback struct {
	*httptest.Server
	hits  atomic.Int64
	conns atomic.Int64
}

func newLoopback(t *testing.T, h func(n int64, w http.ResponseWriter, r *http.Request)) *loopback {
	t.Helper()
	lb := &loopback{}
	lb.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(lb.hits.Add(1), w, r)
	}))
	lb.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			lb.conns.Add(1)
		}
	}
	lb.Start()
	t.Cleanup(lb.Close)
	return lb
}

func (lb *loopback) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(lb.URL, testKey, append([]Option{WithRetryPolicy(fastRetry)}, opts...)...)
	require.NoError(t, err)
	return c
}

// setupMock returns a client whose transport is a fresh httpmock transport
// (no global state, safe for parallel tests). See the policy above: only for
// faults a real socket cannot produce.
func setupMock(t *testing.T, opts ...Option) (*Client, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	all := append([]Option{WithHTTPClient(&http.Client{Transport: mt}), WithRetryPolicy(fastRetry)}, opts...)
	c, err := NewClient(testBase, testKey, all...)
	require.NoError(t, err)
	return c, mt
}

type capturedRequest struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

func (c *capturedRequest) capture(r *http.Request) {
	c.Method, c.Path, c.RawQuery, c.Header = r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone()
	if r.Body != nil {
		c.Body, _ = io.ReadAll(r.Body)
	}
}

// bodyMap decodes a captured JSON body keeping numbers as json.Number.
func (c *capturedRequest) bodyMap(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(c.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	return m
}

func readAll(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }
