package cryptopaytest

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"
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
	tls                bool // WithTLS (tls.go)
	logger             *slog.Logger
	maxBody            int64
	payoutListLag      time.Duration
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
// (default DefaultBalance() for each supported pair). A pair that is not
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

// WithCurrencies replaces the supported pairs (default DefaultCurrencies()).
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
// (default UnpaidZero, the only schema-valid choice; see UnpaidFields).
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

// WithPayoutListLag makes GET /v1/payout/list lag behind creation by d:
// a payout is listed (and counted) only once d has passed since its
// createdAt on the server clock, as on servers whose list reads a replica.
// GET /v1/payout/{id}/status sees it at once. A caller that searches the
// list right after an unknown outcome must wait out such a lag before it
// believes "not listed" (see ReconcileParams.SettleTime). Negative d is an
// error; 0 (the default) means no lag.
func WithPayoutListLag(d time.Duration) ServerOption {
	return func(c *serverConfig) {
		if d < 0 {
			c.fail("WithPayoutListLag: %v is negative", d)
			return
		}
		c.payoutListLag = d
	}
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
		currencies:         DefaultCurrencies(),
		unpaid:             UnpaidZero,
	}
}
