package cryptopay

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
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

// Response describes the HTTP exchange behind a call: the last attempt's
// status, headers and raw body, the request id the server gave, how many
// attempts were made and how long the call took. WithResponseInto fills one on
// success and on error alike.
type Response struct {
	// StatusCode is the last attempt's HTTP status; 0 if no response came.
	StatusCode int
	// Header is the last response's header (nil if none).
	Header http.Header
	// RequestID is the server's request id (X-Request-Id and the like),
	// if it sent one.
	RequestID string
	// Attempts counts the attempts made, the first included.
	Attempts int
	// Duration is the whole call's time, retries and waits included.
	Duration time.Duration
	// Proto is the last response's protocol, for example "HTTP/2.0".
	Proto string
	// RawJSON is the last response's body as the server sent it (a 2xx
	// body up to WithMaxResponseBytes, an error body up to 8 KiB), with the
	// API key replaced by [REDACTED] wherever it appears; "" if no whole
	// body was read. It reaches the fields the SDK does not decode yet (the
	// list, balance and currencies operations are under development):
	//
	//	var resp cryptopay.Response
	//	p, err := client.GetPayout(ctx, id, cryptopay.WithResponseInto(&resp))
	//	var extra struct{ RiskScore int `json:"riskScore"` }
	//	_ = json.Unmarshal([]byte(resp.RawJSON), &extra)
	//
	// It is server text: never render it as HTML or pass it to a shell.
	RawJSON string
}

// Observer receives what happens on every call and attempt, for tracing,
// metrics and logs (otelcryptopay builds OpenTelemetry spans and metrics on
// it). Every field is optional. The functions run on the calling goroutine
// and must be fast and safe for concurrent use. An Observer never sees the
// API key, a request or response body, an object id or a query string: the
// route is a template such as "GET /v1/payout/{id}/status".
type Observer struct {
	// OnCallStart runs once per call, before the first attempt. The
	// context it returns is the parent of the call's attempts (a tracer
	// returns a context holding the call's span).
	OnCallStart func(ctx context.Context, call CallInfo) context.Context
	// OnAttemptStart runs before each attempt; its context carries the
	// attempt (an attempt span) and is the context of the HTTP request.
	OnAttemptStart func(ctx context.Context, call CallInfo, attempt int) context.Context
	// OnAttemptEnd runs after each attempt, with its result and the retry
	// decision taken on it.
	OnAttemptEnd func(ctx context.Context, call CallInfo, res AttemptResult)
	// OnCallEnd runs once per call, after the last attempt, with the
	// call's outcome.
	OnCallEnd func(ctx context.Context, call CallInfo, res CallResult)
}

// CallInfo names a call without its ids or query.
type CallInfo struct {
	// Method is the HTTP method ("GET" or "POST").
	Method string
	// Route is the method and path template, for example
	// "GET /v1/payment/{id}/status".
	Route string
}

// AttemptResult is one attempt's outcome and the retry decision taken on it.
type AttemptResult struct {
	// Attempt is 1 for the first attempt.
	Attempt int
	// StatusCode is the HTTP status; 0 if no response came.
	StatusCode int
	// Err is the attempt's transport error (or a body cut short), if any,
	// with the API key scrubbed; nil when a whole response was read.
	Err error
	// Retry says whether another attempt follows; Reason says why or why
	// not (for example "status 503 Service Unavailable" or "request may
	// have reached the server; not resent").
	Retry  bool
	Reason string
	// Duration is the attempt's time, up to its response headers or error.
	Duration time.Duration
}

// CallResult is a call's outcome.
type CallResult struct {
	// Attempts counts the attempts made.
	Attempts int
	// StatusCode is the last attempt's HTTP status; 0 if none came.
	StatusCode int
	// Err is the error the call returned, nil on success. errors.Is and
	// errors.As see that error; its text names only the route and the kind
	// of failure (for example "cryptopay: GET /v1/payment/{id}/status:
	// status 404"), never a path, id, order id or server message.
	Err error
	// OutcomeUnknown is true when Err matches ErrOutcomeUnknown: a create
	// request may or may not have taken effect.
	OutcomeUnknown bool
	// Duration is the whole call's time.
	Duration time.Duration
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
