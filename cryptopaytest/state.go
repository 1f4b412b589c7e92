package cryptopaytest

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
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

// clock is start + real time elapsed + offset.
type clock struct {
	start     time.Time
	realStart time.Time
	offset    atomic.Int64
}

// tlsState is what WithTLS made.
type tlsState struct {
	cert *x509.Certificate
	pool *x509.CertPool
}

// webhooks sends events with at most limit attempts in flight at once
// (WithWebhookConcurrency). Workers are started on demand up to limit and
// end when nothing is ready, so an idle server runs none; a retry waits on
// a timer, not in a worker. Nothing queued is dropped while the server runs.
// It is declared beside the Server, which holds it and which it points back
// to.
type webhooks struct {
	s         *Server
	client    *http.Client
	ctx       context.Context
	cancel    context.CancelFunc
	limit     int
	mu        sync.Mutex
	closed    bool
	queues    map[string]*webhookQueue // objects with events queued
	ready     fifo[*webhookQueue]      // queues whose head may be attempted now
	workers   int                      // worker goroutines running
	busy      int                      // workers in an attempt
	pending   int                      // events queued or being delivered
	log       deliveryLog
	changed   chan struct{} // closed and replaced on every change
	wg        sync.WaitGroup
	userAgent string
	// afterFunc starts a retry's timer: time.AfterFunc, or in a test a
	// recorder of the waits (export_test.go).
	afterFunc func(time.Duration, func()) *time.Timer
}
