package webhook

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

// slowBodyConns is how many slow senders the slow-body tests open: each
// takes a goroutine and two file descriptors (client and server) in this
// process. The race detector allows 8,128 goroutines, so fewer under it.
func slowBodyConns() int {
	if raceDetector {
		return 300
	}
	return 2500
}

// slowServer serves h as the webhook example does (only ReadHeaderTimeout
// set) on loopback, counting the connections the server closed and the
// bodies whose first read began.
type slowServer struct {
	addr        string
	closed      atomic.Int64
	bodyReading atomic.Int64
}

func startSlowServer(t *testing.T, h http.Handler) *slowServer {
	t.Helper()
	s := &slowServer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = &firstRead{ReadCloser: r.Body, n: &s.bodyReading}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				s.closed.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

// firstRead counts a body once its first read is called (by then the
// handler has allocated whatever it reads into).
type firstRead struct {
	io.ReadCloser
	n    *atomic.Int64
	seen bool
}

func (f *firstRead) Read(p []byte) (int, error) {
	if !f.seen {
		f.seen = true
		f.n.Add(1)
	}
	return f.ReadCloser.Read(p)
}

// openSlow opens n connections that each post headers with a made-up token
// and a declared length of 64 KiB, then one byte of the body.
func openSlow(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	head := fmt.Sprintf("POST /hooks/cryptopay?token=%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
		forged, addr, 64<<10)
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = io.WriteString(c, head)
		require.NoError(t, err)
	}
	return conns
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("not after 30 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func slowHandler(t *testing.T, timeout time.Duration) *Handler {
	t.Helper()
	h, err := NewHandler(Config{
		Secret:          []byte("0123456789abcdef0123456789abcdef"),
		OnPayment:       func(context.Context, *cryptopay.Payment) error { return nil },
		BodyReadTimeout: timeout,
	})
	require.NoError(t, err)
	return h
}

// TestWebhookSlowBodiesHoldBoundedMemory: thousands of connections with a
// made-up token, each declaring 64 KiB and sending one byte, all inside
// the handler at once behind a server with only ReadHeaderTimeout, hold a
// bounded heap per connection: the handler allocates as bytes arrive, not
// the declared length (it allocated the 64 KiB up front before, 78 KiB a
// connection in all).
func TestWebhookSlowBodiesHoldBoundedMemory(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's shadow memory changes what the heap measures; CI runs this without -race")
	}
	n := slowBodyConns()
	s := startSlowServer(t, slowHandler(t, time.Minute))
	before := heapAfterGC()
	conns := openSlow(t, s.addr, n)
	waitFor(t, "every handler reading its body", func() bool { return s.bodyReading.Load() == int64(n) })
	after := heapAfterGC()
	perConn := (int64(after) - int64(before)) / int64(n)
	t.Logf("%d slow connections: heap %d KiB larger, %d bytes a connection", n, (int64(after)-int64(before))>>10, perConn)
	assert.Less(t, perConn, int64(32<<10), "heap per slow connection (server and client side)")
	assert.Zero(t, s.closed.Load(), "none closed yet: the deadline is a minute away")
	for _, c := range conns {
		_ = c.Close()
	}
	waitFor(t, "the server to close every connection", func() bool { return s.closed.Load() == int64(n) })
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestWebhookSlowBodiesClosedByTheDeadline: thousands of connections with
// a made-up token, each declaring 64 KiB and trickling a byte now and then
// (far below MinBodyRate), are answered 408 and closed by the server
// under the handler's own body deadline, though the server has only
// ReadHeaderTimeout set. Before, none was ever closed.
func TestWebhookSlowBodiesClosedByTheDeadline(t *testing.T) {
	t.Parallel()
	n := slowBodyConns()
	s := startSlowServer(t, slowHandler(t, 300*time.Millisecond))
	conns := openSlow(t, s.addr, n)
	ctx, cancel := context.WithCancel(t.Context())
	trickled := make(chan struct{})
	go func() { // one byte a connection every 100 ms, until the server closed them all
		defer close(trickled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, c := range conns {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = io.WriteString(c, " ")
			}
		}
	}()
	waitFor(t, "the server to close every slow connection", func() bool { return s.closed.Load() == int64(n) })
	cancel()
	<-trickled
	answered408 := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			if resp.StatusCode == http.StatusRequestTimeout {
				answered408++
			}
			_ = resp.Body.Close()
		}
	}
	assert.Equal(t, n, answered408, "every slow sender was answered 408")
}

// TestWebhookBodyReader: the body reader's answers, through a recorder
// (no connection deadline: the deadline is checked between reads).
func TestWebhookBodyReader(t *testing.T) {
	body := `{"paymentId":"x","orderId":"o"}`
	tests := []struct {
		name     string
		br       bodyReader
		declared int64
		src      io.Reader
		want     string
		err      string
	}{
		{"declared length", bodyReader{maxBody: 1 << 20, timeout: time.Minute, rate: 1024}, int64(len(body)), strings.NewReader(body), body, ""},
		{"unknown length", bodyReader{maxBody: 1 << 20, timeout: time.Minute, rate: 1024}, -1, strings.NewReader(body), body, ""},
		{"larger than the first buffer", bodyReader{maxBody: 1 << 20, timeout: time.Minute, rate: 1024}, 100 << 10,
			strings.NewReader(strings.Repeat("x", 100<<10)), strings.Repeat("x", 100<<10), ""},
		{"over the cap", bodyReader{maxBody: 10, timeout: time.Minute, rate: 1024}, -1, strings.NewReader(body), "", "request body too large"},
		{"too slow", bodyReader{maxBody: 1 << 20, timeout: time.Nanosecond, rate: 1 << 40}, -1, &slowReader{s: body}, "", errBodyTooSlow.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/hook", io.NopCloser(tt.src))
			r.ContentLength = tt.declared
			got, err := tt.br.read(httptest.NewRecorder(), r)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// slowReader returns one byte a read, after a pause.
type slowReader struct{ s string }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	time.Sleep(time.Millisecond)
	p[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}

// TestWebhookBodyLimitsValidation: negative limits are refused.
func TestWebhookBodyLimitsValidation(t *testing.T) {
	for _, cfg := range []Config{{BodyReadTimeout: -1}, {MinBodyRate: -1}} {
		cfg.Secret = []byte("0123456789abcdef0123456789abcdef")
		cfg.OnPayment = func(context.Context, *cryptopay.Payment) error { return nil }
		_, err := NewHandler(cfg)
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	}
}

// TestWebhookRefusedBeforeTheBodyIsNotWaitedOn: a request refused before
// its body is read (no token, not POST), that declares a body (a length
// under the server's 256 KiB post-handler read, or chunked) and sends none
// of it, is answered and its connection closed at once, behind a server
// with only ReadHeaderTimeout. Before, net/http read the unread body to
// reuse the connection, with no deadline: the handler's goroutine and
// connection were held for as long as the sender kept it open, and the
// answer never left.
func TestWebhookRefusedBeforeTheBodyIsNotWaitedOn(t *testing.T) {
	t.Parallel()
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	cases := []struct {
		name, head string
		want       int
	}{
		{"no token, a declared length", "POST /hooks/cryptopay HTTP/1.1\r\nHost: h\r\nContent-Length: 65536\r\n\r\n{", http.StatusUnauthorized},
		{"no token, chunked", "POST /hooks/cryptopay HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", http.StatusUnauthorized},
		{"no token, Expect: 100-continue", "POST /hooks/cryptopay HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 65536\r\n\r\n", http.StatusUnauthorized},
		{"a repeated token", "POST /hooks/cryptopay?token=" + forged + "&token=" + forged + " HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n", http.StatusUnauthorized},
		{"not POST", "PUT /hooks/cryptopay?token=" + forged + " HTTP/1.1\r\nHost: h\r\nContent-Length: 65536\r\n\r\n{", http.StatusMethodNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 50
			s := startSlowServer(t, slowHandler(t, time.Minute))
			conns := make([]net.Conn, 0, n)
			t.Cleanup(func() {
				for _, c := range conns {
					_ = c.Close()
				}
			})
			for range n {
				c, err := net.Dial("tcp", s.addr)
				require.NoError(t, err)
				conns = append(conns, c)
				_, err = io.WriteString(c, tc.head)
				require.NoError(t, err)
			}
			waitFor(t, "the server to close every connection it refused", func() bool { return s.closed.Load() == n })
			answered := 0
			for _, c := range conns {
				_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					if resp.StatusCode == tc.want && resp.Close {
						answered++
					}
					_ = resp.Body.Close()
				}
			}
			assert.Equal(t, n, answered, "every sender was answered %d with Connection: close", tc.want)
		})
	}
}

// TestWebhookBodyDeadlineEndsWithTheBody: the read deadline the handler
// sets for the body (http.ResponseController deadlines stay on the
// connection) does not outlive it. A callback that runs past the body
// deadline keeps its context (the server's background read of the
// connection, which starts at the body's EOF, is not cut by it), and the
// next request on the same keep-alive connection is served on it, not
// closed.
func TestWebhookBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	var calls, cancelled atomic.Int64
	h, err := NewHandler(Config{Secret: whSecret, BodyReadTimeout: timeout, MinBodyRate: 1 << 30, // a body earns no time
		OnPayment: func(ctx context.Context, _ *cryptopay.Payment) error {
			calls.Add(1)
			time.Sleep(4 * timeout) // past the body's deadline, whatever the scheduler does
			if ctx.Err() != nil {
				cancelled.Add(1)
			}
			return nil
		}})
	require.NoError(t, err)
	s := startSlowServer(t, h)
	c, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	target := strings.TrimPrefix(whURL(t, whOrder), "https://shop.example")
	br := bufio.NewReader(c)
	for _, status := range []string{"paid", "paid"} { // the second is a duplicate: 200, no callback
		body := waitPaymentJSON(waitPaymentID, status, whOrder, time.Now())
		_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.False(t, resp.Close, "the connection is kept")
	}
	assert.Equal(t, int64(1), calls.Load())
	assert.Zero(t, cancelled.Load(), "the body deadline did not cancel the callback's context")
	assert.Equal(t, int64(2), s.bodyReading.Load(), "both bodies read")
	assert.Zero(t, s.closed.Load(), "one connection, still open")
}

// TestWebhookSlowBodyOverHTTP2: the body deadline holds on an HTTP/2
// stream too (http.ResponseController sets the stream's deadline): a body
// that stalls after its first byte, with a made-up token, is answered 408
// and the handler returns (a check between reads alone would wait on the
// stalled read for ever).
func TestWebhookSlowBodyOverHTTP2(t *testing.T) {
	t.Parallel()
	var returned atomic.Int64
	h := slowHandler(t, 200*time.Millisecond)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer returned.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	// One byte, then nothing: only a deadline on the stream ends the read.
	go func() { _, _ = io.WriteString(pw, "{") }()
	// A generous bound on the answer.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hooks/cryptopay?token="+forged, pr)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	assert.Equal(t, 2, resp.ProtoMajor)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	waitFor(t, "the handler to return", func() bool { return returned.Load() == 1 })
}
