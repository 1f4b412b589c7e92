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
//     read) use newLoopback(t, handler): a real server that counts requests
//     and accepted connections. Its HTTP/2 counterpart, for what net/http's
//     server cannot send (any RST_STREAM code, GOAWAY), is newH2Server, a
//     frame-level server over loopback TLS, with newConnectProxy in front of
//     it when a test needs an HTTP CONNECT proxy.
//
// setupMock (an httpmock transport, no socket) remains only for tests that
// need a transport error no real server can produce (for example an error
// string carrying the key); new tests do not use it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
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
	quietErrorLog(lb.Server)
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

// newTestCert returns a self-signed certificate for hosts (IP addresses or
// names) and a pool that trusts it.
func newTestCert(t testing.TB, hosts ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// h2Action is what the frame-level server does with a request it has read
// in full (END_STREAM seen).
type h2Action int

const (
	h2Answer          h2Action = iota // 200 with the route's canned body: processed
	h2RSTProtocol                     // RST_STREAM PROTOCOL_ERROR: processed, then reset
	h2RSTInternal                     // RST_STREAM INTERNAL_ERROR: processed, then reset
	h2RSTRefused                      // RST_STREAM REFUSED_STREAM: NOT processed
	h2GoAwayProcessed                 // GOAWAY naming the stream as processed, then close
	h2Drop                            // close the connection with a TCP reset: processed
)

// h2Server is a frame-level HTTP/2 server over TLS on 127.0.0.1, built on
// x/net/http2's Framer: unlike net/http's server it can answer a request
// with any RST_STREAM code or GOAWAY. act decides, per request read in
// full, what to do; processed counts requests it treated as processed (all
// actions but h2RSTRefused), arrivals every request read in full.
type h2Server struct {
	addr      string
	pool      *x509.CertPool
	act       func(n int64, method, path string) h2Action
	arrivals  atomic.Int64
	processed atomic.Int64
	conns     atomic.Int64
	ln        net.Listener
	wg        sync.WaitGroup
}

// newH2Server starts the server with a certificate for 127.0.0.1 and the
// extra host names given (for a proxy test).
func newH2Server(t *testing.T, act func(n int64, method, path string) h2Action, hosts ...string) *h2Server {
	t.Helper()
	cert, pool := newTestCert(t, append([]string{"127.0.0.1"}, hosts...)...)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	require.NoError(t, err)
	s := &h2Server{addr: ln.Addr().String(), pool: pool, act: act, ln: ln}
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Go(func() { s.serve(conn) })
		}
	})
	t.Cleanup(func() { _ = ln.Close(); s.wg.Wait() })
	return s
}

// h2Stream is a request being read.
type h2Stream struct {
	method, path string
}

func (s *h2Server) serve(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if fr.WriteSettings() != nil {
		return
	}
	streams := map[uint32]*h2Stream{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		var id uint32
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
			continue
		case *http2.PingFrame:
			if !f.IsAck() && fr.WritePing(true, f.Data) != nil {
				return
			}
			continue
		case *http2.MetaHeadersFrame:
			streams[f.StreamID] = &h2Stream{method: f.PseudoValue("method"), path: f.PseudoValue("path")}
			if !f.StreamEnded() {
				continue
			}
			id = f.StreamID
		case *http2.DataFrame:
			if !f.StreamEnded() {
				continue
			}
			id = f.StreamID
		default:
			continue
		}
		st := streams[id]
		delete(streams, id)
		if st == nil || !s.finish(conn, fr, id, st) {
			return
		}
	}
}

// finish applies the action to a request read in full; false ends the
// connection.
func (s *h2Server) finish(conn net.Conn, fr *http2.Framer, id uint32, st *h2Stream) bool {
	a := s.act(s.arrivals.Add(1), st.method, st.path)
	if a != h2RSTRefused {
		s.processed.Add(1)
	}
	switch a {
	case h2RSTProtocol:
		return fr.WriteRSTStream(id, http2.ErrCodeProtocol) == nil
	case h2RSTInternal:
		return fr.WriteRSTStream(id, http2.ErrCodeInternal) == nil
	case h2RSTRefused:
		return fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) == nil
	case h2GoAwayProcessed:
		_ = fr.WriteGoAway(id, http2.ErrCodeNo, nil)
		time.Sleep(20 * time.Millisecond) // let the client read it before the close
		return false
	case h2Drop:
		if tc, ok := conn.(*tls.Conn).NetConn().(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return false
	}
	body := h2Body(st.method, st.path)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}) != nil {
		return false
	}
	return fr.WriteData(id, true, []byte(body)) == nil
}

// h2Body is the canned answer of a route.
func h2Body(method, path string) string {
	switch {
	case method == http.MethodPost && path == "/v1/payout":
		return payoutBody
	case path == "/v1/balance":
		return `[{"currency":"usdt","network":"tron","amount":1}]`
	}
	return `[]`
}

// connectProxy is an HTTP CONNECT proxy on 127.0.0.1 that tunnels every
// CONNECT for a host:port in routes to the address it maps to.
type connectProxy struct {
	url      *url.URL
	connects atomic.Int64
}

func newConnectProxy(t *testing.T, routes map[string]string) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &connectProxy{url: &url.URL{Scheme: "http", Host: ln.Addr().String()}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.tunnel(conn, routes) })
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return p
}

func (p *connectProxy) tunnel(conn net.Conn, routes map[string]string) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect || routes[req.Host] == "" {
		_, _ = io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.connects.Add(1)
	up, err := net.Dial("tcp", routes[req.Host])
	if err != nil {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done
}

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

// answer is a handler that answers status with body as JSON.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// findPayout is ReconcilePayout without an attempt time (the whole list),
// read as found or not: the lookup the tests of the list search share.
func findPayout(c *Client, ctx context.Context, orderID string, opts ...Option) (*PayoutListItem, bool, error) {
	res, err := c.ReconcilePayout(ctx, ReconcileParams{OrderID: orderID}, opts...)
	if err != nil {
		return nil, false, err
	}
	return res.Payout, res.Verdict == PayoutExists, nil
}

// connCounter counts, on the client's side, the connections its transport
// has open at once: from the moment a dial returns to the transport's
// Close of that connection.
type connCounter struct {
	mu                 sync.Mutex
	open, peak, closed int64
}

// countConns makes c's own transport (the default one, not yet used) report
// its connections to the returned counter.
func countConns(t *testing.T, c *Client) *connCounter {
	t.Helper()
	tr, ok := c.rt.(*http.Transport)
	require.True(t, ok, "the Client's own transport")
	cc := &connCounter{}
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc.mu.Lock()
		cc.open++
		cc.peak = max(cc.peak, cc.open)
		cc.mu.Unlock()
		return &countedConn{Conn: conn, cc: cc}, nil
	}
	return cc
}

func (cc *connCounter) counts() (open, peak, closed int64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.open, cc.peak, cc.closed
}

type countedConn struct {
	net.Conn
	cc   *connCounter
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.cc.mu.Lock()
		c.cc.open--
		c.cc.closed++
		c.cc.mu.Unlock()
	})
	return c.Conn.Close()
}

// quietErrorLog drops a test server's own log lines (a refused TLS
// handshake, a connection the test cuts): the test asserts on what the
// client sees, and the lines are noise in the test output.
func quietErrorLog(s *httptest.Server) {
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
}
