package otelcryptopay_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"
)

// BenchmarkObserverCall is the observer's own cost for one call of one
// attempt (the five callbacks), with the SDK's providers recording
// everything, and with no-op providers.
func BenchmarkObserverCall(b *testing.B) {
	attempts := []cryptopay.AttemptResult{{StatusCode: 200, Reason: "success"}}
	res := cryptopay.CallResult{StatusCode: 200}
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		obs := otelcryptopay.NewObserver(otelcryptopay.WithTracerProvider(tp), otelcryptopay.WithMeterProvider(mp))
		b.ReportAllocs()
		for b.Loop() {
			call(obs, getPayout, attempts, res, false)
		}
	})
	b.Run("noop", func(b *testing.B) {
		obs := otelcryptopay.NewObserver(otelcryptopay.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelcryptopay.WithMeterProvider(noop.NewMeterProvider()))
		b.ReportAllocs()
		for b.Loop() {
			call(obs, getPayout, attempts, res, false)
		}
	})
}
