package cryptopay

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"
)

// Version is the SDK's version, sent in the User-Agent header.
const Version = "0.1.0"

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

// Client calls the API. It is safe for concurrent use and holds a pool of
// connections: create one and share it. The API key is never printed: not
// by fmt, not in errors, not in log lines.
type Client struct {
	base string // scheme://host[/prefix], no trailing slash
	// base, parsed once: scheme, host, escaped path prefix ("" or
	// "/prefix"), and the Host of a request to it (http.NewRequest's).
	scheme, host, basePath, reqHost string
	cfg                             *config
	// rt sends every attempt; it is the Client's own *http.Transport or
	// the caller's (WithHTTPClient).
	rt      http.RoundTripper
	timeout time.Duration // per attempt; 0: none
	logger  *slog.Logger
	// waiters lets a WebhookHandler wake this Client's waits (wait.go).
	waiters *waitRegistry
	// shareHeaders: every request may use the prebuilt header maps as they
	// are, because nothing on the way changes them: the transport is the
	// Client's own *http.Transport. A caller's transport may add headers,
	// so with WithHTTPClient each request gets a copy.
	shareHeaders bool
}

// config holds what the options set. The API key lives only here, behind a
// pointer, so printing a Client (even with %#v on the dereferenced struct)
// never shows it.
type config struct {
	apiKey           string
	scrub            scrubber // finds apiKey in server text (redact.go)
	httpClient       *http.Client
	retry            RetryPolicy
	logger           *slog.Logger
	userAgent        string
	timeout          time.Duration
	timeoutSet       bool
	insecureHTTP     bool
	maxResponseBytes int64
	maxConnsPerHost  int
	headers          struct{ get, post http.Header }
	observers        []Observer
	bus              WakeupBus
	waitReads        int // WithMaxConcurrentWaitReads; 0: the default
}

// Option configures a Client.
type Option func(*config) error

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
	return option(hc != nil, "WithHTTPClient", "http client is nil", func(c *config) { c.httpClient = hc })
}

// WithRetryPolicy sets how reads are retried. See RetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option {
	return option(p.valid(), "RetryPolicy", "values must not be negative", func(c *config) { c.retry = p })
}

// WithLogger logs one debug line per attempt (method, path, status,
// duration, attempt, retry decision) and a warning for every unknown
// outcome. Bodies, query strings and headers are never logged. nil restores
// the default, which discards everything.
func WithLogger(l *slog.Logger) Option {
	return option(true, "", "", func(c *config) { c.logger = l })
}

// WithUserAgent puts ua (for example "shop/1.2") in front of the SDK's own
// User-Agent token.
func WithUserAgent(ua string) Option {
	return option(!strings.ContainsAny(ua, "\r\n"), "WithUserAgent", "contains a line break",
		func(c *config) { c.userAgent = strings.TrimSpace(ua) })
}

// WithTimeout bounds each attempt, like http.Client.Timeout; 0 means no
// per-attempt bound. The ctx passed to a call bounds the whole call, retries
// included. A create request whose attempt times out is not resent and
// matches ErrOutcomeUnknown. Default: DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return option(d >= 0, "WithTimeout", "must not be negative", func(c *config) { c.timeout, c.timeoutSet = d, true })
}

// WithInsecureHTTP allows a plain http:// base URL to a host that is not
// loopback. The API key then crosses the network in clear text: use it only
// inside a trusted network.
func WithInsecureHTTP() Option {
	return option(true, "", "", func(c *config) { c.insecureHTTP = true })
}

// WithMaxResponseBytes caps a successful response body (default 16 MiB). A
// larger body is an error matching ErrUnexpectedResponse.
func WithMaxResponseBytes(n int64) Option {
	return option(n > 0, "WithMaxResponseBytes", "must be positive", func(c *config) { c.maxResponseBytes = n })
}

// WithMaxConnsPerHost bounds the connections the Client's default
// transport opens to the API host, in use and idle together (default
// DefaultMaxConnsPerHost). Callers beyond the bound wait for a connection
// instead of dialing (each dial is a TLS handshake). Up to n idle
// connections are kept, so a steady load does not churn them. With
// WithHTTPClient the caller's transport decides and n is not used.
func WithMaxConnsPerHost(n int) Option {
	return option(n > 0, "WithMaxConnsPerHost", "must be positive", func(c *config) { c.maxConnsPerHost = n })
}

// option makes an Option (C is config) or a RequestOption (C is
// callConfig) that applies set when ok, and otherwise refuses field with
// reason.
func option[C any](ok bool, field, reason string, set func(*C)) func(*C) error {
	return func(c *C) error {
		if !ok {
			return &ValidationError{Field: field, Reason: reason}
		}
		set(c)
		return nil
	}
}

// NewClient returns a Client for the API at baseURL (for example
// "https://api.example.com"; a path prefix such as "/gateway" is kept, and
// every call adds its own "/v1/..." path, so a base URL ending in "/v1" is
// refused) that authenticates with apiKey. It refuses an empty key, an
// unparsable URL, and plain http:// to a host that is not loopback unless
// WithInsecureHTTP is given. It changes no global state.
func NewClient(baseURL, apiKey string, opts ...Option) (*Client, error) {
	cfg, err := newConfig(apiKey, opts)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, logger: cfg.logger, waiters: new(waitRegistry)}
	if err := c.setBase(baseURL); err != nil {
		return nil, err
	}
	c.setHeaders()
	c.setTransport()
	return c, nil
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

// setBase checks the base URL and parses it once for every request.
func (c *Client) setBase(baseURL string) error {
	base, err := checkBaseURL(baseURL, c.cfg.insecureHTTP)
	if err != nil {
		return err
	}
	bu, err := url.Parse(base)
	if err != nil {
		return &ValidationError{Field: "baseURL", Reason: "not a URL"}
	}
	probe, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		return &ValidationError{Field: "baseURL", Reason: "not a URL"}
	}
	// Host as http.NewRequest leaves it (an empty port dropped).
	c.base = base
	c.scheme, c.host, c.basePath, c.reqHost = bu.Scheme, probe.URL.Host, bu.EscapedPath(), probe.Host
	return nil
}

// setHeaders builds the header maps every GET and POST sends.
func (c *Client) setHeaders() {
	ua := "cryptopay-go/" + Version + " (" + runtime.Version() + "; " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if c.cfg.userAgent != "" {
		ua = c.cfg.userAgent + " " + ua
	}
	h := &c.cfg.headers
	h.get = http.Header{
		"X-Api-Key":  {c.cfg.apiKey},
		"Accept":     {"application/json"},
		"User-Agent": {ua},
	}
	h.post = h.get.Clone()
	h.post["Content-Type"] = []string{"application/json"}
}

// setTransport picks the transport and the per-attempt timeout.
func (c *Client) setTransport() {
	cfg := c.cfg
	if hc := cfg.httpClient; hc != nil {
		c.rt, c.timeout = hc.Transport, hc.Timeout
		if c.rt == nil {
			c.rt = http.DefaultTransport // used, never modified
		}
	} else {
		c.rt, c.timeout = newTransport(cfg.maxConnsPerHost), DefaultTimeout
		c.shareHeaders = true
	}
	if cfg.timeoutSet {
		c.timeout = cfg.timeout
	}
}

// newTransport is the default transport: pooled for concurrent callers
// (net/http's default keeps 2 idle connections per host, so many goroutines
// churn connections) and bounded (at most maxConns connections to the API,
// all of which may stay idle), TLS 1.2 at least, HTTP/2 when the server
// offers it, proxies from the environment.
func newTransport(maxConns int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxConnsPerHost:       maxConns,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// CloseIdleConnections closes the Client's idle connections.
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// checkBaseURL returns the base URL without a trailing slash, or why it
// cannot be used.
func checkBaseURL(raw string, insecure bool) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", &ValidationError{Field: "baseURL", Reason: "not a URL"}
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", &ValidationError{Field: "baseURL", Reason: "scheme must be https (or http to loopback)"}
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", &ValidationError{Field: "baseURL", Reason: "has no host"}
	}
	if u.User != nil {
		return "", &ValidationError{Field: "baseURL", Reason: "must not carry credentials"}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", &ValidationError{Field: "baseURL", Reason: "must not have a query or fragment"}
	}
	if u.Scheme == "http" && !insecure && !isLoopback(u.Hostname()) {
		return "", &ValidationError{Field: "baseURL", Reason: "plain http to a non-loopback host would expose the API key; use https or WithInsecureHTTP"}
	}
	prefix := strings.TrimRight(u.EscapedPath(), "/")
	if last := prefix[strings.LastIndexByte(prefix, '/')+1:]; strings.EqualFold(last, "v1") {
		return "", &ValidationError{Field: "baseURL", Reason: "ends in /" + last + ", but every call adds /v1/... itself (requests would go to " + prefix + "/v1/...); drop the trailing /" + last}
	}
	return u.Scheme + "://" + u.Host + prefix, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String describes the client without its API key.
func (c *Client) String() string {
	if c == nil {
		return "cryptopay.Client(nil)"
	}
	return "cryptopay.Client{base: " + c.base + ", apiKey: [REDACTED]}"
}

// GoString is String, for %#v.
func (c *Client) GoString() string { return c.String() }

// Format prints String for every verb, so no verb can reach the key.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue makes slog print the client without its key.
func (c *Client) LogValue() slog.Value { return slog.StringValue(c.String()) }
