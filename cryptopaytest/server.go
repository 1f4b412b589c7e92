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
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

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

// NewTLSServer starts a Server over TLS: NewServer with WithTLS.
func NewTLSServer(opts ...ServerOption) *Server {
	return NewServer(append(opts, WithTLS())...)
}
