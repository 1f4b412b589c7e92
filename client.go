// Package cryptopay is the Go SDK for the crypto payment and payout API:
// payment links, payouts to wallets, statuses, balances, currencies and
// webhooks.
//
// Every amount is a decimal.Decimal and goes on the wire as an exact JSON
// number. Reads are retried on transient failures; a create request that may
// have reached the server is never resent (see ErrOutcomeUnknown). A Client is
// safe for concurrent use; make one and share it.
package cryptopay

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the SDK's version, sent in the User-Agent header.
const Version = "0.1.0"

// Defaults.
const (
	// DefaultTimeout bounds each attempt unless WithTimeout says otherwise.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes caps a successful response body.
	DefaultMaxResponseBytes = 16 << 20
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
	rc                              *retryablehttp.Client
	inner                           http.RoundTripper
	logger                          *slog.Logger
	// waiters lets a WebhookHandler wake this Client's waits (wait.go).
	waiters *waitRegistry
	// shareHeaders: every request may use the prebuilt header maps as they
	// are, because nothing on the way changes them: the transport is the
	// Client's own *http.Transport and its http.Client has no cookie jar
	// (http.Client adds cookies to req.Header). With a caller's
	// http.Client, each request gets a copy.
	shareHeaders bool
}

// config holds what the options set. The API key lives only here, behind a
// pointer, so printing a Client (even with %#v on the dereferenced struct)
// never shows it.
type config struct {
	apiKey           string
	httpClient       *http.Client
	retry            RetryPolicy
	logger           *slog.Logger
	userAgent        string
	timeout          time.Duration
	timeoutSet       bool
	insecureHTTP     bool
	maxResponseBytes int64
	headers          struct{ get, post http.Header }
	observers        []Observer
	bus              WakeupBus
	waitReads        int // WithMaxConcurrentWaitReads; 0: the default
}

// Option configures a Client.
type Option func(*config) error

// WithHTTPClient makes the Client send through hc's transport. hc is copied,
// never changed; the copy refuses redirects (so x-api-key cannot follow one
// to another host) and uses WithTimeout's per-attempt timeout if given,
// otherwise hc.Timeout. The TLS settings are hc's own.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return &ValidationError{Field: "WithHTTPClient", Reason: "http client is nil"}
		}
		c.httpClient = hc
		return nil
	}
}

// WithRetryPolicy sets how reads are retried. See RetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) error {
		if p.MaxRetries < 0 || p.MinWait < 0 || p.MaxWait < 0 {
			return &ValidationError{Field: "RetryPolicy", Reason: "values must not be negative"}
		}
		c.retry = p
		return nil
	}
}

// WithLogger logs one debug line per attempt (method, path, status,
// duration, attempt, retry decision) and a warning for every unknown
// outcome. Bodies, query strings and headers are never logged. nil restores
// the default, which discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithUserAgent puts ua (for example "shop/1.2") in front of the SDK's own
// User-Agent token.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		if strings.ContainsAny(ua, "\r\n") {
			return &ValidationError{Field: "WithUserAgent", Reason: "contains a line break"}
		}
		c.userAgent = strings.TrimSpace(ua)
		return nil
	}
}

// WithTimeout bounds each attempt, like http.Client.Timeout; 0 means no
// per-attempt bound. The ctx passed to a call bounds the whole call, retries
// included. A create request whose attempt times out is not resent and
// matches ErrOutcomeUnknown. Default: DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return &ValidationError{Field: "WithTimeout", Reason: "must not be negative"}
		}
		c.timeout, c.timeoutSet = d, true
		return nil
	}
}

// WithInsecureHTTP allows a plain http:// base URL to a host that is not
// loopback. The API key then crosses the network in clear text: use it only
// inside a trusted network.
func WithInsecureHTTP() Option {
	return func(c *config) error {
		c.insecureHTTP = true
		return nil
	}
}

// WithMaxResponseBytes caps a successful response body (default 16 MiB). A
// larger body is an error matching ErrUnexpectedResponse.
func WithMaxResponseBytes(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return &ValidationError{Field: "WithMaxResponseBytes", Reason: "must be positive"}
		}
		c.maxResponseBytes = n
		return nil
	}
}

// NewClient returns a Client for the API at baseURL (for example
// "https://api.example.com"; a path prefix is kept) that authenticates with
// apiKey. It refuses an empty key, an unparsable URL, and plain http:// to a
// host that is not loopback unless WithInsecureHTTP is given. It changes no
// global state.
func NewClient(baseURL, apiKey string, opts ...Option) (*Client, error) {
	cfg := &config{
		apiKey:           apiKey,
		retry:            DefaultRetryPolicy(),
		maxResponseBytes: DefaultMaxResponseBytes,
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
	base, err := checkBaseURL(baseURL, cfg.insecureHTTP)
	if err != nil {
		return nil, err
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	cfg.retry = cfg.retry.withDefaults()

	ua := "cryptopay-go/" + Version + " (" + runtime.Version() + "; " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if cfg.userAgent != "" {
		ua = cfg.userAgent + " " + ua
	}
	cfg.headers.get = http.Header{
		"X-Api-Key":  {apiKey},
		"Accept":     {"application/json"},
		"User-Agent": {ua},
	}
	cfg.headers.post = cfg.headers.get.Clone()
	cfg.headers.post["Content-Type"] = []string{"application/json"}

	var hc http.Client
	var inner http.RoundTripper
	if cfg.httpClient != nil {
		hc = *cfg.httpClient
		inner = hc.Transport
		if inner == nil {
			inner = http.DefaultTransport // used, never modified
		}
		if cfg.timeoutSet {
			hc.Timeout = cfg.timeout
		}
	} else {
		inner = newTransport()
		hc.Timeout = DefaultTimeout
		if cfg.timeoutSet {
			hc.Timeout = cfg.timeout
		}
	}
	hc.Transport = keepPool{inner}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	c := &Client{base: base, cfg: cfg, inner: inner, logger: cfg.logger}
	bu, err := url.Parse(base)
	if err != nil {
		return nil, &ValidationError{Field: "baseURL", Reason: "not a URL"}
	}
	probe, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		return nil, &ValidationError{Field: "baseURL", Reason: "not a URL"}
	}
	// Host as http.NewRequest leaves it (an empty port dropped).
	c.scheme, c.host, c.basePath, c.reqHost = bu.Scheme, probe.URL.Host, bu.EscapedPath(), probe.Host
	c.waiters = new(waitRegistry)
	c.shareHeaders = cfg.httpClient == nil
	c.rc = &retryablehttp.Client{
		HTTPClient:     &hc,
		Logger:         nil, // retryablehttp's own logger prints URLs; we log through slog
		RetryWaitMin:   cfg.retry.MinWait,
		RetryWaitMax:   cfg.retry.MaxWait,
		RetryMax:       cfg.retry.MaxRetries,
		CheckRetry:     c.checkRetry,
		Backoff:        c.backoff,
		ErrorHandler:   passError,
		RequestLogHook: startAttempt,
	}
	return c, nil
}

// newTransport is the default transport: pooled for concurrent callers
// (net/http's default keeps 2 idle connections per host, so many goroutines
// churn connections), TLS 1.2 at least, proxies from the environment.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// keepPool hides CloseIdleConnections from retryablehttp, which calls it
// after every failed request and would otherwise empty the pool on each
// error.
type keepPool struct{ rt http.RoundTripper }

func (k keepPool) RoundTrip(r *http.Request) (*http.Response, error) { return k.rt.RoundTrip(r) }

// CloseIdleConnections closes the Client's idle connections.
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.inner.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

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
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
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

// RetryPolicy says how reads (GET) are retried: on connection errors, 429,
// 500, 502, 503 and 504, with capped exponential backoff and jitter, waiting
// at least as long as a Retry-After header asks (a Retry-After above MaxWait
// ends the retries and returns the 429/503). Create requests (POST) are
// retried only when the connection was refused before anything was sent.
type RetryPolicy struct {
	// MaxRetries is how many times a request is retried after the first
	// attempt; 0 disables retries.
	MaxRetries int
	// MinWait is the first backoff (0: 500 ms); each retry doubles it.
	MinWait time.Duration
	// MaxWait caps a backoff and an honoured Retry-After (0: 10 s).
	MaxWait time.Duration
}

// DefaultRetryPolicy returns the default: 3 retries, waits from 500 ms to 10 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 3, MinWait: 500 * time.Millisecond, MaxWait: 10 * time.Second}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MinWait == 0 {
		p.MinWait = d.MinWait
	}
	if p.MaxWait == 0 {
		p.MaxWait = d.MaxWait
	}
	if p.MaxWait < p.MinWait {
		p.MaxWait = p.MinWait
	}
	return p
}

// request is one API operation.
type request struct {
	method, path string
	route        string // "GET /v1/payment/{id}/status": no id, no query
	body         []byte
	orderID      string // carried into OutcomeUnknownError
	opts         []RequestOption
}

// callState follows one call through retryablehttp's hooks, which see only
// the request's context.
type callState struct {
	req      request
	attempt  int
	start    time.Time
	traced   atomic.Bool // POST: the transport reported connection events
	wrote    atomic.Bool // POST: request headers were written to a connection
	handled  bool        // the response handler ran for this attempt
	buf      *bytes.Buffer
	read     bool // buf holds the final response body
	tooLarge bool
	lastFail string // what the last retried attempt saw, for a ctx error
}

// notSent reports positive evidence that a POST never reached the server:
// the transport reported its connection events and never wrote the headers.
// A transport that reports nothing (a custom RoundTripper) proves nothing.
func (st *callState) notSent() bool { return st.traced.Load() && !st.wrote.Load() }

type stateKey struct{}

func stateOf(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do is the one request path: it sends r, retries per policy, and decodes a
// 2xx body into out (if not nil) or turns anything else into an error.
func (c *Client) do(ctx context.Context, r request, out any) error {
	if ctx == nil {
		return &ValidationError{Field: "ctx", Reason: "is nil"}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st := &callState{req: r}
	ctx = context.WithValue(ctx, stateKey{}, st)
	idempotent := r.method == http.MethodGet
	if !idempotent {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GetConn:      func(string) { st.traced.Store(true) },
			GotConn:      func(httptrace.GotConnInfo) { st.traced.Store(true) },
			WroteHeaders: func() { st.wrote.Store(true) },
		})
	}
	req, err := c.newRequest(ctx, &r)
	if err != nil {
		return &ValidationError{Field: "request", Reason: "cannot build request"}
	}
	h := c.cfg.headers.get
	if r.body != nil {
		h = c.cfg.headers.post
	}
	if !c.shareHeaders {
		h = h.Clone()
	}
	req.Header = h
	// Read the final body inside retryablehttp so that a body cut short is a
	// transport error, which a GET retries, rather than a decode error.
	req.SetResponseHandler(func(resp *http.Response) error {
		st.handled = true
		return c.readBody(st, resp)
	})

	resp, err := c.rc.Do(req)
	defer func() {
		if st.buf != nil {
			if st.buf.Cap() <= 1<<20 {
				st.buf.Reset()
				bufPool.Put(st.buf)
			}
			st.buf = nil
		}
	}()
	if err != nil {
		if resp != nil {
			drainClose(resp.Body)
		}
		return c.transportError(ctx, st, err)
	}
	if !st.read {
		if rerr := c.readBody(st, resp); rerr != nil {
			return c.transportError(ctx, st, rerr)
		}
	}
	return c.decode(ctx, st, resp, out)
}

// newRequest builds the request for r from the base URL parsed once in
// NewClient, instead of formatting and parsing c.base+r.path on every call.
// The URL is the one url.Parse would give: the same scheme, host, query and
// escaped path, so the same bytes on the wire.
func (c *Client) newRequest(ctx context.Context, r *request) (*retryablehttp.Request, error) {
	p, q, _ := strings.Cut(r.path, "?")
	if c.basePath != "" {
		p = c.basePath + p
	}
	u := &url.URL{Scheme: c.scheme, Host: c.host, Path: p, RawQuery: q}
	if strings.IndexByte(p, '%') >= 0 {
		// p is escaped (url.PathEscape); Path is its unescaped form and
		// RawPath keeps p, so EscapedPath (what is sent) is p itself.
		path, err := url.PathUnescape(p)
		if err != nil {
			return nil, err
		}
		u.Path, u.RawPath = path, p
	}
	hreq, err := http.NewRequestWithContext(ctx, r.method, "", nil)
	if err != nil {
		return nil, err
	}
	hreq.URL, hreq.Host = u, c.reqHost
	req, err := retryablehttp.FromRequest(hreq)
	if err != nil {
		return nil, err
	}
	var body any // untyped nil for no body, as retryablehttp.NewRequest is given
	if r.body != nil {
		body = r.body
	}
	if err := req.SetBody(body); err != nil {
		return nil, err
	}
	return req, nil
}

type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading response body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

func (c *Client) readBody(st *callState, resp *http.Response) error {
	defer resp.Body.Close()
	limit := c.cfg.maxResponseBytes
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		limit = maxErrorBody
	}
	if st.buf == nil {
		st.buf = bufPool.Get().(*bytes.Buffer)
	}
	st.buf.Reset()
	if n := resp.ContentLength; n > 0 && n <= limit {
		st.buf.Grow(int(n))
	}
	_, err := st.buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return &bodyReadError{err}
	}
	st.tooLarge = int64(st.buf.Len()) > limit
	if st.tooLarge {
		// Drain a little more so a slightly oversized body leaves the
		// connection reusable; a huge one is cut off by Close.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if limit == maxErrorBody {
			st.buf.Truncate(int(limit)) // an error body is kept capped, not parsed whole
			st.tooLarge = false
		}
	}
	st.read = true
	return nil
}

func drainClose(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 64<<10))
	_ = b.Close()
}

// decode turns the final response into the result or an error.
func (c *Client) decode(ctx context.Context, st *callState, resp *http.Response, out any) error {
	r := &st.req
	path := pathOnly(r.path)
	body := st.buf.Bytes()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := newAPIError(r.method, path, resp.StatusCode, resp.Header, c.scrub(bytes.Clone(body)))
		apiErr.Message = c.scrubString(apiErr.Message)
		apiErr.Code = c.scrubString(apiErr.Code)
		if r.method != http.MethodGet && resp.StatusCode >= 500 {
			return c.outcomeUnknown(ctx, r, apiErr)
		}
		return apiErr
	}
	var rerr *ResponseError
	switch {
	case st.tooLarge:
		rerr = &ResponseError{Reason: fmt.Sprintf("body larger than %d bytes", c.cfg.maxResponseBytes)}
	case out == nil:
		return nil
	case len(bytes.TrimSpace(body)) == 0:
		rerr = &ResponseError{Reason: "empty body"}
	default:
		if err := json.Unmarshal(body, out); err != nil {
			rerr = &ResponseError{Reason: "not the documented JSON shape", Err: err}
		} else if ch, ok := out.(interface{ check() string }); ok {
			if why := ch.check(); why != "" {
				rerr = &ResponseError{Reason: why}
			}
		}
	}
	if rerr == nil {
		return nil
	}
	rerr.StatusCode, rerr.Method, rerr.Path = resp.StatusCode, r.method, path
	if r.method != http.MethodGet {
		// The server said yes; we only failed to read what it created.
		return c.outcomeUnknown(ctx, r, rerr)
	}
	return rerr
}

// transportError classifies an error from sending or reading.
func (c *Client) transportError(ctx context.Context, st *callState, err error) error {
	r := &st.req
	err = c.scrubErr(err)
	if r.method != http.MethodGet && !st.notSent() && !isDialError(err) {
		return c.outcomeUnknown(ctx, r, err)
	}
	if ctx.Err() != nil && st.lastFail != "" {
		return fmt.Errorf("cryptopay: %s %s: %w (after %d attempt(s), last: %s)", r.method, pathOnly(r.path), ctx.Err(), st.attempt, st.lastFail)
	}
	return fmt.Errorf("cryptopay: %s %s: %w", r.method, pathOnly(r.path), err)
}

func (c *Client) outcomeUnknown(ctx context.Context, r *request, cause error) error {
	e := &OutcomeUnknownError{Method: r.method, Path: pathOnly(r.path), OrderID: r.orderID, Err: cause}
	c.logger.LogAttrs(ctx, slog.LevelWarn, "cryptopay: outcome unknown; reconcile by orderId",
		slog.String("method", r.method), slog.String("path", e.Path), slog.String("orderId", r.orderID),
		slog.String("cause", cause.Error()))
	return e
}

// scrub removes the API key from text the server sent back (a server or
// proxy that echoes request headers must not put the key into an error).
func (c *Client) scrub(b []byte) []byte {
	if len(c.cfg.apiKey) < 4 || !bytes.Contains(b, []byte(c.cfg.apiKey)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(c.cfg.apiKey), []byte("[REDACTED]"))
}

func (c *Client) scrubString(s string) string {
	if len(c.cfg.apiKey) < 4 || !strings.Contains(s, c.cfg.apiKey) {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.apiKey, "[REDACTED]")
}

func (c *Client) scrubErr(err error) error {
	if s := err.Error(); len(c.cfg.apiKey) >= 4 && strings.Contains(s, c.cfg.apiKey) {
		return &redactedError{msg: c.scrubString(s), err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Is(target error) bool {
	return errors.Is(e.err, target)
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

// startAttempt is retryablehttp's request hook: it numbers the attempt.
func startAttempt(_ retryablehttp.Logger, req *http.Request, i int) {
	if st := stateOf(req.Context()); st != nil {
		st.attempt = i + 1
		st.start = time.Now()
		st.handled = false
	}
}

// checkRetry is retryablehttp's CheckRetry: one decision per attempt,
// logged with its reason.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	st := stateOf(ctx)
	if st == nil {
		return false, nil
	}
	retry, reason := c.decide(ctx, st, resp, err)
	if retry {
		if err != nil {
			st.lastFail = err.Error()
		} else {
			st.lastFail = resp.Status
			// retryablehttp drains only 4 KiB before retrying; a larger
			// error page would cost the connection.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		}
	}
	// Without an error and without a retry, the response handler runs and
	// this is called again: log once, on that second call.
	if err != nil || retry || st.handled {
		if c.logger.Enabled(ctx, slog.LevelDebug) {
			c.logAttempt(ctx, st, resp, err, retry, reason)
		}
	}
	return retry, nil
}

// decide says whether an attempt is retried, and why.
func (c *Client) decide(ctx context.Context, st *callState, resp *http.Response, err error) (bool, string) {
	if ctx.Err() != nil {
		return false, "context done"
	}
	idempotent := st.req.method == http.MethodGet
	var retry bool
	var reason string
	switch {
	case err != nil && isPermanentTransportError(err):
		return false, "permanent transport error"
	case err != nil && isDialError(err):
		retry, reason = true, "connection failed before sending"
	case err != nil && !idempotent && st.notSent():
		retry, reason = true, "request not sent"
	case err != nil && !idempotent:
		return false, "request may have reached the server; not resent"
	case err != nil:
		retry, reason = true, "transport error"
	case resp == nil:
		return false, "no response"
	case !retryableStatus(resp.StatusCode):
		return false, ""
	case !idempotent:
		return false, "create request not resent after the server answered"
	default:
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && ra > c.cfg.retry.MaxWait {
			return false, "Retry-After beyond the maximum wait"
		}
		retry, reason = true, "status "+resp.Status
	}
	if st.attempt > c.cfg.retry.MaxRetries {
		return false, fmt.Sprintf("giving up after %d attempt(s): %s", st.attempt, reason)
	}
	return retry, reason
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// isDialError reports an error that happened before a connection existed:
// nothing was sent, so any request may be retried.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// isPermanentTransportError reports errors a retry cannot fix.
func isPermanentTransportError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	return errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) ||
		errors.As(err, &invalid) || errors.As(err, &recordErr)
}

// backoff is retryablehttp's Backoff: exponential from min, capped at max,
// with jitter (half fixed, half random), and at least the Retry-After the
// server asked for (decide already refused one above max).
func (c *Client) backoff(minWait, maxWait time.Duration, n int, resp *http.Response) time.Duration {
	wait := maxWait
	if n < 30 {
		if w := minWait << n; w > 0 && w < maxWait {
			wait = w
		}
	}
	wait = wait/2 + rand.N(wait/2+1)
	if resp != nil {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && ra > wait {
			wait = min(ra, maxWait)
		}
	}
	return wait
}

func passError(resp *http.Response, err error, _ int) (*http.Response, error) {
	if err == nil && resp != nil {
		return resp, nil
	}
	if resp != nil {
		drainClose(resp.Body)
	}
	if err == nil {
		err = errors.New("request failed")
	}
	return nil, err
}

func (c *Client) logAttempt(ctx context.Context, st *callState, resp *http.Response, err error, retry bool, reason string) {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("method", st.req.method),
		slog.String("path", pathOnly(st.req.path)),
		slog.Int("attempt", st.attempt),
		slog.Duration("duration", time.Since(st.start)),
	)
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
		if id := resp.Header.Get("X-Request-Id"); id != "" {
			attrs = append(attrs, slog.String("requestId", truncate(id, 128)))
		}
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", c.scrubString(err.Error())))
	}
	attrs = append(attrs, slog.Bool("retry", retry))
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	c.logger.LogAttrs(ctx, slog.LevelDebug, "cryptopay request", attrs...)
}
