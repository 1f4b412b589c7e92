package cryptopay

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// proxiedHost is the API host name a CONNECT proxy maps to a loopback
// server (ProxyFromEnvironment never proxies loopback, so the base URL
// names a host and the proxy resolves it).
const proxiedHost = "api.cryptopay.test"

// h2Client is one way a Client can reach an HTTP/2 server.
type h2Client struct {
	name string
	new  func(t *testing.T, s *h2Server) *Client
}

// h2Clients: the default transport, a caller's http.Transport with
// ForceAttemptHTTP2, a caller's x/net http2.Transport, and the default
// transport through an HTTP CONNECT proxy.
var h2Clients = []h2Client{
	{"default transport", func(t *testing.T, s *h2Server) *Client {
		c := newTLSClient(t, "https://"+s.addr)
		trustOnly(c, s.pool)
		return c
	}},
	{"WithHTTPClient http.Transport ForceAttemptHTTP2", func(t *testing.T, s *h2Server) *Client {
		tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: s.pool}}
		t.Cleanup(tr.CloseIdleConnections)
		return newTLSClient(t, "https://"+s.addr, WithHTTPClient(&http.Client{Transport: tr}))
	}},
	{"WithHTTPClient x/net http2.Transport", func(t *testing.T, s *h2Server) *Client {
		tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool}}
		t.Cleanup(tr.CloseIdleConnections)
		return newTLSClient(t, "https://"+s.addr, WithHTTPClient(&http.Client{Transport: tr}))
	}},
	{"default transport via CONNECT proxy", func(t *testing.T, s *h2Server) *Client {
		p := newConnectProxy(t, map[string]string{proxiedHost + ":443": s.addr})
		c := newTLSClient(t, "https://"+proxiedHost)
		tr := trustOnly(c, s.pool)
		tr.Proxy = http.ProxyURL(p.url)
		t.Cleanup(func() { assert.Positive(t, p.connects.Load(), "the requests went through the proxy") })
		return c
	}},
}

func newTLSClient(t *testing.T, base string, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(base, testKey, append([]Option{WithRetryPolicy(fastRetry)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// trustOnly makes the Client's own default transport trust pool (and no
// other root): the transport under test stays the SDK's.
func trustOnly(c *Client, pool *x509.CertPool) *http.Transport {
	tr := c.rt.(*http.Transport)
	tr.TLSClientConfig.RootCAs = pool
	return tr
}

// TestPostNeverReplayedOverHTTP2: after the server read POST /v1/payout in
// full, a reset stream, a GOAWAY naming the stream as processed or a
// dropped connection leave exactly one arrival and an unknown outcome, on
// every way of speaking HTTP/2. Go's HTTP/2 client replays by itself any
// request whose GetBody is set on RST_STREAM PROTOCOL_ERROR.
func TestPostNeverReplayedOverHTTP2(t *testing.T) {
	actions := []struct {
		name string
		a    h2Action
	}{
		{"RST_STREAM PROTOCOL_ERROR", h2RSTProtocol},
		{"RST_STREAM INTERNAL_ERROR", h2RSTInternal},
		{"GOAWAY naming the stream processed", h2GoAwayProcessed},
		{"dropped connection", h2Drop},
	}
	for _, hc := range h2Clients {
		for _, act := range actions {
			t.Run(hc.name+"/"+act.name, func(t *testing.T) {
				t.Parallel()
				s := newH2Server(t, func(n int64, method, _ string) h2Action {
					if method == http.MethodPost && n <= 3 {
						return act.a
					}
					return h2Answer // a replayed POST succeeds: the test fails fast
				}, proxiedHost)
				c := hc.new(t, s)
				_, err := c.CreatePayout(context.Background(), validPayoutParams())
				require.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.EqualValues(t, 1, s.arrivals.Load(), "the POST reached the server exactly once")

				var resp Response
				_, err = c.GetBalances(context.Background(), WithResponseInto(&resp))
				require.NoError(t, err, "the client still reads")
				assert.Equal(t, "HTTP/2.0", resp.Proto)
				assert.EqualValues(t, 2, s.processed.Load(), "the POST once, then the GET")
			})
		}
	}
}

// TestPostRefusedStreamNeverProcessedTwice: REFUSED_STREAM says the server
// did not process the stream. The SDK may retry or report an unknown
// outcome; it must never cause two processed arrivals.
func TestPostRefusedStreamNeverProcessedTwice(t *testing.T) {
	for _, hc := range h2Clients {
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()
			s := newH2Server(t, func(n int64, _, _ string) h2Action {
				if n == 1 {
					return h2RSTRefused
				}
				return h2Answer
			}, proxiedHost)
			c := hc.new(t, s)
			p, err := c.CreatePayout(context.Background(), validPayoutParams())
			if err != nil {
				require.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.Zero(t, s.processed.Load())
			} else {
				assert.Equal(t, "po_77", p.ID)
				assert.EqualValues(t, 1, s.processed.Load())
			}
			assert.LessOrEqual(t, s.processed.Load(), int64(1))
		})
	}
}

// TestGetRecoversOverHTTP2: a GET hit by any of the same faults is retried
// and succeeds, as on HTTP/1.1.
func TestGetRecoversOverHTTP2(t *testing.T) {
	for _, hc := range h2Clients {
		for _, a := range []h2Action{h2RSTProtocol, h2RSTInternal, h2RSTRefused, h2GoAwayProcessed, h2Drop} {
			t.Run(hc.name, func(t *testing.T) {
				t.Parallel()
				s := newH2Server(t, func(n int64, _, _ string) h2Action {
					if n == 1 {
						return a
					}
					return h2Answer
				}, proxiedHost)
				b, err := hc.new(t, s).GetBalances(context.Background())
				require.NoError(t, err)
				assert.Len(t, b, 1)
				assert.GreaterOrEqual(t, s.arrivals.Load(), int64(2))
			})
		}
	}
}

// TestPostNotReplayedThroughProxyHTTP1: the same over HTTP/1.1 over TLS
// through a CONNECT proxy: a server that reads the POST and resets the
// connection sees it once.
func TestPostNotReplayedThroughProxyHTTP1(t *testing.T) {
	lb := &loopback{}
	lb.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lb.hits.Add(1)
		resetAfterReading(w, r)
	}))
	cert, pool := newTestCert(t, proxiedHost)
	lb.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	quietErrorLog(lb.Server)
	lb.StartTLS()
	t.Cleanup(lb.Close)
	p := newConnectProxy(t, map[string]string{proxiedHost + ":443": lb.Listener.Addr().String()})
	c := newTLSClient(t, "https://"+proxiedHost)
	tr := trustOnly(c, pool)
	tr.Proxy = http.ProxyURL(p.url)

	_, err := c.CreatePayout(context.Background(), validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.EqualValues(t, 1, lb.hits.Load())
	assert.EqualValues(t, 1, p.connects.Load())
}

func TestRedirectsNotFollowed(t *testing.T) {
	c, mux := setup(t)
	var hits, stolen atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/steal", http.StatusFound) // the same host: even there, not followed
	})
	mux.HandleFunc("/steal", func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		_, _ = w.Write([]byte(`[]`))
	})
	_, err := c.GetBalances(context.Background())
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusFound, apiErr.StatusCode)
	assert.EqualValues(t, 1, hits.Load())
	assert.Zero(t, stolen.Load(), "the key must not follow a redirect")
}

// TestDebugLogs captures debug logs across success, error, retry and
// unknown-outcome paths: one line per attempt with method, path, status,
// duration and attempt, and never the key, a query string or a body.
func TestDebugLogs(t *testing.T) {
	var logs bytes.Buffer
	c, mux := setup(t, WithLogger(debugLogger(&logs)))
	echo := func(status int, w http.ResponseWriter, r *http.Request) {
		// A hostile server that echoes the request headers back.
		b, _ := json.Marshal(map[string]any{"code": "echo", "message": fmt.Sprint(r.Header)})
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
	var n atomic.Int64
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			echo(503, w, r)
			return
		}
		_, _ = w.Write([]byte(`[{"currency":"usdt","network":"tron","amount":1}]`))
	})
	mux.HandleFunc("GET /v1/payout/list", func(w http.ResponseWriter, r *http.Request) { echo(400, w, r) })
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) { echo(500, w, r) })

	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	_, err = c.ListPayouts(context.Background(), ListPayoutsParams{Limit: 5, Offset: 10})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), testKey, "an echoed key is scrubbed from the error")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.NotContains(t, string(apiErr.Body), testKey)
	_, err = c.CreatePayout(context.Background(), validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.NotContains(t, err.Error(), testKey)

	out := logs.String()
	assert.NotContains(t, out, testKey)
	assert.NotContains(t, out, "limit=5", "no query strings")
	assert.NotContains(t, out, "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", "no bodies")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	var attempts []map[string]any
	for _, m := range lines {
		if m["msg"] == "cryptopay request" {
			attempts = append(attempts, m)
		}
	}
	require.Len(t, attempts, 4, "GET 503 + GET 200 + list 400 + payout 500")
	want := []struct {
		method, path string
		status       float64
		attempt      float64
		retry        bool
	}{
		{"GET", "/v1/balance", 503, 1, true},
		{"GET", "/v1/balance", 200, 2, false},
		{"GET", "/v1/payout/list", 400, 1, false},
		{"POST", "/v1/payout", 500, 1, false},
	}
	for i, w := range want {
		a := attempts[i]
		assert.Equal(t, w.method, a["method"])
		assert.Equal(t, w.path, a["path"])
		assert.Equal(t, w.status, a["status"])
		assert.Equal(t, w.attempt, a["attempt"])
		assert.Equal(t, w.retry, a["retry"])
		assert.Contains(t, a, "duration")
	}
	assert.Equal(t, "WARN", lines[len(lines)-1]["level"])
	assert.Equal(t, "wd-1", lines[len(lines)-1]["orderId"])
}

// TestNewRequestMatchesURLParse: the request URL built from the base parsed
// once (newRequest) is the one http.NewRequest(base+path) gives: the same
// scheme, host, path, escaped path and query, so the same bytes on the wire.
func TestNewRequestMatchesURLParse(t *testing.T) {
	bases := []string{"http://127.0.0.1:8080", "https://api.example.com/", "https://api.example.com/pre%20fix/",
		"https://api.example.com/a b/c", "https://[::1]:443/x", "http://localhost:/p"}
	ids := []string{"abc", "a b", "ü€", "a+b&c=d;e:f@g$h!i'j(k)l*m,n", "x\"y<z>{}|^`", "~._-"}
	for _, b := range bases {
		c, err := NewClient(b, "k_123456")
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		paths := []string{"/v1/payout/list?limit=100&offset=5", "/v1/payment/6f1c2a4e-8b9d-4e3f-a1b2-c3d4e5f60718/status", "/v1/payment"}
		for _, id := range ids {
			paths = append(paths, "/v1/payout/"+url.PathEscape(id)+"/status")
		}
		for _, p := range paths {
			want, err := http.NewRequest(http.MethodGet, c.base+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.newURL(p)
			if err != nil {
				t.Fatal(err)
			}
			w := want.URL
			if g.String() != w.String() || g.RequestURI() != w.RequestURI() || g.Path != w.Path ||
				g.EscapedPath() != w.EscapedPath() || g.RawQuery != w.RawQuery || g.Host != w.Host || c.reqHost != want.Host {
				t.Errorf("%q + %q:\n got %q (host %q, request host %q)\nwant %q (host %q, request host %q)",
					b, p, g, g.Host, c.reqHost, w, w.Host, want.Host)
			}
		}
	}
}

func TestCanceledContextSendsNothing(t *testing.T) {
	c, mux := setup(t)
	var n atomic.Int64
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { n.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.CreatePayout(ctx, validPayoutParams())
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Zero(t, n.Load())
}
