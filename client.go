package cryptopay

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
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
	// waiters lets a webhook.Handler wake this Client's waits (wakeup.go).
	waiters *waitRegistry
	// shareHeaders: every request may use the prebuilt header maps as they
	// are, because nothing on the way changes them: the transport is the
	// Client's own *http.Transport. A caller's transport may add headers,
	// so with WithHTTPClient each request gets a copy.
	shareHeaders bool
}

// waitRegistry lets a webhook handler hand the object it re-read
// (Client.Notify) to the waits for that object on the same Client. Its
// zero value is ready. The registry's and the bus's state are declared
// here, beside the Client that holds them; what they do is in wakeup.go
// (and the wait-read slots in wait.go), so that client.go needs nothing of
// the files that use the Client.
type waitRegistry struct {
	mu sync.Mutex
	m  map[string][]*waiter

	readsOnce sync.Once
	reads     chan struct{} // a slot per wait read in flight (wait.go)

	bus busState // the Client's WakeupBus subscription
}

// waiter is one wait's mailbox: the latest object a handler re-read, or a
// hint to read it again, and a signal.
type waiter struct {
	ch     chan struct{} // capacity 1
	mu     sync.Mutex
	latest any
	hinted bool
}

// busState is a Client's link to its WakeupBus: the subscription, made when
// the first wait starts and ended by Close, and the Client's Source.
type busState struct {
	mu      sync.Mutex
	stop    func()        // the subscription's, nil when not subscribed
	pending chan struct{} // closed when a Subscribe in progress returns
	retryAt time.Time     // after a failed Subscribe, not before this
	closed  bool
	source  string
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

// setHeaders builds the header maps every GET and POST sends, WithHeader's
// included.
func (c *Client) setHeaders() {
	h := &c.cfg.headers
	h.get = http.Header{
		"X-Api-Key":  {c.cfg.apiKey},
		"Accept":     {"application/json"},
		"User-Agent": {sdkUserAgent},
	}
	for k, v := range c.cfg.header {
		h.get[k] = v
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
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", &ValidationError{Field: "baseURL", Reason: "is empty; give the API's URL, for example https://api.example.com"}
	}
	u, err := url.Parse(raw)
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

// Redact returns s with this Client's API key replaced by [REDACTED]
// wherever it appears, as every error, log line and Response of the Client
// already has it: for logging server text the Client did not handle itself
// (the webhook package's Handler logs through it).
func (c *Client) Redact(s string) string { return c.cfg.scrub.String(s) }

// scrubString removes the API key from s.
func (c *Client) scrubString(s string) string { return c.cfg.scrub.String(s) }

// scrubErr returns err, or, when its text holds the API key, an error with
// the key replaced that still matches what err matches.
func (c *Client) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	if clean := c.cfg.scrub.String(s); clean != s {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// scrubHeader returns h, or a copy with the API key replaced in every name
// and value that holds it.
func (c *Client) scrubHeader(h http.Header) http.Header {
	sc := c.cfg.scrub
	if sc.key == nil {
		return h
	}
	dirty := false
	for k, vs := range h {
		dirty = dirty || sc.String(k) != k
		for _, v := range vs {
			dirty = dirty || sc.String(v) != v
		}
	}
	if !dirty {
		return h
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		name := sc.String(k)
		for _, v := range vs {
			out[name] = append(out[name], sc.String(v))
		}
	}
	return out
}
