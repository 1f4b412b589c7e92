package cryptopay

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// RequestOption changes one call, never the Client. Pass it after a method's
// parameters:
//
//	p, err := client.GetPayment(ctx, id, cryptopay.WithRequestTimeout(5*time.Second))
//
// No RequestOption can make a create request (POST) be resent after it may
// have reached the server.
type RequestOption func(*callConfig) error

// callConfig is what the RequestOptions of one call set.
type callConfig struct {
	header  http.Header
	timeout time.Duration // per attempt; 0: the Client's
	retry   *RetryPolicy  // nil: the Client's
	resp    *Response     // WithResponseInto's target
}

// refusedHeaders are the headers WithRequestHeader cannot set: the SDK's
// own authentication and framing, the ones net/http acts on itself, and
// the idempotency keys that make net/http replay a POST by itself.
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

// WithRequestHeader sets header key to value on this call's requests,
// replacing the SDK's value for that name (for example User-Agent or
// Accept). It refuses, with a *ValidationError matching ErrInvalidParams
// and before anything is sent: x-api-key, Host, Content-Length,
// Idempotency-Key and X-Idempotency-Key (net/http replays a POST that
// carries either, which could send a payout twice), the hop-by-hop headers
// net/http manages, and a name or value that is not valid in HTTP.
func WithRequestHeader(key, value string) RequestOption {
	return func(c *callConfig) error {
		name := http.CanonicalHeaderKey(strings.TrimSpace(key))
		if why, ok := refusedHeaders[name]; ok {
			return &ValidationError{Field: "WithRequestHeader", Reason: name + " cannot be set per call: it " + why}
		}
		if !validHeaderName(name) {
			return &ValidationError{Field: "WithRequestHeader", Reason: "not a valid header name"}
		}
		if strings.ContainsFunc(value, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
			return &ValidationError{Field: "WithRequestHeader", Reason: "the value of " + name + " is not valid in a header (a line break or control character)"}
		}
		if c.header == nil {
			c.header = make(http.Header, 1)
		}
		c.header[name] = []string{value}
		return nil
	}
}

// WithRequestTimeout bounds each attempt of this call to d (d > 0),
// instead of the Client's WithTimeout. The ctx passed to the call still
// bounds the whole call. A create request whose attempt times out is not
// resent and matches ErrOutcomeUnknown.
func WithRequestTimeout(d time.Duration) RequestOption {
	return option(d > 0, "WithRequestTimeout", "must be positive", func(c *callConfig) { c.timeout = d })
}

// WithRequestRetryPolicy replaces the Client's RetryPolicy for this call
// (zero MinWait and MaxWait take the defaults, as in WithRetryPolicy). It
// changes how reads are retried; a create request is still resent only
// when nothing of it was sent, whatever the policy.
func WithRequestRetryPolicy(p RetryPolicy) RequestOption {
	return option(p.valid(), "WithRequestRetryPolicy", "values must not be negative", func(c *callConfig) { c.retry = &p })
}

// WithResponseInto makes the call fill *r with its last HTTP response's
// metadata and its attempts, on success and on error alike (StatusCode is
// 0 and Header nil when no response came; all is zero when ctx was done
// before the call). A call refused for an invalid parameter or option,
// before any request, leaves *r unchanged. The API key is replaced by
// [REDACTED] wherever a header echoes it.
func WithResponseInto(r *Response) RequestOption {
	return option(r != nil, "WithResponseInto", "response is nil", func(c *callConfig) { c.resp = r })
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
// status and headers, the request id the server gave, how many attempts
// were made and how long the call took. WithResponseInto fills one on
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
	// OnWebhookEvent runs once per request a WebhookHandler answers.
	OnWebhookEvent func(ctx context.Context, ev WebhookEventInfo)
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

// WebhookEventInfo describes one request a WebhookHandler answered, without
// its body, token or ids.
type WebhookEventInfo struct {
	// Kind is "payment", "payout", or "" if the body was not read.
	Kind string
	// StatusCode is the HTTP status the handler answered.
	StatusCode int
	// Result is one word: "delivered", "duplicate", "rejected",
	// "retry_later" or "failed".
	Result string
}

// WithObserver adds o to the Client's observers; each is called in the order
// given. A WebhookHandler whose WebhookConfig.Client is this Client uses them
// too, for OnWebhookEvent.
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observers = append(c.observers, o)
		return nil
	}
}
