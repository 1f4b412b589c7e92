package otelcryptopay_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// printMetricNames prints the name of each metric reader holds.
func printMetricNames(reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			fmt.Println(m.Name)
		}
	}
}

// The usual setup: the program installs its OpenTelemetry providers once
// (otel.SetTracerProvider, otel.SetMeterProvider; here a meter provider
// with an in-memory reader, to print what was recorded) and hands the
// observer to the Client.
func ExampleNewObserver() {
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))

	srv := cryptopaytest.NewServer()
	defer srv.Close()
	// In production: cryptopay.NewClient(baseURL, apiKey, cryptopay.WithObserver(otelcryptopay.NewObserver())).
	client := srv.Client(cryptopay.WithObserver(otelcryptopay.NewObserver()))
	if _, err := client.GetBalances(context.Background()); err != nil {
		log.Fatal(err)
	}

	printMetricNames(reader)
	// Output: cryptopay.client.call.duration
}

// Explicit providers, and the webhook handler's events through its own
// OnEvent.
func ExampleWithTracerProvider() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs := otelcryptopay.NewObserver(
		otelcryptopay.WithTracerProvider(tp),
		otelcryptopay.WithMeterProvider(mp),
	)
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	client := srv.Client(cryptopay.WithObserver(obs)) // or cryptopay.NewClient(baseURL, apiKey, cryptopay.WithObserver(obs))

	// The handler reports each webhook request to its own OnEvent.
	secret := []byte("example-secret-do-not-use-32byte") // from CRYPTOPAY_WEBHOOK_SECRET
	handler, err := webhook.NewHandler(webhook.Config{
		Secret:  secret,
		Client:  client,
		OnEvent: otelcryptopay.NewWebhookObserver(otelcryptopay.WithTracerProvider(tp), otelcryptopay.WithMeterProvider(mp)),
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			return nil // fulfil the order
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.GetBalances(context.Background()); err != nil {
		log.Fatal(err)
	}
	// A forged event: refused, and counted.
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/cryptopay?token=forged",
		strings.NewReader(`{"paymentId":"6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e","orderId":"order-1","status":"paid"}`)))

	printMetricNames(reader)
	fmt.Println(rec.Code, len(spans.GetSpans()), "spans")
	// Output:
	// cryptopay.client.call.duration
	// cryptopay.webhook.events
	// 401 2 spans
}

// What a call that needed a retry looks like: the fake answers the first
// GET /v1/balance with 503, the SDK retries, and the exporter holds an
// attempt span for each try and the call span around them.
func Example_spans() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 503})
	client := srv.Client(cryptopay.WithObserver(otelcryptopay.NewObserver(otelcryptopay.WithTracerProvider(tp))))

	if _, err := client.GetBalances(context.Background()); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.GetSpans() {
		fmt.Printf("%-8s %s", s.SpanKind, s.Name)
		for _, kv := range s.Attributes {
			switch kv.Key {
			case otelcryptopay.AttemptKey, otelcryptopay.AttemptsKey, otelcryptopay.RetryKey, semconv.HTTPResponseStatusCodeKey:
				fmt.Printf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		fmt.Println()
	}
	// Output:
	// client   GET /v1/balance cryptopay.attempt=1 cryptopay.retry=true http.response.status_code=503
	// client   GET /v1/balance cryptopay.attempt=2 cryptopay.retry=false http.response.status_code=200
	// internal GET /v1/balance cryptopay.attempts=2 http.response.status_code=200
}

// The observer combines with your own: here a second Observer prints each
// retry decision, next to the spans and metrics otelcryptopay records.
func Example_withYourOwnObserver() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 503})

	logRetries := cryptopay.Observer{
		OnAttemptEnd: func(ctx context.Context, call cryptopay.CallInfo, res cryptopay.AttemptResult) {
			if res.Retry {
				fmt.Printf("retrying %s after attempt %d: %s\n", call.Route, res.Attempt, res.Reason)
			}
		},
	}
	client := srv.Client(
		cryptopay.WithObserver(otelcryptopay.NewObserver()),
		cryptopay.WithObserver(logRetries),
	)
	if _, err := client.GetBalances(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// retrying GET /v1/balance after attempt 1: status 503 Service Unavailable
}
