package cryptopay

import (
	"context"
	"net/http"
	"time"
)

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
