// Package otelcryptopay traces and measures the calls of a cryptopay.Client
// with OpenTelemetry. It is a cryptopay.Observer: plug it in with
// cryptopay.WithObserver and every call gets a span, every attempt a child
// span, and the metrics below are recorded.
//
//	client, err := cryptopay.NewClient(baseURL, apiKey,
//		cryptopay.WithObserver(otelcryptopay.NewObserver()))
//
// Spans. A call is an internal span and each of its attempts a client span
// under it, both named by the route template ("GET /v1/payout/{id}/status"),
// never by the real path. Attributes: cryptopay.route, http.request.method,
// url.template; on attempts cryptopay.attempt, http.request.resend_count,
// http.response.status_code, cryptopay.retry and cryptopay.retry.reason
// (when the SDK gave one: why it retries, or why it does not); on
// calls cryptopay.attempts, http.response.status_code,
// cryptopay.outcome_unknown and, on failure, error.type.
//
// Metrics. cryptopay.client.call.duration (histogram, s), cryptopay.client.retries
// (counter), cryptopay.client.outcome_unknown (counter: create calls that may
// or may not have taken effect; each one needs reconciling) and
// cryptopay.webhook.events (counter, by cryptopay.webhook.result).
//
// What is never recorded: the API key, object ids, query strings, request
// and response bodies, and error messages (they may name the requested path,
// which holds an id); errors are summed up by error.type, a fixed word or an
// HTTP status code. On metrics a status code the server chose outside the
// common set is folded into its class (see StatusClassKey).
package otelcryptopay

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	cryptopay "github.com/cryptopay/cryptopay-go"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/cryptopay/cryptopay-go/otelcryptopay"

// Attribute keys this package defines; the others are OpenTelemetry's
// semantic conventions.
const (
	// RouteKey is the call's method and path template.
	RouteKey = attribute.Key("cryptopay.route")
	// AttemptKey numbers an attempt, from 1.
	AttemptKey = attribute.Key("cryptopay.attempt")
	// AttemptsKey counts a call's attempts.
	AttemptsKey = attribute.Key("cryptopay.attempts")
	// RetryKey says whether another attempt followed this one.
	RetryKey = attribute.Key("cryptopay.retry")
	// RetryReasonKey says why another attempt follows, or why not.
	RetryReasonKey = attribute.Key("cryptopay.retry.reason")
	// OutcomeUnknownKey is true when a create call may or may not have
	// taken effect (the error matches cryptopay.ErrOutcomeUnknown).
	OutcomeUnknownKey = attribute.Key("cryptopay.outcome_unknown")
	// OutcomeKey sums a call up on metrics: "success", "error" or
	// "outcome_unknown".
	OutcomeKey = attribute.Key("cryptopay.outcome")
	// WebhookKindKey is "payment", "payout" or "" on webhook events.
	WebhookKindKey = attribute.Key("cryptopay.webhook.kind")
	// WebhookResultKey is a webhook request's result: "delivered",
	// "duplicate", "rejected", "retry_later" or "failed".
	WebhookResultKey = attribute.Key("cryptopay.webhook.result")
	// StatusClassKey stands in for http.response.status_code on metrics
	// when the code is not one HTTP APIs commonly answer with: "1xx" to
	// "5xx", or "other" outside 100..599. The server chooses the code, so
	// recording any code as it is would let one server make hundreds of
	// series.
	StatusClassKey = attribute.Key("cryptopay.http.status_class")
)

// durationBuckets suit calls from a few milliseconds to a minute of retries.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Option configures NewObserver.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets where spans go (default: otel.GetTracerProvider()
// at the time NewObserver runs). A nil provider is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	}
}

// WithMeterProvider sets where metrics go (default: otel.GetMeterProvider()
// at the time NewObserver runs). A nil provider is ignored.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp != nil {
			c.mp = mp
		}
	}
}

// observer holds the tracer and the instruments of one NewObserver.
type observer struct {
	tracer         trace.Tracer
	duration       metric.Float64Histogram
	retries        metric.Int64Counter
	outcomeUnknown metric.Int64Counter
	webhooks       metric.Int64Counter
}

// NewObserver returns a cryptopay.Observer that records spans and metrics
// with the given providers. Pass it to cryptopay.WithObserver. An instrument
// the meter cannot create is reported to otel.Handle and left out; the
// observer never fails a call.
func NewObserver(opts ...Option) cryptopay.Observer {
	o := newObserver(opts)
	return cryptopay.Observer{
		OnCallStart:    o.callStart,
		OnAttemptStart: o.attemptStart,
		OnAttemptEnd:   o.attemptEnd,
		OnCallEnd:      o.callEnd,
	}
}

// NewWebhookObserver returns a func for webhook.Config.OnEvent that counts
// each request the webhook handler answers (cryptopay.webhook.events) and
// notes it on the request's span, if one is recording.
func NewWebhookObserver(opts ...Option) func(context.Context, webhook.EventInfo) {
	return newObserver(opts).webhookEvent
}

// newObserver makes the tracer and instruments with the given providers.
func newObserver(opts []Option) *observer {
	cfg := config{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	o := &observer{tracer: cfg.tp.Tracer(ScopeName,
		trace.WithInstrumentationVersion(cryptopay.Version), trace.WithSchemaURL(semconv.SchemaURL))}
	o.makeInstruments(cfg.mp.Meter(ScopeName,
		metric.WithInstrumentationVersion(cryptopay.Version), metric.WithSchemaURL(semconv.SchemaURL)))
	return o
}

func (o *observer) makeInstruments(m metric.Meter) {
	var err error
	var errs []error
	o.duration, err = m.Float64Histogram("cryptopay.client.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of cryptopay API calls, retries and waits included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	o.retries, err = m.Int64Counter("cryptopay.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts of cryptopay API calls that were followed by another attempt."))
	errs = append(errs, err)
	o.outcomeUnknown, err = m.Int64Counter("cryptopay.client.outcome_unknown", metric.WithUnit("{call}"),
		metric.WithDescription("Create calls whose outcome is unknown: each needs reconciling by orderId."))
	errs = append(errs, err)
	o.webhooks, err = m.Int64Counter("cryptopay.webhook.events", metric.WithUnit("{event}"),
		metric.WithDescription("Webhook requests answered by the cryptopay webhook.Handler, by result."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		otel.Handle(err)
	}
}

// ctxKey finds one observer's state in a context; it holds the observer so
// that two observers on one Client do not see each other's spans.
type ctxKey struct {
	o    *observer
	kind int
}

const (
	keyCall = iota
	keyAttempt
)

// callState is one call's span and its current attempt (attempts run one
// after another on the calling goroutine).
type callState struct {
	span    trace.Span
	start   time.Time
	attempt *attemptState
}

// attemptState is one attempt's span, behind a pointer so that it can be
// compared (span values may not be comparable).
type attemptState struct{ span trace.Span }

// routeAttrs are the attributes every span and metric of a call carries.
// They are built once per route and shared: callers append to a clipped
// slice, which copies.
func routeAttrs(call cryptopay.CallInfo) []attribute.KeyValue {
	if v, ok := routeCache.Load(call); ok {
		return v.([]attribute.KeyValue)
	}
	attrs := []attribute.KeyValue{RouteKey.String(call.Route), semconv.HTTPRequestMethodKey.String(call.Method)}
	if _, tmpl, ok := strings.Cut(call.Route, " "); ok {
		attrs = append(attrs, semconv.URLTemplateKey.String(tmpl))
	}
	attrs = slices.Clip(attrs)
	if routeCacheSize.Load() < maxCachedRoutes {
		routeCacheSize.Add(1)
		routeCache.Store(call, attrs)
	}
	return attrs
}

// routeCache maps a CallInfo to its attributes. The SDK has a handful of
// routes; the cap only guards against a caller inventing routes.
var (
	routeCache     sync.Map
	routeCacheSize atomic.Int32
)

const maxCachedRoutes = 64

func (o *observer) callStart(ctx context.Context, call cryptopay.CallInfo) context.Context {
	ctx, span := o.tracer.Start(ctx, call.Route, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(routeAttrs(call)...))
	return context.WithValue(ctx, ctxKey{o, keyCall}, &callState{span: span, start: time.Now()})
}

func (o *observer) attemptStart(ctx context.Context, call cryptopay.CallInfo, attempt int) context.Context {
	attrs := append(routeAttrs(call), AttemptKey.Int(attempt))
	if attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCountKey.Int(attempt-1))
	}
	// The attempt is a child of this observer's call span, even when
	// another observer put its own span in ctx since.
	parent := ctx
	cs, _ := ctx.Value(ctxKey{o, keyCall}).(*callState)
	if cs != nil {
		parent = trace.ContextWithSpan(ctx, cs.span)
	}
	_, span := o.tracer.Start(parent, call.Route, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	as := &attemptState{span: span}
	if cs != nil {
		cs.attempt = as
	}
	return context.WithValue(trace.ContextWithSpan(ctx, span), ctxKey{o, keyAttempt}, as)
}

// attemptOf finds the attempt that ctx belongs to: from the attempt's own
// context, or from the call's, which remembers its current attempt.
func (o *observer) attemptOf(ctx context.Context) *attemptState {
	if as, ok := ctx.Value(ctxKey{o, keyAttempt}).(*attemptState); ok {
		return as
	}
	if cs, ok := ctx.Value(ctxKey{o, keyCall}).(*callState); ok {
		return cs.attempt
	}
	return nil
}

func (o *observer) attemptEnd(ctx context.Context, call cryptopay.CallInfo, res cryptopay.AttemptResult) {
	if res.Retry {
		o.retries.Add(ctx, 1, metric.WithAttributes(append(routeAttrs(call), attemptErrorType(res))...))
	}
	as := o.attemptOf(ctx)
	if as == nil {
		return
	}
	span := as.span
	span.SetAttributes(RetryKey.Bool(res.Retry))
	if res.Reason != "" { // the SDK gives no reason for a final success
		span.SetAttributes(RetryReasonKey.String(res.Reason))
	}
	if res.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(res.StatusCode))
	}
	if res.Err != nil || res.StatusCode >= 400 {
		et := attemptErrorType(res)
		span.SetAttributes(et)
		span.SetStatus(codes.Error, et.Value.AsString())
	}
	span.End()
	if cs, ok := ctx.Value(ctxKey{o, keyCall}).(*callState); ok && cs.attempt == as {
		cs.attempt = nil
	}
}

func (o *observer) callEnd(ctx context.Context, call cryptopay.CallInfo, res cryptopay.CallResult) {
	cs, _ := ctx.Value(ctxKey{o, keyCall}).(*callState)
	outcome := "success"
	switch {
	case res.OutcomeUnknown:
		outcome = "outcome_unknown"
	case res.Err != nil:
		outcome = "error"
	}
	attrs := append(routeAttrs(call), OutcomeKey.String(outcome))
	if res.StatusCode != 0 {
		attrs = append(attrs, metricStatus(res.StatusCode))
	}
	if res.Err != nil {
		attrs = append(attrs, callErrorType(res))
	}
	d := res.Duration
	if d <= 0 && cs != nil {
		d = time.Since(cs.start)
	}
	o.duration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	if res.OutcomeUnknown {
		o.outcomeUnknown.Add(ctx, 1, metric.WithAttributes(routeAttrs(call)...))
	}
	if cs == nil {
		return
	}
	if cs.attempt != nil { // an attempt whose end was not reported
		cs.attempt.span.End()
	}
	cs.span.SetAttributes(AttemptsKey.Int(res.Attempts), OutcomeUnknownKey.Bool(res.OutcomeUnknown))
	if res.StatusCode != 0 {
		cs.span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(res.StatusCode))
	}
	if res.Err != nil {
		et := callErrorType(res)
		cs.span.SetAttributes(et)
		cs.span.SetStatus(codes.Error, et.Value.AsString())
	}
	cs.span.End()
}

func (o *observer) webhookEvent(ctx context.Context, ev webhook.EventInfo) {
	attrs := []attribute.KeyValue{WebhookKindKey.String(ev.Kind), WebhookResultKey.String(ev.Result)}
	if ev.StatusCode != 0 {
		attrs = append(attrs, metricStatus(ev.StatusCode))
	}
	o.webhooks.Add(ctx, 1, metric.WithAttributes(attrs...))
	// The merchant's server span (from otelhttp, say) notes the event.
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("cryptopay.webhook", trace.WithAttributes(attrs...))
	}
}

// callErrorType sums a failed call up in one id-free word: outcome_unknown,
// canceled, timeout, invalid_params, the HTTP status code, invalid_response
// or transport.
func callErrorType(res cryptopay.CallResult) attribute.KeyValue {
	switch {
	case res.OutcomeUnknown:
		return semconv.ErrorTypeKey.String("outcome_unknown")
	case errors.Is(res.Err, cryptopay.ErrInvalidParams):
		return semconv.ErrorTypeKey.String("invalid_params")
	}
	return errorType(res.Err, res.StatusCode)
}

// attemptErrorType is an attempt's error.type: its HTTP status code, or the
// kind of transport failure.
func attemptErrorType(res cryptopay.AttemptResult) attribute.KeyValue {
	return errorType(res.Err, res.StatusCode)
}

func errorType(err error, status int) attribute.KeyValue {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return semconv.ErrorTypeKey.String("canceled")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return semconv.ErrorTypeKey.String("timeout")
	case status >= 400 && knownStatus(status):
		return semconv.ErrorTypeKey.String(strconv.Itoa(status))
	case status >= 400:
		return semconv.ErrorTypeKey.String(statusClass(status))
	case err != nil && status != 0:
		return semconv.ErrorTypeKey.String("invalid_response") // a success status with a body the SDK refused
	case err != nil:
		return semconv.ErrorTypeKey.String("transport")
	}
	return semconv.ErrorTypeKey.String("_OTHER")
}

// knownStatus reports the status codes metrics and error.type record as
// they are: those HTTP APIs and their gateways commonly answer with. Any
// other code is folded into its class (statusClass), so a server answering
// every code from 200 to 999 makes a handful of series per route, not 800.
func knownStatus(code int) bool {
	switch code {
	case 100, 101, 200, 201, 202, 204, 301, 302, 303, 304, 307, 308,
		400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 429,
		500, 501, 502, 503, 504:
		return true
	}
	return false
}

// statusClass is "1xx" to "5xx" for a code in 100..599, else "other".
func statusClass(code int) string {
	if code >= 100 && code <= 599 {
		return strconv.Itoa(code/100) + "xx"
	}
	return "other"
}

// metricStatus is a metric point's status attribute: the code when it is
// known, else its class under StatusClassKey.
func metricStatus(code int) attribute.KeyValue {
	if knownStatus(code) {
		return semconv.HTTPResponseStatusCodeKey.Int(code)
	}
	return StatusClassKey.String(statusClass(code))
}
