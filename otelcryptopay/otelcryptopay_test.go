package otelcryptopay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// call replays one call's events on obs, as the SDK's request loop reports
// them. With onCallCtx the attempt ends are reported with the call's
// context instead of the attempt's.
func call(obs cryptopay.Observer, info cryptopay.CallInfo, attempts []cryptopay.AttemptResult, res cryptopay.CallResult, onCallCtx bool) {
	ctx := obs.OnCallStart(context.Background(), info)
	for i, a := range attempts {
		a.Attempt = i + 1
		actx := obs.OnAttemptStart(ctx, info, i+1)
		if onCallCtx {
			actx = ctx
		}
		obs.OnAttemptEnd(actx, info, a)
	}
	res.Attempts = len(attempts)
	obs.OnCallEnd(ctx, info, res)
}

var (
	getPayout    = cryptopay.CallInfo{Method: "GET", Route: "GET /v1/payout/{id}/status"}
	createPayout = cryptopay.CallInfo{Method: "POST", Route: "POST /v1/payout"}
)

// errWithPath is an error whose text names the requested path, as the
// SDK's errors do; none of it may reach telemetry.
var errWithPath = errors.New(`get "http://127.0.0.1:1/v1/payout/po_secret_id_123/status": connection reset by peer`)

func TestObserverSpansAndMetrics(t *testing.T) {
	errUnknown := fmt.Errorf("cryptopay: POST /v1/payout: %w (orderId order-77)", cryptopay.ErrOutcomeUnknown)
	tests := []struct {
		name      string
		info      cryptopay.CallInfo
		attempts  []cryptopay.AttemptResult
		res       cryptopay.CallResult
		onCallCtx bool
		callErr   string // error.type on the call span; "" for success
		outcome   string
		retries   int64
		unknown   int64
	}{
		{"success", getPayout, []cryptopay.AttemptResult{{StatusCode: 200}},
			cryptopay.CallResult{StatusCode: 200, Duration: 3 * time.Millisecond}, false, "", "success", 0, 0},
		{"503 then 200", getPayout, []cryptopay.AttemptResult{
			{StatusCode: 503, Retry: true, Reason: "status 503 Service Unavailable"},
			{StatusCode: 200, Reason: "success"}},
			cryptopay.CallResult{StatusCode: 200, Duration: 30 * time.Millisecond}, false, "", "success", 1, 0},
		{"404", getPayout, []cryptopay.AttemptResult{{StatusCode: 404, Reason: "status 404 Not Found is final"}},
			cryptopay.CallResult{StatusCode: 404, Err: errWithPath}, false, "404", "error", 0, 0},
		{"transport errors then give up", getPayout, []cryptopay.AttemptResult{
			{Err: errWithPath, Retry: true, Reason: "connection reset; GET is safe to resend"},
			{Err: errWithPath, Reason: "retries exhausted"}},
			cryptopay.CallResult{Err: errWithPath}, false, "transport", "error", 1, 0},
		{"timeout", getPayout, []cryptopay.AttemptResult{{Err: context.DeadlineExceeded, Reason: "context ended"}},
			cryptopay.CallResult{Err: fmt.Errorf("cryptopay: GET /v1/payout/x/status: %w", context.DeadlineExceeded)}, false, "timeout", "error", 0, 0},
		{"outcome unknown", createPayout, []cryptopay.AttemptResult{{Err: errWithPath, Reason: "request may have reached the server; not resent"}},
			cryptopay.CallResult{Err: errUnknown, OutcomeUnknown: true}, false, "outcome_unknown", "outcome_unknown", 0, 1},
		{"attempt ends reported on the call's context", getPayout, []cryptopay.AttemptResult{
			{StatusCode: 429, Retry: true, Reason: "status 429 Too Many Requests"},
			{StatusCode: 200, Reason: "success"}},
			cryptopay.CallResult{StatusCode: 200}, true, "", "success", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			call(f.obs, tt.info, tt.attempts, tt.res, tt.onCallCtx)

			spans := f.byName(tt.info.Route)
			require.Len(t, spans, len(tt.attempts)+1, "one span per call and one per attempt, named by the route template")
			callSpan := spans[len(spans)-1] // ends last
			assert.Equal(t, trace.SpanKindInternal, callSpan.SpanKind)
			assert.False(t, callSpan.Parent.IsValid(), "the call span is a root here")
			assert.Contains(t, callSpan.Attributes, otelcryptopay.RouteKey.String(tt.info.Route))
			assert.Contains(t, callSpan.Attributes, semconv.HTTPRequestMethodKey.String(tt.info.Method))
			assert.Contains(t, callSpan.Attributes, semconv.URLTemplateKey.String(routeOf(tt.info.Route)))
			assert.Contains(t, callSpan.Attributes, otelcryptopay.AttemptsKey.Int(len(tt.attempts)))
			assert.Contains(t, callSpan.Attributes, otelcryptopay.OutcomeUnknownKey.Bool(tt.res.OutcomeUnknown))
			if tt.callErr == "" {
				assert.Equal(t, codes.Unset, callSpan.Status.Code)
				_, has := attr(callSpan, semconv.ErrorTypeKey)
				assert.False(t, has)
			} else {
				assert.Equal(t, codes.Error, callSpan.Status.Code)
				assert.Equal(t, tt.callErr, callSpan.Status.Description)
				assert.Contains(t, callSpan.Attributes, semconv.ErrorTypeKey.String(tt.callErr))
			}

			for i, a := range tt.attempts {
				s := spans[i]
				assert.Equal(t, trace.SpanKindClient, s.SpanKind)
				assert.Equal(t, callSpan.SpanContext.SpanID(), s.Parent.SpanID(), "attempt %d is a child of the call", i+1)
				assert.Equal(t, callSpan.SpanContext.TraceID(), s.SpanContext.TraceID())
				assert.Contains(t, s.Attributes, otelcryptopay.AttemptKey.Int(i+1))
				assert.Contains(t, s.Attributes, otelcryptopay.RetryKey.Bool(a.Retry))
				if a.Reason != "" {
					assert.Contains(t, s.Attributes, otelcryptopay.RetryReasonKey.String(a.Reason))
				} else {
					_, has := attr(s, otelcryptopay.RetryReasonKey)
					assert.False(t, has, "no empty reason")
				}
				assert.Contains(t, s.Attributes, otelcryptopay.RouteKey.String(tt.info.Route))
				if i > 0 {
					assert.Contains(t, s.Attributes, semconv.HTTPRequestResendCountKey.Int(i))
				} else {
					_, has := attr(s, semconv.HTTPRequestResendCountKey)
					assert.False(t, has, "the first attempt is not a resend")
				}
				if a.StatusCode != 0 {
					assert.Contains(t, s.Attributes, semconv.HTTPResponseStatusCodeKey.Int(a.StatusCode))
				}
				failed := a.Err != nil || a.StatusCode >= 400
				assert.Equal(t, failed, s.Status.Code == codes.Error, "attempt %d status", i+1)
			}

			route := otelcryptopay.RouteKey.String(tt.info.Route)
			assert.EqualValues(t, 1, f.histogramCount(t, "cryptopay.client.call.duration", route, otelcryptopay.OutcomeKey.String(tt.outcome)))
			assert.Equal(t, tt.retries, f.counter(t, "cryptopay.client.retries", route))
			assert.Equal(t, tt.unknown, f.counter(t, "cryptopay.client.outcome_unknown", route))
			assertNoSecret(t, f, "po_secret_id_123", "order-77")
		})
	}
}

// TestObserverNestsUnderTheCallersSpan: a call made inside the merchant's
// own span (an HTTP handler's, say) is its child.
func TestObserverNestsUnderTheCallersSpan(t *testing.T) {
	f := setup(t)
	ctx, parent := f.tp.Tracer("merchant").Start(context.Background(), "checkout")
	cctx := f.obs.OnCallStart(ctx, getPayout)
	actx := f.obs.OnAttemptStart(cctx, getPayout, 1)
	assert.True(t, trace.SpanFromContext(actx).SpanContext().IsValid(), "the attempt's context carries its span, for the HTTP transport")
	f.obs.OnAttemptEnd(actx, getPayout, cryptopay.AttemptResult{Attempt: 1, StatusCode: 200})
	f.obs.OnCallEnd(cctx, getPayout, cryptopay.CallResult{Attempts: 1, StatusCode: 200})
	parent.End()

	spans := f.byName(getPayout.Route)
	require.Len(t, spans, 2)
	assert.Equal(t, parent.SpanContext().SpanID(), spans[1].Parent.SpanID())
	assert.Equal(t, spans[1].SpanContext.SpanID(), spans[0].Parent.SpanID())
}

// TestTwoObservers: two observers on one Client keep their spans apart.
func TestTwoObservers(t *testing.T) {
	a, b := setup(t), setup(t)
	ctx := a.obs.OnCallStart(context.Background(), getPayout)
	ctx = b.obs.OnCallStart(ctx, getPayout)
	actx := a.obs.OnAttemptStart(ctx, getPayout, 1)
	actx = b.obs.OnAttemptStart(actx, getPayout, 1)
	res := cryptopay.AttemptResult{Attempt: 1, StatusCode: 200}
	a.obs.OnAttemptEnd(actx, getPayout, res)
	b.obs.OnAttemptEnd(actx, getPayout, res)
	a.obs.OnCallEnd(ctx, getPayout, cryptopay.CallResult{Attempts: 1, StatusCode: 200})
	b.obs.OnCallEnd(ctx, getPayout, cryptopay.CallResult{Attempts: 1, StatusCode: 200})
	for _, f := range []*fixture{a, b} {
		spans := f.byName(getPayout.Route)
		require.Len(t, spans, 2)
		assert.Equal(t, trace.SpanKindClient, spans[0].SpanKind)
		assert.Equal(t, trace.SpanKindInternal, spans[1].SpanKind)
		assert.Equal(t, spans[1].SpanContext.SpanID(), spans[0].Parent.SpanID())
	}
}

// TestAttemptNeverEnded: a call that ends with an attempt still open (the
// loop was cut short) ends that span too, so nothing leaks.
func TestAttemptNeverEnded(t *testing.T) {
	f := setup(t)
	ctx := f.obs.OnCallStart(context.Background(), createPayout)
	f.obs.OnAttemptStart(ctx, createPayout, 1)
	f.obs.OnCallEnd(ctx, createPayout, cryptopay.CallResult{Attempts: 1, Err: context.Canceled})
	spans := f.byName(createPayout.Route)
	require.Len(t, spans, 2)
	assert.Contains(t, spans[1].Attributes, semconv.ErrorTypeKey.String("canceled"))
}

func TestWebhookEvents(t *testing.T) {
	f := setup(t)
	ctx, span := f.tp.Tracer("merchant").Start(context.Background(), "POST /webhooks")
	events := []webhook.EventInfo{
		{Kind: "payment", StatusCode: 200, Result: "delivered"},
		{Kind: "payment", StatusCode: 200, Result: "duplicate"},
		{Kind: "payout", StatusCode: 200, Result: "delivered"},
		{Kind: "", StatusCode: 401, Result: "rejected"},
		{Kind: "payout", StatusCode: 503, Result: "retry_later"},
	}
	for _, ev := range events {
		f.hook(ctx, ev)
	}
	span.End()
	f.hook(context.Background(), webhook.EventInfo{Kind: "payment", StatusCode: 200, Result: "delivered"})

	result := otelcryptopay.WebhookResultKey
	assert.EqualValues(t, 6, f.counter(t, "cryptopay.webhook.events"))
	assert.EqualValues(t, 3, f.counter(t, "cryptopay.webhook.events", result.String("delivered")))
	assert.EqualValues(t, 2, f.counter(t, "cryptopay.webhook.events", result.String("delivered"), otelcryptopay.WebhookKindKey.String("payment")))
	assert.EqualValues(t, 1, f.counter(t, "cryptopay.webhook.events", result.String("rejected"), semconv.HTTPResponseStatusCodeKey.Int(401)))
	assert.EqualValues(t, 1, f.counter(t, "cryptopay.webhook.events", result.String("retry_later")))

	spans := f.byName("POST /webhooks")
	require.Len(t, spans, 1)
	require.Len(t, spans[0].Events, len(events), "the merchant's span notes each event")
	assert.Equal(t, "cryptopay.webhook", spans[0].Events[0].Name)
	assert.Contains(t, spans[0].Events[3].Attributes, attribute.String("cryptopay.webhook.result", "rejected"))
}

// TestNilProvidersAreIgnored: a nil provider keeps the global default
// instead of panicking later.
func TestNilProvidersAreIgnored(t *testing.T) {
	obs := otelcryptopay.NewObserver(otelcryptopay.WithTracerProvider(nil), otelcryptopay.WithMeterProvider(nil), nil)
	assert.NotPanics(t, func() {
		call(obs, getPayout, []cryptopay.AttemptResult{{StatusCode: 200}}, cryptopay.CallResult{StatusCode: 200}, false)
		otelcryptopay.NewWebhookObserver(otelcryptopay.WithTracerProvider(nil), nil)(context.Background(), webhook.EventInfo{Result: "failed"})
	})
}
