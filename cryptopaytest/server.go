package cryptopaytest

import (
	"context"
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

// DefaultAPIKey is the API key a Server accepts unless WithAPIKey sets
// another. It is a test value; it opens nothing real.
const DefaultAPIKey = "test_key_cryptopaytest_0000000000"

// Defaults of a Server's settings.
const (
	// DefaultPaymentTTL is how long a payment waits before it expires.
	DefaultPaymentTTL = 30 * time.Minute
	// DefaultMaxBodyBytes caps a request body; a larger one is refused with 413.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultListLimit is the page size of GET /v1/payout/list when no
	// limit is given.
	DefaultListLimit = 20
	// MaxListLimit caps the page size of GET /v1/payout/list; a larger limit
	// is served as MaxListLimit (not refused), like servers that cap pages.
	MaxListLimit = 100
	// DefaultWebhookConcurrency is how many webhook delivery attempts may
	// be in flight at once unless WithWebhookConcurrency says otherwise.
	DefaultWebhookConcurrency = 64
	// DefaultWebhookLogSize is how many delivery attempts the log keeps
	// (the newest) unless WithWebhookLog says otherwise.
	DefaultWebhookLogSize = 10000
)

// Errors returned by the methods that drive the server's state. They are
// wrapped with details; match them with errors.Is.
var (
	// ErrNotFound: no payment or payout has that id.
	ErrNotFound = errors.New("cryptopaytest: no such object")
	// ErrTransition: the object cannot move to the requested status (or
	// receive a payment) from the status it is in.
	ErrTransition = errors.New("cryptopaytest: status change not allowed")
	// ErrInvalid: an argument is not acceptable (for example an amount that
	// is not positive, or a status the API does not define).
	ErrInvalid = errors.New("cryptopaytest: invalid argument")
)

// Currency is a currency and network pair the server supports, for example
// {Currency: "usdt", Network: "tron"}. Matching is exact and case-sensitive.
type Currency struct {
	// Currency is the currency key, for example "usdt".
	Currency string
	// Network is the network key, for example "tron".
	Network string
}

// DefaultCurrencies are the pairs a Server supports unless WithCurrencies
// says otherwise. Each starts with DefaultBalance.
var DefaultCurrencies = []Currency{
	{"btc", "bitcoin"},
	{"eth", "eth"},
	{"eth", "sepolia"},
	{"usdt", "tron"},
	{"usdt", "erc20"},
	{"usdt", "eth"},
	{"usdc", "eth"},
	{"trx", "tron"},
	{"ltc", "litecoin"},
}

// DefaultBalance is the starting balance of every supported pair that
// WithBalance does not set.
var DefaultBalance = decimal.NewFromInt(1000)

// UnpaidFields says how the status-only fields (paidAmount, merchantAmount
// and, for payments, paidAddress) are written before the object has been
// paid. The spec does not say; a client must cope with each.
type UnpaidFields int

const (
	// UnpaidNull writes them as JSON null (the default).
	UnpaidNull UnpaidFields = iota
	// UnpaidOmit leaves them out.
	UnpaidOmit
	// UnpaidZero writes 0 for the amounts and "" for the address.
	UnpaidZero
)

// String names the mode as the cmd's -unpaid-fields flag spells it.
func (u UnpaidFields) String() string {
	switch u {
	case UnpaidNull:
		return "null"
	case UnpaidOmit:
		return "omit"
	case UnpaidZero:
		return "zero"
	}
	return "UnpaidFields(" + strconv.Itoa(int(u)) + ")"
}

// ParseUnpaidFields reads "null", "omit" or "zero".
func ParseUnpaidFields(s string) (UnpaidFields, error) {
	switch s {
	case "null":
		return UnpaidNull, nil
	case "omit":
		return UnpaidOmit, nil
	case "zero":
		return UnpaidZero, nil
	}
	return 0, fmt.Errorf("%w: unpaid fields mode %q (want null, omit or zero)", ErrInvalid, s)
}

type serverConfig struct {
	apiKey             string
	addr               string
	feePercent         decimal.Decimal
	networkFeePercent  decimal.Decimal
	paymentTTL         time.Duration
	startTime          time.Time
	balances           []balanceSetting
	currencies         []Currency
	webhookAttempts    int
	webhookFirstWait   time.Duration
	webhookClient      *http.Client
	webhookAnyHost     bool
	webhookConcurrency int
	webhookLogSize     int
	unpaid             UnpaidFields
	controlAPI         bool
	logger             *slog.Logger
	maxBody            int64
	sweepInterval      time.Duration
	errs               []error
}

type balanceSetting struct {
	key    pair
	amount decimal.Decimal
}

func (c *serverConfig) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
}

// ServerOption configures a Server. Options are applied in order; an
// invalid value makes NewServer panic and StartServer return an error.
type ServerOption func(*serverConfig)

// WithAPIKey sets the key the server accepts in x-api-key (default
// DefaultAPIKey).
func WithAPIKey(key string) ServerOption {
	return func(c *serverConfig) {
		if strings.TrimSpace(key) == "" {
			c.fail("API key is empty")
			return
		}
		c.apiKey = key
	}
}

// WithAddr sets the listen address (default "127.0.0.1:0", a free port).
// The host must be a loopback IP or "localhost": the fake never listens on a
// network interface.
func WithAddr(addr string) ServerOption {
	return func(c *serverConfig) { c.addr = addr }
}

// WithFeePercent sets the payment fee in percent (default 1): the fee of a
// payment is amount*p/100. It must be zero or positive.
func WithFeePercent(p decimal.Decimal) ServerOption {
	return func(c *serverConfig) {
		if p.IsNegative() {
			c.fail("fee percent %s is negative", p)
			return
		}
		c.feePercent = p
	}
}

// WithNetworkFeePercent sets the payout network fee in percent (default
// 0.5); see the package documentation for who bears it. It must be zero or
// positive.
func WithNetworkFeePercent(p decimal.Decimal) ServerOption {
	return func(c *serverConfig) {
		if p.IsNegative() {
			c.fail("network fee percent %s is negative", p)
			return
		}
		c.networkFeePercent = p
	}
}

// WithPaymentTTL sets how long after creation an unpaid payment expires
// (default DefaultPaymentTTL). It must be positive.
func WithPaymentTTL(d time.Duration) ServerOption {
	return func(c *serverConfig) {
		if d <= 0 {
			c.fail("payment TTL %s is not positive", d)
			return
		}
		c.paymentTTL = d
	}
}

// WithStartTime sets the server clock's reading at start (default: the
// real time). The clock then moves with real time plus whatever Advance
// adds: Now() = start + real time elapsed + advanced.
func WithStartTime(t time.Time) ServerOption {
	return func(c *serverConfig) { c.startTime = t }
}

// WithBalance sets the starting balance of a currency and network pair
// (default DefaultBalance for each supported pair). A pair that is not
// supported is listed too, but nothing can be paid or paid out in it.
func WithBalance(currency, network string, amount decimal.Decimal) ServerOption {
	return func(c *serverConfig) {
		if amount.IsNegative() {
			c.fail("balance %s/%s is negative", currency, network)
			return
		}
		c.balances = append(c.balances, balanceSetting{pair{currency, network}, amount})
	}
}

// WithCurrencies replaces the supported pairs (default DefaultCurrencies).
// Payments and payouts in any other pair are refused with 400.
func WithCurrencies(pairs ...Currency) ServerOption {
	return func(c *serverConfig) {
		for _, p := range pairs {
			if p.Currency == "" || p.Network == "" {
				c.fail("currency pair %q/%q has an empty part", p.Currency, p.Network)
				return
			}
		}
		c.currencies = append([]Currency(nil), pairs...)
	}
}

// WithWebhookRetry sets how webhook deliveries are attempted: at most
// maxAttempts attempts in all (1: no retry), the first retry after
// firstWait, each next one after twice the previous wait (capped at one
// minute). Default: 5 attempts from 10 ms, which suits tests.
func WithWebhookRetry(maxAttempts int, firstWait time.Duration) ServerOption {
	return func(c *serverConfig) {
		if maxAttempts < 1 || firstWait < 0 {
			c.fail("webhook retry: want maxAttempts >= 1 and firstWait >= 0")
			return
		}
		c.webhookAttempts, c.webhookFirstWait = maxAttempts, firstWait
	}
}

// WithWebhookClient sets the HTTP client webhooks are sent with (default: a
// private client with a 5 s timeout that follows no redirects). Close closes
// its idle connections.
func WithWebhookClient(hc *http.Client) ServerOption {
	return func(c *serverConfig) {
		if hc == nil {
			c.fail("webhook client is nil")
			return
		}
		c.webhookClient = hc
	}
}

// WithWebhookAnyHost lets webhooks go to any host. By default only loopback
// URLs (127.0.0.0/8, ::1, localhost) are called, so a test that puts an
// example URL in webhookUrl never reaches the network; an attempt to another
// host is recorded as failed and not retried.
func WithWebhookAnyHost() ServerOption {
	return func(c *serverConfig) { c.webhookAnyHost = true }
}

// WithWebhookConcurrency bounds how many webhook delivery attempts are in
// flight at once, across all objects (default DefaultWebhookConcurrency),
// so a burst of events never opens more connections than that. Events
// beyond the bound wait in a queue, in order per object; none is dropped
// while the server runs. A retry's wait does not hold a slot. n must be
// at least 1.
func WithWebhookConcurrency(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.fail("webhook concurrency %d is below 1", n)
			return
		}
		c.webhookConcurrency = n
	}
}

// WithWebhookLog sets how many delivery attempts the log keeps (default
// DefaultWebhookLogSize): Webhooks returns the newest n, bodies included,
// and older ones are dropped, so memory stays bounded on a long-running
// server. n must be at least 1.
func WithWebhookLog(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.fail("webhook log size %d is below 1", n)
			return
		}
		c.webhookLogSize = n
	}
}

// WithUnpaidFields sets how status-only fields are written before payment
// (default UnpaidNull).
func WithUnpaidFields(u UnpaidFields) ServerOption {
	return func(c *serverConfig) {
		if u < UnpaidNull || u > UnpaidZero {
			c.fail("unpaid fields mode %d", int(u))
			return
		}
		c.unpaid = u
	}
}

// WithControlAPI serves ControlHandler under /_control/ on the server's own
// listener, next to the API (used by cmd/cryptopay-fakeserver). The control
// API needs no key: anyone who can reach the listener can mark payments
// paid, which is why the server only listens on loopback.
func WithControlAPI() ServerOption {
	return func(c *serverConfig) { c.controlAPI = true }
}

// WithLogger logs one line per API request (method, path, route, status,
// duration) at Info level, and webhook attempts at Debug level. Default:
// nothing is logged. Bodies and the API key are never logged.
func WithLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.logger = l }
}

// WithMaxBodyBytes caps request bodies (default DefaultMaxBodyBytes); a
// larger body is refused with 413.
func WithMaxBodyBytes(n int64) ServerOption {
	return func(c *serverConfig) {
		if n <= 0 {
			c.fail("max body bytes %d is not positive", n)
			return
		}
		c.maxBody = n
	}
}

// Server is a running fake of the API on a loopback address. Its methods
// are safe for concurrent use, also while requests are being served. Close
// it when done (t.Cleanup(srv.Close)).
type Server struct {
	// URL is the base URL of the API, "http://127.0.0.1:port", with no
	// trailing slash.
	URL string
	// APIKey is the key the server accepts in x-api-key.
	APIKey string

	cfg      serverConfig
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
	s.listener = ln
	s.URL = "http://" + ln.Addr().String()

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
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
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

// defaultConfig returns the settings a Server has without options.
func defaultConfig() serverConfig {
	return serverConfig{
		apiKey:             DefaultAPIKey,
		addr:               "127.0.0.1:0",
		feePercent:         decimal.NewFromInt(1),
		networkFeePercent:  decimal.New(5, -1),
		paymentTTL:         DefaultPaymentTTL,
		webhookAttempts:    5,
		webhookFirstWait:   10 * time.Millisecond,
		webhookConcurrency: DefaultWebhookConcurrency,
		webhookLogSize:     DefaultWebhookLogSize,
		maxBody:            DefaultMaxBodyBytes,
		sweepInterval:      time.Second,
		currencies:         DefaultCurrencies,
	}
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
		s.balances[k] = DefaultBalance
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
// requests to s.URL (ConnectionsOpened counts only s's own listener).
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

// Now returns the server's clock: the start time plus the real time elapsed
// plus everything Advance added. Timestamps on the wire come from it,
// truncated to milliseconds.
func (s *Server) Now() time.Time { return s.clock.now() }

// Advance moves the server's clock forward by d (a negative d is ignored).
// Waiting payments whose expiredAt has passed become expired at once and
// their webhooks are sent.
func (s *Server) Advance(d time.Duration) {
	if d > 0 {
		s.clock.offset.Add(int64(d))
	}
	s.expireDue()
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

// sweep expires due payments once per sweepInterval, so an expiry webhook
// is sent even when nobody reads the payment. Each tick looks only at the
// earliest expiry (expireDue), not at every payment.
func (s *Server) sweep() {
	t := time.NewTicker(s.cfg.sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.expireDue()
		}
	}
}

// clock is start + real time elapsed + offset.
type clock struct {
	start     time.Time
	realStart time.Time
	offset    atomic.Int64
}

func (c *clock) now() time.Time {
	return c.start.Add(time.Since(c.realStart) + time.Duration(c.offset.Load()))
}

// sleep waits d, or until ctx ends or the server closes; false if cut short.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}
