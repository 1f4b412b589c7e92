package cryptopay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// fmKey is the API key of every fault-matrix server. It is distinctive so
// that a leak into an error or a log line is found by a plain search.
const fmKey = "sk_live_faultmatrix_9f8e7d6c5b4a3210"

// fmRetries is the retry budget of the clients under test (the fake's
// Client(): 3 retries, waits of 1 to 20 ms), so a GET makes at most
// fmRetries+1 attempts.
const fmRetries = 3

// fmTimeout is the per-attempt timeout of the timeout cells.
const fmTimeout = 100 * time.Millisecond

// fmSpare is the extra retry budget of a timeout cell in which a GET must
// recover. Under a 100 ms per-attempt timeout an attempt can time out
// before it reaches the server (a TLS handshake or a scheduler a loaded
// machine stretched); the fault meets only the attempts that arrive, so
// such an attempt costs one retry more. The cell still asserts exactly
// fmRetries faulted arrivals and one served.
const fmSpare = 4

// fmCounts counts a cell's call from the client's side: the attempts the
// SDK started (its Observer), the attempts whose request headers were
// written to a connection (httptrace), and attempts started after a
// request had been written (for a create request, a resend).
type fmCounts struct {
	attempts, sent, afterSent atomic.Int64
}

// observer counts attempts and attempts that follow a written request.
func (fc *fmCounts) observer() cryptopay.Observer {
	return cryptopay.Observer{OnAttemptStart: func(ctx context.Context, _ cryptopay.CallInfo, _ int) context.Context {
		fc.attempts.Add(1)
		if fc.sent.Load() > 0 {
			fc.afterSent.Add(1)
		}
		return ctx
	}}
}

// trace counts the requests written; the SDK's own trace composes with it.
func (fc *fmCounts) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { fc.sent.Add(1) }})
}

// fmEndpoint is one operation of the API as the matrix calls it.
type fmEndpoint struct {
	name  string
	route cryptopaytest.Route
	post  bool
	// call makes the request and returns how many objects it read.
	call func(ctx context.Context, c *cryptopay.Client, fx *fmFixture, orderID string) (int, error)
}

// fmFixture holds objects created before the fault is injected, so that
// the reads have something to read.
type fmFixture struct {
	paymentID, payoutID string
}

func fmPaymentParams(orderID string) cryptopay.CreatePaymentParams {
	return cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("10.5"), PlatformFeeByUser: true,
		Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: orderID,
	}
}

func fmPayoutParams(orderID string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{
		WalletAddress: "TWT2ZkfvgyF7pjkszYMxJikkvtA9ZtZALq", Amount: decimal.RequireFromString("1.25"),
		Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: orderID,
	}
}

var fmEndpoints = []fmEndpoint{
	{"CreatePayment", cryptopaytest.RouteCreatePayment, true, func(ctx context.Context, c *cryptopay.Client, _ *fmFixture, orderID string) (int, error) {
		p, err := c.CreatePayment(ctx, fmPaymentParams(orderID))
		if err != nil {
			return 0, err
		}
		if p.ID == "" || p.OrderID != orderID {
			return 0, fmt.Errorf("bad payment %+v", p)
		}
		return 1, nil
	}},
	{"GetPayment", cryptopaytest.RouteGetPayment, false, func(ctx context.Context, c *cryptopay.Client, fx *fmFixture, _ string) (int, error) {
		p, err := c.GetPayment(ctx, fx.paymentID)
		if err != nil {
			return 0, err
		}
		if p.ID != fx.paymentID {
			return 0, fmt.Errorf("read payment %q, want %q", p.ID, fx.paymentID)
		}
		return 1, nil
	}},
	{"CreatePayout", cryptopaytest.RouteCreatePayout, true, func(ctx context.Context, c *cryptopay.Client, _ *fmFixture, orderID string) (int, error) {
		p, err := c.CreatePayout(ctx, fmPayoutParams(orderID))
		if err != nil {
			return 0, err
		}
		if p.ID == "" || p.OrderID != orderID {
			return 0, fmt.Errorf("bad payout %+v", p)
		}
		return 1, nil
	}},
	{"GetPayout", cryptopaytest.RouteGetPayout, false, func(ctx context.Context, c *cryptopay.Client, fx *fmFixture, _ string) (int, error) {
		p, err := c.GetPayout(ctx, fx.payoutID)
		if err != nil {
			return 0, err
		}
		if p.ID != fx.payoutID {
			return 0, fmt.Errorf("read payout %q, want %q", p.ID, fx.payoutID)
		}
		return 1, nil
	}},
	{"ListPayouts", cryptopaytest.RouteListPayouts, false, func(ctx context.Context, c *cryptopay.Client, _ *fmFixture, _ string) (int, error) {
		page, err := c.ListPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 10})
		if err != nil {
			return 0, err
		}
		return min(len(page.Payouts), page.Count), nil
	}},
	{"GetBalances", cryptopaytest.RouteBalance, false, func(ctx context.Context, c *cryptopay.Client, _ *fmFixture, _ string) (int, error) {
		b, err := c.GetBalances(ctx)
		return len(b), err
	}},
	{"ListCurrencies", cryptopaytest.RouteCurrencies, false, func(ctx context.Context, c *cryptopay.Client, _ *fmFixture, _ string) (int, error) {
		cs, err := c.ListCurrencies(ctx)
		return len(cs), err
	}},
}

// fmFault is one row of the matrix: a fault and what each kind of request
// must make of it.
type fmFault struct {
	name  string
	fault cryptopaytest.Fault
	// refused points the client at a closed 127.0.0.1 port instead.
	refused bool
	// timeout and maxBytes configure the client under test.
	timeout  time.Duration
	maxBytes int64
	// retried: a GET retries this fault, so it recovers when the fault
	// hits fewer attempts than the budget, and fails when it hits all.
	retried bool
	// killsConn: the fault ends the connection (reset, cut body, timeout).
	killsConn bool
	// getErr checks the error of a GET that did not recover.
	getErr func(t *testing.T, err error)
	// postUnknown: a POST hit by the fault must report ErrOutcomeUnknown
	// (it may have reached the server); otherwise the error is a definite
	// answer, checked by postErr.
	postUnknown bool
	postErr     func(t *testing.T, err error)
	// processed: the server created the object before the fault (the
	// ambiguous case); reconciliation must find it.
	processed bool
	// postOnly: the row differs from another only for create requests.
	postOnly bool
}

// Checks of the final error.

func fmAPIError(status int, sentinel error, msg string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		assert.ErrorIs(t, err, sentinel)
		var apiErr *cryptopay.APIError
		if assert.ErrorAs(t, err, &apiErr) {
			assert.Equal(t, status, apiErr.StatusCode)
			assert.NotEmpty(t, apiErr.Message, "every API error has a readable message")
			assert.NotContains(t, apiErr.Message, "<", "markup is stripped")
			if msg != "" {
				assert.Contains(t, apiErr.Message, msg)
			}
		}
	}
}

func fmResponseError(t *testing.T, err error) {
	t.Helper()
	assert.ErrorIs(t, err, cryptopay.ErrUnexpectedResponse)
	var re *cryptopay.ResponseError
	assert.ErrorAs(t, err, &re)
	var apiErr *cryptopay.APIError
	assert.False(t, errors.As(err, &apiErr), "a 2xx is not an APIError")
}

// fmTransport checks a transport failure: no APIError, no ResponseError,
// and what the cause must match.
func fmTransport(check func(error) bool, what string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var apiErr *cryptopay.APIError
		var re *cryptopay.ResponseError
		assert.False(t, errors.As(err, &apiErr), "no response was read: %v", err)
		assert.False(t, errors.As(err, &re), "no response was read: %v", err)
		assert.Truef(t, check(err), "want %s, got %v", what, err)
	}
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	// A reset reads as ECONNRESET, or as EOF when it lands between
	// requests; both are transport errors without a response.
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func isCut(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }

func fmFaults() []fmFault {
	html := "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>upstream hiccup</p></body></html>"
	status := func(code int, sentinel error, processed bool) fmFault {
		f := fmFault{
			name:        fmt.Sprint(code),
			fault:       cryptopaytest.Fault{Status: code, Process: processed},
			retried:     true,
			getErr:      fmAPIError(code, sentinel, ""),
			postUnknown: true,
			postErr:     fmAPIError(code, sentinel, ""),
			processed:   processed,
		}
		if processed {
			f.name += " after processing"
		}
		return f
	}
	return []fmFault{
		{
			name: "connection refused", refused: true, retried: true,
			getErr:  fmTransport(isDial, "a dial error"),
			postErr: fmTransport(isDial, "a dial error"), // nothing was sent: definite, retried
		},
		{
			name: "reset before processing", fault: cryptopaytest.Fault{Drop: true},
			retried: true, killsConn: true, getErr: fmTransport(isReset, "a reset"),
			postUnknown: true, postErr: fmTransport(isReset, "a reset"),
		},
		{
			name: "reset after processing", fault: cryptopaytest.Fault{Drop: true, Process: true},
			retried: true, killsConn: true, getErr: fmTransport(isReset, "a reset"),
			postUnknown: true, postErr: fmTransport(isReset, "a reset"), processed: true,
		},
		{
			name: "timeout", fault: cryptopaytest.Fault{Delay: time.Hour}, timeout: fmTimeout,
			retried: true, killsConn: true, getErr: fmTransport(isTimeout, "a timeout"),
			postUnknown: true, postErr: fmTransport(isTimeout, "a timeout"),
		},
		{
			name: "timeout after processing", fault: cryptopaytest.Fault{Delay: time.Hour, Process: true}, timeout: fmTimeout,
			retried: true, killsConn: true, getErr: fmTransport(isTimeout, "a timeout"),
			postUnknown: true, postErr: fmTransport(isTimeout, "a timeout"), processed: true,
			postOnly: true, // for a read, the same as "timeout"
		},
		{
			name: "429 Retry-After 0", fault: cryptopaytest.Fault{Status: 429, RetryAfter: "0"},
			retried: true, getErr: fmAPIError(429, cryptopay.ErrRateLimited, ""),
			postErr: fmAPIError(429, cryptopay.ErrRateLimited, ""), // a definite no
		},
		{
			// A Retry-After beyond the policy's MaxWait is not slept
			// through: the 429 comes back at once, RetryAfter set.
			name: "429 Retry-After 3600", fault: cryptopaytest.Fault{Status: 429, RetryAfter: "3600"},
			getErr: func(t *testing.T, err error) {
				fmAPIError(429, cryptopay.ErrRateLimited, "")(t, err)
				var apiErr *cryptopay.APIError
				if errors.As(err, &apiErr) {
					assert.Equal(t, time.Hour, apiErr.RetryAfter)
				}
			},
			postErr: fmAPIError(429, cryptopay.ErrRateLimited, ""),
		},
		status(500, cryptopay.ErrServer, false),
		status(500, cryptopay.ErrServer, true),
		status(502, cryptopay.ErrServer, false),
		status(503, cryptopay.ErrServer, false),
		status(504, cryptopay.ErrServer, false),
		{
			// A hostile or broken server that echoes the request headers.
			name:    "500 echoing the API key",
			fault:   cryptopaytest.Fault{Status: 500, Body: `{"code":"echo","message":"bad header x-api-key: ` + fmKey + `"}`},
			retried: true, getErr: fmAPIError(500, cryptopay.ErrServer, "[REDACTED]"),
			postUnknown: true, postErr: fmAPIError(500, cryptopay.ErrServer, "[REDACTED]"),
		},
		{
			name:    "502 HTML page",
			fault:   cryptopaytest.Fault{Status: 502, Body: html, ContentType: "text/html"},
			retried: true, getErr: fmAPIError(502, cryptopay.ErrServer, "Bad Gateway"),
			postUnknown: true, postErr: fmAPIError(502, cryptopay.ErrServer, "Bad Gateway"),
		},
		{
			name:    "503 empty body",
			fault:   cryptopaytest.Fault{Status: 503, EmptyBody: true},
			retried: true, getErr: fmAPIError(503, cryptopay.ErrServer, "Service Unavailable"),
			postUnknown: true, postErr: fmAPIError(503, cryptopay.ErrServer, "Service Unavailable"),
		},
		{
			name:   "200 HTML page",
			fault:  cryptopaytest.Fault{Process: true, Status: 200, Body: html, ContentType: "text/html"},
			getErr: fmResponseError, postUnknown: true, postErr: fmResponseError, processed: true,
		},
		{
			name:   "200 empty body",
			fault:  cryptopaytest.Fault{Process: true, Status: 200, EmptyBody: true},
			getErr: fmResponseError, postUnknown: true, postErr: fmResponseError, processed: true,
		},
		{
			name:   "200 wrong shape",
			fault:  cryptopaytest.Fault{Process: true, Status: 200, Body: `{"unexpected":"shape"}`},
			getErr: fmResponseError, postUnknown: true, postErr: fmResponseError, processed: true,
		},
		{
			name:   "200 JSON null",
			fault:  cryptopaytest.Fault{Process: true, Status: 200, Body: `null`},
			getErr: fmNullOK, postUnknown: true, postErr: fmResponseError, processed: true,
		},
		{
			name:    "truncated JSON",
			fault:   cryptopaytest.Fault{Process: true, Truncate: true},
			retried: true, killsConn: true, getErr: fmTransport(isCut, "an unexpected EOF"),
			postUnknown: true, postErr: fmTransport(isCut, "an unexpected EOF"), processed: true,
		},
		{
			name: "oversized body", maxBytes: 64,
			getErr: fmResponseError, postUnknown: true, postErr: fmResponseError, processed: true,
		},
	}
}

// fmNullOK is the GET check for a 200 "null" body: objects and the payout
// page refuse it; the two plain arrays (balances, currencies) may read it
// as empty, which fmNullArrays lists.
func fmNullOK(t *testing.T, err error) { fmResponseError(t, err) }

// fmNullArrays are the endpoints whose body is a bare JSON array: a null
// there is an empty list, as a Go server writes a nil slice.
var fmNullArrays = map[string]bool{"GetBalances": true, "ListCurrencies": true}

// fmLog collects every log line of every client in the matrix.
type fmLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fmLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *fmLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fmWire is how the client under test reaches the fake: plain
// HTTP/1.1, HTTP/1.1 over TLS, or HTTP/2 over TLS (what a real API over
// HTTPS negotiates).
type fmWire struct {
	name  string
	tls   bool
	http2 bool
}

var fmWires = []fmWire{
	{name: "HTTP-1.1"},
	{name: "TLS-HTTP-1.1", tls: true},
	{name: "TLS-HTTP-2", tls: true, http2: true},
}

// server starts the fake for the transport; done counts the requests it
// has finished handling (the fake logs each one as it ends).
func (tr fmWire) server(t *testing.T) (s *cryptopaytest.Server, done *atomic.Int64) {
	done = new(atomic.Int64)
	opts := []cryptopaytest.ServerOption{cryptopaytest.WithAPIKey(fmKey), cryptopaytest.WithLogger(slog.New(fmDoneCounter{done}))}
	if tr.tls {
		opts = append(opts, cryptopaytest.WithTLS())
	}
	s = cryptopaytest.NewServer(opts...)
	t.Cleanup(s.Close)
	return s, done
}

// fmDoneCounter is a slog.Handler that counts the fake's request lines.
type fmDoneCounter struct{ n *atomic.Int64 }

func (h fmDoneCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h fmDoneCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cryptopaytest request" {
		h.n.Add(1)
	}
	return nil
}
func (h fmDoneCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h fmDoneCounter) WithGroup(string) slog.Handler      { return h }

// fmQuiet waits (bounded) until every request the client wrote for the
// route has arrived and every request that arrived has been handled to its
// end, so that the counts and objects read next are final. A timed-out
// attempt's request can reach the server after the call returned (and a
// create be processed then); a written request can also be lost with its
// connection, which is why the wait is bounded.
func fmQuiet(s *cryptopaytest.Server, done *atomic.Int64, route cryptopaytest.Route, reqs0, sent int) {
	for range 500 {
		total := 0
		for _, ep := range fmEndpoints {
			total += s.Requests(ep.route)
		}
		if s.Requests(route)-reqs0 >= sent && done.Load() == int64(total) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// attemptTimeout is the per-attempt timeout of a timeout cell. Over
// HTTP/1.1 with TLS every timed-out attempt costs its connection, so the
// next attempt starts with a TLS handshake, which on a loaded machine (and
// under -race) can take a good part of 100 ms: such cells get three times
// as long, so that only the injected delay can time an attempt out.
func (tr fmWire) attemptTimeout(d time.Duration) time.Duration {
	if tr.tls && !tr.http2 {
		return 3 * d
	}
	return d
}

// proto is the protocol the responses come over.
func (tr fmWire) proto() string {
	if tr.http2 {
		return "HTTP/2.0"
	}
	return "HTTP/1.1"
}

// options make the client under test speak the transport: the TLS fake's
// Client negotiates HTTP/2; HTTP/1.1 over TLS takes a transport that does
// not offer h2.
func (tr fmWire) options(s *cryptopaytest.Server) []cryptopay.Option {
	if !tr.tls || tr.http2 {
		return nil
	}
	h1 := s.HTTPClient()
	h1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	return []cryptopay.Option{cryptopay.WithHTTPClient(h1)}
}

// TestFaultMatrix runs every fault against every endpoint on the fake
// server, over real loopback sockets, on each of fmWires. Each cell checks the error type, how
// many requests reached the server, that a POST is never resent once it may
// have arrived (and that what the server did is found again by orderId),
// that connections survive faults that do not kill them, and that the API
// key is in no error. After the matrix, no goroutine is left behind and
// the debug log of every client holds no key.
func TestFaultMatrix(t *testing.T) {
	settle() // let goroutines of earlier tests end before counting
	before := runtime.NumGoroutine()
	logs := new(fmLog)
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	for _, tr := range fmWires {
		t.Run(tr.name, func(t *testing.T) {
			for _, f := range fmFaults() {
				for _, ep := range fmEndpoints {
					if f.postOnly && !ep.post || fmRaceSkips(tr, f, ep) {
						continue
					}
					modes := []string{"once"}
					switch {
					case f.refused:
						modes = []string{"always"}
					case !ep.post && f.retried:
						modes = []string{"recovers", "exhausts"}
					}
					for _, mode := range modes {
						name := f.name + "/" + ep.name
						if len(modes) > 1 {
							name += "/" + mode
						}
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							fmCell(t, tr, f, ep, mode, logger)
						})
					}
				}
			}
		})
	}
	if t.Failed() {
		return
	}

	out := logs.String()
	assert.NotContains(t, out, fmKey, "the API key is in no log line")
	assert.Contains(t, out, "outcome unknown", "unknown outcomes are logged as warnings")

	// Every server is closed and every client's idle connections too (by
	// the cells' cleanups): nothing may be left running.
	// Wait for the count itself: a goroutine that ends late (a connection's
	// reader noticing its close) may leave the count still for a moment.
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the matrix, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// fmRaceSkips reports whether the cell of f and ep on tr is left out
// under the race detector (the README's test command), which makes each
// cell several times dearer; CI's run without -race (.ci/run, the newest
// Go's step) runs every cell. Under -race:
//   - a timeout cell of a read waits out its attempts' timeouts, and the
//     five reads time out alike on the wire: only GetPayment and
//     ListPayouts (one object, the list) run them;
//   - over TLS, an endpoint differs from another of its method only in
//     what it decodes, which the plain HTTP/1.1 column covers for every
//     endpoint: only GetPayment, ListPayouts and CreatePayout (the create
//     that moves money) run there.
func fmRaceSkips(tr fmWire, f fmFault, ep fmEndpoint) bool {
	if !cryptopay.RaceDetector {
		return false
	}
	kept := ep.name == "GetPayment" || ep.name == "ListPayouts"
	return f.timeout > 0 && !ep.post && !kept || tr.tls && !kept && ep.name != "CreatePayout"
}

// settle waits (bounded) for the goroutine count to stop falling and
// returns it.
func settle() int {
	n := runtime.NumGoroutine()
	for i := 0; i < 300; i++ {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n && i >= 5 {
			return m
		}
		n = m
	}
	return n
}

// fmInProcess serves each request with h in process.
type fmInProcess struct{ h http.Handler }

func (tr fmInProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func fmCell(t *testing.T, tr fmWire, f fmFault, ep fmEndpoint, mode string, logger *slog.Logger) {
	s, done := tr.server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Objects to read, made in process by a client of its own (no
	// connection, no handshake: the cell's client meets the fake alone).
	var fx fmFixture
	setup, err := cryptopay.NewClient("http://127.0.0.1", fmKey, cryptopay.WithHTTPClient(&http.Client{Transport: fmInProcess{s.Handler()}}))
	require.NoError(t, err)
	p, err := setup.CreatePayment(ctx, fmPaymentParams("fixture-payment"))
	require.NoError(t, err)
	po, err := setup.CreatePayout(ctx, fmPayoutParams("fixture-payout"))
	require.NoError(t, err)
	fx.paymentID, fx.payoutID = p.ID, po.ID

	var counts fmCounts
	opts := append(tr.options(s), cryptopay.WithLogger(logger), cryptopay.WithObserver(counts.observer()))
	timeout := f.timeout > 0
	if timeout {
		opts = append(opts, cryptopay.WithTimeout(tr.attemptTimeout(f.timeout)))
	}
	retries := fmRetries
	if timeout && mode == "recovers" {
		retries += fmSpare
		opts = append(opts, cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: retries, MinWait: time.Millisecond, MaxWait: 20 * time.Millisecond}))
	}
	if f.maxBytes > 0 {
		opts = append(opts, cryptopay.WithMaxResponseBytes(f.maxBytes))
	}
	var c *cryptopay.Client
	if f.refused {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		opts = append(opts, cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: fmRetries, MinWait: time.Millisecond, MaxWait: 20 * time.Millisecond}))
		c, err = cryptopay.NewClient(strings.Split(s.URL, ":")[0]+"://"+addr, fmKey, opts...)
		require.NoError(t, err)
		t.Cleanup(c.CloseIdleConnections)
	} else {
		c = s.Client(opts...)
	}

	// A TLS timeout cell opens the client's first connection before the
	// fault, so its first attempt's timeout never covers a TLS handshake,
	// which a loaded machine can stretch past it (and the attempt would
	// then time out before the request reached the server).
	warm := tr.tls && timeout
	if warm {
		_, err := c.GetBalances(ctx)
		require.NoError(t, err, "the connection opens before the fault")
	}
	conns0 := s.ConnectionsOpened()
	reqs0 := s.Requests(ep.route)
	payments0, payouts0 := s.PaymentCount(), s.PayoutCount()
	orderID := "fm-" + strings.NewReplacer(" ", "-", "/", "-").Replace(t.Name())

	injected := 0
	if !f.refused {
		fault := f.fault
		switch mode {
		case "recovers":
			fault.Times = fmRetries // one attempt fewer than the budget
		case "exhausts":
			fault.Times = fmRetries + 1 // every attempt
		default:
			fault.Times = 1
		}
		if f.maxBytes == 0 {
			s.InjectFault(ep.route, fault)
			injected = fault.Times
		}
	}

	counts.attempts.Store(0) // the warm-up's attempt is not the call's
	n, err := ep.call(counts.trace(ctx), c, &fx, orderID)
	attempts, sent, afterSent := int(counts.attempts.Load()), int(counts.sent.Load()), int(counts.afterSent.Load())
	if timeout {
		fmQuiet(s, done, ep.route, reqs0, sent)
	}
	reqs := s.Requests(ep.route) - reqs0
	pending := s.PendingFaults(ep.route)
	// Every request that reached the server was an attempt of the call,
	// and met a queued fault while one was left. A timeout cell's attempt
	// may time out before it arrives (its count depends on the machine's
	// speed, so it is only bounded); in any other cell every attempt
	// arrives.
	assert.LessOrEqual(t, reqs, attempts, "every arrival was an attempt")
	if timeout {
		// A POST whose body never came (its stream was reset) is
		// refused before the fault queue, so the arrivals that met a
		// fault are bounded, not equal.
		assert.LessOrEqual(t, injected-pending, reqs, "only arrivals met a queued fault")
		if !ep.post {
			assert.Equal(t, max(injected-reqs, 0), pending, "every arrival met a queued fault")
		}
	} else if !f.refused {
		assert.Equal(t, attempts, reqs, "every attempt arrived")
		assert.Zero(t, pending, "every queued fault was met by an attempt")
	}

	// The key is in no error, whatever its shape.
	if err != nil {
		assert.NotContains(t, err.Error(), fmKey)
		assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), fmKey)
		var apiErr *cryptopay.APIError
		if errors.As(err, &apiErr) {
			assert.NotContains(t, string(apiErr.Body), fmKey)
		}
	}

	switch {
	case f.refused:
		require.Error(t, err)
		assert.NotErrorIs(t, err, cryptopay.ErrOutcomeUnknown, "nothing was sent")
		if ep.post {
			f.postErr(t, err)
		} else {
			f.getErr(t, err)
		}
		assert.Equal(t, fmRetries+1, attempts, "a refused connection is retried for every method")
		assert.Zero(t, reqs)

	case !ep.post && mode == "recovers":
		require.NoError(t, err, "a GET recovers when the fault hits fewer attempts than the budget")
		assert.Positive(t, n, "and reads what the server holds")
		assert.Equal(t, fmRetries+1, reqs, "the faulted arrivals and the one served")
		assert.LessOrEqual(t, attempts, retries+1, "within the budget")

	case !ep.post && f.name == "200 JSON null" && fmNullArrays[ep.name]:
		assert.NoError(t, err, "a null array is an empty list")
		assert.Zero(t, n)
		assert.Equal(t, 1, reqs)

	case !ep.post:
		require.Error(t, err)
		assert.NotErrorIs(t, err, cryptopay.ErrOutcomeUnknown, "a read has no unknown outcome")
		f.getErr(t, err)
		if f.retried {
			assert.Equal(t, fmRetries+1, attempts, "retried up to the budget")
		} else {
			assert.Equal(t, 1, attempts, "not retried")
		}

	default: // a create request
		require.Error(t, err)
		// Never resent: once a request was written to a connection, no
		// attempt follows, whatever the machine's speed; so at most one
		// arrives. An attempt that timed out before its request was
		// written may be followed by another (nothing was sent).
		assert.Zero(t, afterSent, "no attempt after a create request was written")
		assert.LessOrEqual(t, sent, 1, "a create request is written once")
		assert.LessOrEqual(t, reqs, sent, "what arrived was written")
		if !timeout {
			assert.Equal(t, 1, attempts, "a create request that reached the server is never resent")
		}
		if f.postUnknown && sent == 1 {
			assert.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
			var ou *cryptopay.OutcomeUnknownError
			if assert.ErrorAs(t, err, &ou) {
				assert.Equal(t, orderID, ou.OrderID)
				assert.Equal(t, "POST", ou.Method)
			}
		} else {
			assert.NotErrorIs(t, err, cryptopay.ErrOutcomeUnknown, "a definite answer")
		}
		f.postErr(t, err)
	}

	// What the server did: at most one object, and only when it processed
	// the request that arrived; reconciliation by orderId agrees with the
	// server.
	created := 0
	handled := reqs == 1 // the one arrival was handled, by the fault when one was queued
	if injected > 0 {
		handled = injected-pending == 1
	}
	if ep.post && f.processed && handled {
		created = 1
	}
	switch ep.route {
	case cryptopaytest.RouteCreatePayout:
		assert.Equal(t, created, s.PayoutsWithOrderID(orderID), "payouts with this orderId")
		assert.Equal(t, payouts0+created, s.PayoutCount())
		if !f.refused {
			item, found, ferr := findPayout(setup, ctx, orderID)
			require.NoError(t, ferr)
			assert.Equal(t, created == 1, found, "reconciliation finds exactly what the server holds")
			if found {
				assert.Equal(t, orderID, item.OrderID)
				assert.True(t, fmPayoutParams(orderID).Amount.Equal(item.Amount))
			}
		}
	case cryptopaytest.RouteCreatePayment:
		assert.Equal(t, payments0+created, s.PaymentCount())
		assert.Equal(t, payouts0, s.PayoutCount())
	default:
		assert.Equal(t, payments0, s.PaymentCount(), "a read creates nothing")
		assert.Equal(t, payouts0, s.PayoutCount(), "a read creates nothing")
	}
	if f.refused {
		return
	}

	// The client still works after the fault, and a fault that does not
	// kill the connection leaves it in the pool.
	var resp cryptopay.Response
	counts.attempts.Store(0)
	_, err = c.GetBalances(ctx, cryptopay.WithResponseInto(&resp))
	nextAttempts := counts.attempts.Load() // under a timeout cell's short timeout, the next call may retry too
	if f.maxBytes > 0 {
		assert.ErrorIs(t, err, cryptopay.ErrUnexpectedResponse, "still over the cap")
	} else {
		require.NoError(t, err, "the client recovers")
	}
	assert.Equal(t, tr.proto(), resp.Proto, "the cell ran on its transport")
	conns := s.ConnectionsOpened() - conns0
	// Over HTTP/2 a timed-out attempt cancels its stream, not the
	// connection.
	opened := int64(1) // the call's first connection
	if warm {
		opened = 0 // already open
	}
	if f.killsConn && !(tr.http2 && f.timeout > 0) {
		assert.GreaterOrEqual(t, conns, opened+1, "the fault killed the connection")
		assert.LessOrEqual(t, conns, opened+int64(attempts)+nextAttempts, "at most one new connection per attempt, the next call's included")
	} else {
		assert.Equal(t, opened, conns, "one connection for the call, its retries and the next call")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestReconcileNeverSaysNotFoundOnGarbage: a 2xx payout list that is not a
// page must make the lookup fail, not report "not found", which
// the caller would take as "safe to send again" and pay twice.
func TestReconcileNeverSaysNotFoundOnGarbage(t *testing.T) {
	for _, body := range []string{`{"unexpected":"shape"}`, `{}`, `null`, `{"count":3}`, `{"payout":null,"count":1}`} {
		t.Run(body, func(t *testing.T) {
			s := cryptopaytest.NewServer()
			t.Cleanup(s.Close)
			c := s.Client()
			ctx := context.Background()
			_, err := c.CreatePayout(ctx, fmPayoutParams("po-garbage"))
			require.NoError(t, err)
			s.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 200, Body: body})
			item, found, err := findPayout(c, ctx, "po-garbage")
			require.ErrorIs(t, err, cryptopay.ErrUnexpectedResponse)
			assert.False(t, found)
			assert.Nil(t, item)
			// Once the list answers properly, the payout is found.
			_, found, err = findPayout(c, ctx, "po-garbage")
			require.NoError(t, err)
			assert.True(t, found)
		})
	}
}

// findPayout is ReconcilePayout without an attempt time (the whole list),
// read as found or not.
func findPayout(c *cryptopay.Client, ctx context.Context, orderID string) (*cryptopay.PayoutListItem, bool, error) {
	res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: orderID})
	if err != nil {
		return nil, false, err
	}
	return res.Payout, res.Verdict == cryptopay.PayoutExists, nil
}
