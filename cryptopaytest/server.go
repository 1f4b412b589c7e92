package cryptopaytest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// Server is a running fake of the API on a loopback address. Its methods
// are safe for concurrent use, also while requests are being served. Close
// it when done (t.Cleanup(srv.Close)).
type Server struct {
	// URL is the base URL of the API, "http://127.0.0.1:port" (https
	// with WithTLS), with no trailing slash.
	URL string
	// APIKey is the key the server accepts in x-api-key.
	APIKey string

	cfg      serverConfig
	tls      *tlsState // WithTLS's certificate (tls.go)
	listener net.Listener
	httpSrv  *http.Server
	clock    clock

	mu         sync.RWMutex // guards the state below
	payments   map[string]*payment
	payouts    map[string]*payout
	payoutList []*payout
	expiry     expiryQueue // waiting payments by expiredAt
	balances   map[pair]decimal.Decimal
	balanceKey []pair // listing order
	currencies []Currency
	supported  map[pair]bool

	requests  [numRoutes]atomic.Int64
	faults    faultQueues
	conns     atomic.Int64
	reqSeq    atomic.Uint64
	reqPrefix string

	wh *webhooks

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	enterMu   sync.RWMutex
	closed    bool
	inflight  sync.WaitGroup // API and control handlers running
	bg        sync.WaitGroup // Serve and the expiry sweeper

	clientsMu sync.Mutex
	clients   []*cryptopay.Client
}

// NewServer starts a Server on 127.0.0.1 (or WithAddr's address) and
// returns it, like httptest.NewServer. It panics if an option is invalid or
// the address cannot be listened on; programs should call StartServer.
func NewServer(opts ...ServerOption) *Server {
	s, err := StartServer(opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// StartServer is NewServer returning an error instead of panicking.
func StartServer(opts ...ServerOption) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	if err := checkLoopbackAddr(cfg.addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("cryptopaytest: listen on %s: %w", cfg.addr, err)
	}
	s := newState(cfg)
	ln, s.URL = s.listen(ln) // plain, or TLS with HTTP/2 (WithTLS, tls.go)
	s.listener = ln

	var h http.Handler = apiHandler{s}
	if cfg.controlAPI {
		mux := http.NewServeMux()
		mux.Handle("/_control/", s.ControlHandler())
		mux.Handle("/", h)
		h = mux
	}
	s.httpSrv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState:         s.ConnState,
	}
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		_ = s.httpSrv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	go func() {
		defer s.bg.Done()
		s.sweep()
	}()
	return s, nil
}

// newState builds a Server's state without a listener.
func newState(cfg serverConfig) *Server {
	start := cfg.startTime
	if start.IsZero() {
		start = time.Now()
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	s := &Server{
		APIKey:    cfg.apiKey,
		cfg:       cfg,
		clock:     clock{start: start.UTC(), realStart: time.Now()},
		payments:  make(map[string]*payment),
		payouts:   make(map[string]*payout),
		balances:  make(map[pair]decimal.Decimal),
		supported: make(map[pair]bool),
		reqPrefix: "req_" + hex.EncodeToString(rnd[:]) + "_",
		done:      make(chan struct{}),
	}
	if s.cfg.logger == nil {
		s.cfg.logger = slog.New(slog.DiscardHandler)
	}
	s.currencies = append([]Currency(nil), cfg.currencies...)
	for _, c := range s.currencies {
		k := pair(c)
		if s.supported[k] {
			continue
		}
		s.supported[k] = true
		s.balances[k] = DefaultBalance()
		s.balanceKey = append(s.balanceKey, k)
	}
	for _, b := range cfg.balances {
		if _, ok := s.balances[b.key]; !ok {
			s.balanceKey = append(s.balanceKey, b.key)
		}
		s.balances[b.key] = b.amount
	}
	s.wh = newWebhooks(s)
	return s
}

func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrInvalid, addr, err)
	}
	if !isLoopbackHost(host) {
		return fmt.Errorf("%w: listen address %q is not loopback (use 127.0.0.1, ::1 or localhost)", ErrInvalid, addr)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// Client returns a *cryptopay.Client for s.URL and s.APIKey with a fast
// retry policy (3 retries, waits of 1 to 20 ms) and a 5 s per-attempt
// timeout; opts are applied after these, so they can override them. It
// panics if an option is invalid. Close closes the idle connections of every
// client it made.
func (s *Server) Client(opts ...cryptopay.Option) *cryptopay.Client {
	all := append([]cryptopay.Option{
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 20 * time.Millisecond}),
		cryptopay.WithTimeout(5 * time.Second),
	}, opts...)
	all = append(s.clientOptions(), all...) // with WithTLS: trust its certificate (tls.go)
	c, err := cryptopay.NewClient(s.URL, s.APIKey, all...)
	if err != nil {
		panic("cryptopaytest: Server.Client: " + err.Error())
	}
	s.clientsMu.Lock()
	s.clients = append(s.clients, c)
	s.clientsMu.Unlock()
	return c
}

// Handler returns the API as an http.Handler, for serving it in-process or
// behind another server. Requests through it are counted and faulted like
// requests to s.URL. Like s.URL, it refuses (403) a request whose Host
// names a host that is not loopback, the mark of DNS rebinding; a request
// with no Host is served. ConnectionsOpened counts s's own listener, and
// another server's when its http.Server.ConnState is s.ConnState.
func (s *Server) Handler() http.Handler { return apiHandler{s} }

// ConnState counts the connections a listener accepts into
// ConnectionsOpened. s sets it on its own listener's server; set it as the
// http.Server.ConnState of a server that serves Handler elsewhere.
func (s *Server) ConnState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.conns.Add(1)
	}
}

// Close stops the server: the listener and every connection are closed at
// once (requests in flight are cut off, injected delays end), pending and
// in-flight webhook deliveries are abandoned, and Close returns when every
// goroutine the server started has ended. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.enterMu.Lock()
		s.closed = true
		s.enterMu.Unlock()
		close(s.done)
		s.wh.close()
		if s.httpSrv != nil {
			_ = s.httpSrv.Close()
		}
		s.inflight.Wait()
		s.bg.Wait()
		s.wh.wait()
		s.clientsMu.Lock()
		for _, c := range s.clients {
			c.CloseIdleConnections()
		}
		s.clientsMu.Unlock()
	})
}

// enter registers a handler run; false once the server is closed.
func (s *Server) enter() bool {
	s.enterMu.RLock()
	defer s.enterMu.RUnlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// ConnectionsOpened returns how many TCP connections the server's listener
// has accepted: compare it with the number of callers to see whether a
// client reuses connections.
func (s *Server) ConnectionsOpened() int64 { return s.conns.Load() }

// Requests returns how many requests of route have arrived, whether they
// were answered normally, refused (401, 400, ...) or faulted. An unknown
// route returns 0.
func (s *Server) Requests(route Route) int {
	i := route.index()
	if i < 0 {
		return 0
	}
	return int(s.requests[i].Load())
}

func (s *Server) nextRequestID() string {
	return s.reqPrefix + strconv.FormatUint(s.reqSeq.Add(1), 10)
}
