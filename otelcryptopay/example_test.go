package otelcryptopay_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// The usual setup: the program has installed its OpenTelemetry providers
// (otel.SetTracerProvider, otel.SetMeterProvider) and hands the observer to
// the Client.
func ExampleNewObserver() {
	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"),
		cryptopay.WithObserver(otelcryptopay.NewObserver()))
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}

// Explicit providers, and the webhook handler's events through the same
// Client.
func ExampleWithTracerProvider() {
	obs := otelcryptopay.NewObserver(
		otelcryptopay.WithTracerProvider(otel.GetTracerProvider()),
		otelcryptopay.WithMeterProvider(otel.GetMeterProvider()),
	)
	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"), cryptopay.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	// The handler reports each webhook request to its own OnEvent.
	handler, err := webhook.NewHandler(webhook.Config{
		Secret:  []byte(os.Getenv("CRYPTOPAY_WEBHOOK_SECRET")),
		Client:  client,
		OnEvent: otelcryptopay.NewWebhookObserver(),
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			return nil // fulfil the order
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = handler // mount it: http.Handle("/webhooks/cryptopay", handler)
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
