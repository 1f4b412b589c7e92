package cryptopay

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cryptopay/cryptopay-go/address"
)

// Option configures a Client when given to NewClient, or one call when
// given after a method's parameters, with the same meaning on both levels:
//
//	c, err := cryptopay.NewClient(base, key, cryptopay.WithTimeout(10*time.Second))
//	p, err := c.GetPayment(ctx, id, cryptopay.WithTimeout(5*time.Second))
//
// A per-call Option overrides the Client's setting for that call only. The
// options that shape the Client itself (WithAddressChecker, WithHTTPClient, WithInsecureHTTP,
// WithLogger, WithMaxConcurrentWaitReads, WithMaxConnsPerHost,
// WithMaxResponseBytes, WithObserver, WithWakeupBus) are refused per call,
// and WithResponseInto is refused by NewClient, each with a
// *ValidationError matching ErrInvalidParams before anything is sent. No
// Option can make a create request (POST) be resent after it may have
// reached the server. A nil Option is ignored.
type Option func(*config) error

// Defaults.
const (
	// DefaultTimeout bounds each attempt unless WithTimeout says otherwise.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes caps a successful response body.
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxConnsPerHost bounds the default transport's connections to
	// the API host unless WithMaxConnsPerHost says otherwise.
	DefaultMaxConnsPerHost = 256
)

// config holds what the options set: the Client's (perCall false), or one
// call's overrides (perCall true). The API key lives only here, behind a
// pointer, so printing a Client (even with %#v on the dereferenced struct)
// never shows it.
type config struct {
	perCall          bool
	apiKey           string
	scrub            scrubber // finds apiKey in server text (redact.go)
	httpClient       *http.Client
	retry            RetryPolicy
	retrySet         bool
	logger           *slog.Logger
	header           http.Header // WithHeader's
	timeout          time.Duration
	timeoutSet       bool
	insecureHTTP     bool
	maxResponseBytes int64
	maxConnsPerHost  int
	headers          struct{ get, post http.Header }
	observers        []Observer
	bus              WakeupBus
	waitReads        int       // WithMaxConcurrentWaitReads; 0: the default
	resp             *Response // WithResponseInto's target (per call)

	// addresses checks wallet addresses (WithAddressChecker); the zero
	// Checker has the built-in checks.
	addresses address.Checker
}

// newConfig applies the options over the defaults and checks the key.
func newConfig(apiKey string, opts []Option) (*config, error) {
	cfg := &config{
		apiKey:           apiKey,
		scrub:            newScrubber(apiKey),
		retry:            DefaultRetryPolicy(),
		maxResponseBytes: DefaultMaxResponseBytes,
		maxConnsPerHost:  DefaultMaxConnsPerHost,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(cfg); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(apiKey) == "" {
		return nil, &ValidationError{Field: "apiKey", Reason: "is empty"}
	}
	if strings.ContainsFunc(apiKey, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, &ValidationError{Field: "apiKey", Reason: "contains control characters"}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	cfg.retry = cfg.retry.withDefaults()
	return cfg, nil
}

// clientOnly makes an Option that only NewClient accepts.
func clientOnly(name string, ok bool, reason string, set func(*config)) Option {
	return func(c *config) error {
		switch {
		case c.perCall:
			return &ValidationError{Field: name, Reason: "configures the Client; give it to NewClient, not to a call"}
		case !ok:
			return &ValidationError{Field: name, Reason: reason}
		}
		set(c)
		return nil
	}
}

// option makes an Option valid on both levels that applies set when ok,
// and otherwise refuses field with reason.
func option(ok bool, field, reason string, set func(*config)) Option {
	return func(c *config) error {
		if !ok {
			return &ValidationError{Field: field, Reason: reason}
		}
		set(c)
		return nil
	}
}

// refusedHeaders are the headers WithHeader cannot set: the SDK's own
// authentication and framing, the ones net/http acts on itself, and the
// idempotency keys that make net/http replay a POST by itself.
var refusedHeaders = map[string]string{
	"X-Api-Key":         "carries the Client's API key",
	"Host":              "is the base URL's host",
	"Content-Length":    "is set from the body",
	"Transfer-Encoding": "is set by net/http",
	"Connection":        "is managed by net/http",
	"Upgrade":           "is managed by net/http",
	"Te":                "is managed by net/http",
	"Trailer":           "is managed by net/http",
	"Keep-Alive":        "is managed by net/http",
	"Idempotency-Key":   "makes net/http resend a POST by itself, which could pay twice",
	"X-Idempotency-Key": "makes net/http resend a POST by itself, which could pay twice",
}

// WithHeader sets header key to value on every request (given to
// NewClient) or on one call's requests, replacing the SDK's value for that
// name (Accept, for example), except User-Agent: its value goes in front of
// the SDK's own token ("shop/1.2 cryptopay-go/0.1.0 (...)"), so the server
// still sees which SDK called. A per-call header replaces the Client's
// header of the same name. It refuses, with a *ValidationError matching
// ErrInvalidParams and before anything is sent: x-api-key, Host,
// Content-Length, Idempotency-Key and X-Idempotency-Key (net/http replays a
// POST that carries either, which could send a payout twice), the
// hop-by-hop headers net/http manages, and a name or value that is not
// valid in HTTP.
func WithHeader(key, value string) Option {
	return func(c *config) error {
		name := http.CanonicalHeaderKey(strings.TrimSpace(key))
		if why, ok := refusedHeaders[name]; ok {
			return &ValidationError{Field: "WithHeader", Reason: name + " cannot be set: it " + why}
		}
		if !validHeaderName(name) {
			return &ValidationError{Field: "WithHeader", Reason: "not a valid header name"}
		}
		if strings.ContainsFunc(value, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
			return &ValidationError{Field: "WithHeader", Reason: "the value of " + name + " is not valid in a header (a line break or control character)"}
		}
		if name == "User-Agent" {
			value = strings.TrimSpace(value + " " + sdkUserAgent)
		}
		if c.header == nil {
			c.header = make(http.Header, 1)
		}
		c.header[name] = []string{value}
		return nil
	}
}

// WithTimeout bounds each attempt, like http.Client.Timeout; 0 means no
// per-attempt bound, on the Client and per call alike (default:
// DefaultTimeout, or the Timeout of WithHTTPClient's client). The ctx passed
// to a call bounds the whole call, retries included. A create request whose
// attempt times out is not resent and matches ErrOutcomeUnknown. A negative
// d is refused.
func WithTimeout(d time.Duration) Option {
	return option(d >= 0, "WithTimeout", "must not be negative", func(c *config) { c.timeout, c.timeoutSet = d, true })
}

// WithRetryPolicy sets how reads are retried (zero MinWait and MaxWait take
// the defaults). See RetryPolicy. A create request is still resent only
// when nothing of it was sent, whatever the policy.
func WithRetryPolicy(p RetryPolicy) Option {
	return option(p.valid(), "WithRetryPolicy", "values must not be negative", func(c *config) { c.retry, c.retrySet = p, true })
}

// WithResponseInto, given to a call, makes it fill *r with its last HTTP
// response's metadata and its attempts, on success and on error alike
// (StatusCode is 0 and Header nil when no response came; all is zero when
// ctx was done before the call). A call refused for an invalid parameter or
// option, before any request, leaves *r unchanged. The API key is replaced
// by [REDACTED] wherever a header echoes it. NewClient refuses it: it
// describes one call.
func WithResponseInto(r *Response) Option {
	return func(c *config) error {
		switch {
		case !c.perCall:
			return &ValidationError{Field: "WithResponseInto", Reason: "describes one call; give it to a call, not to NewClient"}
		case r == nil:
			return &ValidationError{Field: "WithResponseInto", Reason: "response is nil"}
		}
		c.resp = r
		return nil
	}
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		ok := b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// WithObserver adds o to the Client's observers; each is called in the order
// given. (A webhook receiver reports to its own webhook.Config.OnEvent.)
func WithObserver(o Observer) Option {
	return clientOnly("WithObserver", true, "", func(c *config) { c.observers = append(c.observers, o) })
}

// WithHTTPClient makes the Client send through hc's transport
// (http.DefaultTransport if hc.Transport is nil). Only the transport and
// hc.Timeout are used, and hc is never changed: redirects are never followed
// (so x-api-key cannot follow one to another host), no cookie jar is
// consulted, and each attempt is bounded by WithTimeout if given, otherwise
// hc.Timeout. The transport's own settings (TLS, proxy, connection limits)
// apply as they are: WithMaxConnsPerHost does not change them. Whatever the
// transport (HTTP/1.1, HTTP/2, a proxy), a create request is still never
// resent once it may have reached the server.
func WithHTTPClient(hc *http.Client) Option {
	return clientOnly("WithHTTPClient", hc != nil, "http client is nil", func(c *config) { c.httpClient = hc })
}

// WithLogger logs one debug line per attempt (method, path, status,
// duration, attempt, retry decision) and a warning for every unknown
// outcome. Bodies, query strings and headers are never logged. nil restores
// the default, which discards everything.
func WithLogger(l *slog.Logger) Option {
	return clientOnly("WithLogger", true, "", func(c *config) { c.logger = l })
}

// WithInsecureHTTP allows a plain http:// base URL to a host that is not
// loopback. The API key then crosses the network in clear text: use it only
// inside a trusted network.
func WithInsecureHTTP() Option {
	return clientOnly("WithInsecureHTTP", true, "", func(c *config) { c.insecureHTTP = true })
}

// WithMaxResponseBytes caps a successful response body (default 16 MiB). A
// larger body is an error matching ErrUnexpectedResponse.
func WithMaxResponseBytes(n int64) Option {
	return clientOnly("WithMaxResponseBytes", n > 0, "must be positive", func(c *config) { c.maxResponseBytes = n })
}

// WithMaxConnsPerHost bounds the connections the Client's default
// transport opens to the API host, in use and idle together (default
// DefaultMaxConnsPerHost). Callers beyond the bound wait for a connection
// instead of dialing (each dial is a TLS handshake). Up to n idle
// connections are kept, so a steady load does not churn them. With
// WithHTTPClient the caller's transport decides and n is not used.
func WithMaxConnsPerHost(n int) Option {
	return clientOnly("WithMaxConnsPerHost", n > 0, "must be positive", func(c *config) { c.maxConnsPerHost = n })
}

// WithMaxConcurrentWaitReads bounds how many status reads the Client's
// WaitForPayment and WaitForPayout calls make at the same time (default
// DefaultMaxConcurrentWaitReads); n must be positive. A wait whose read is
// due while n are in flight queues for its turn (first come, first served;
// ctx still ends it). This is what keeps a restart with thousands of open
// orders from stampeding the API: their first reads go out n at a time, at
// the pace the API answers, and the jittered intervals spread them from
// there. It also bounds the connections, goroutines and memory that
// thousands of waits need. Other calls are not limited by it.
func WithMaxConcurrentWaitReads(n int) Option {
	return clientOnly("WithMaxConcurrentWaitReads", n > 0, "must be positive", func(c *config) { c.waitReads = n })
}

// WithWakeupBus connects the Client to bus: a webhook.Handler built with this
// Client publishes a hint after each event it re-reads, and every Client on
// the same bus wakes its waits for that object, which then read it again
// through the API at once (a hint is never taken for a status). A Client
// ignores its own hints: its handler hands its own waits the object it
// read. The Client subscribes when its first wait starts (that wait waits
// for Subscribe; a failure is logged and retried by a later wait, after
// 5 s) and stays subscribed until Close. A handler's Publish is bounded to
// 2 s; its failure is logged and does not change the answer. Waits with
// NoWebhookWakeup ignore hints too.
func WithWakeupBus(bus WakeupBus) Option {
	return clientOnly("WithWakeupBus", bus != nil, "bus is nil", func(c *config) { c.bus = bus })
}

// WithAddressChecker makes CreatePayout check wallet addresses with c
// instead of the built-in checks: to check a network the SDK does not
// know, or to replace or remove (a nil check) a built-in one (see
// address.Checker.With). Only NewClient takes it. Validate still applies
// the built-ins: give the same Checker to CreatePayoutParams.ValidateWith
// wherever else payouts are checked.
func WithAddressChecker(c address.Checker) Option {
	return clientOnly("WithAddressChecker", true, "", func(cfg *config) { cfg.addresses = c })
}
