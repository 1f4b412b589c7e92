package otelcryptopay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// tracetestSpan is an ended span as the in-memory exporter holds it.
type tracetestSpan = tracetest.SpanStub

// fixture is an Observer wired to an in-memory span exporter and a manual
// metric reader.
type fixture struct {
	obs    cryptopay.Observer
	hook   func(context.Context, webhook.EventInfo) // for webhook.Config.OnEvent
	tp     *sdktrace.TracerProvider
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func setup(t *testing.T) *fixture {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts := []otelcryptopay.Option{otelcryptopay.WithTracerProvider(tp), otelcryptopay.WithMeterProvider(mp)}
	return &fixture{
		obs:    otelcryptopay.NewObserver(opts...),
		hook:   otelcryptopay.NewWebhookObserver(opts...),
		tp:     tp,
		spans:  spans,
		reader: reader,
	}
}

// byName returns the ended spans named name, in the order they ended.
func (f *fixture) byName(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range f.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// metric collects the metrics and returns the one named name.
func (f *fixture) metric(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				assert.Equal(t, otelcryptopay.ScopeName, sm.Scope.Name)
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// counter sums the counter's points whose attributes include want.
func (f *fixture) counter(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := f.metric(t, name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	var n int64
	for _, p := range sum.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histogramCount counts the histogram's recordings whose attributes include want.
func (f *fixture) histogramCount(t *testing.T, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := f.metric(t, name)
	if !ok {
		return 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	assert.Equal(t, "s", m.Unit)
	var n uint64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Count
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// attr returns a span's attribute value, and whether it is set.
func attr(s tracetest.SpanStub, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// assertNoSecret fails if any span name, attribute, event, status text or
// metric attribute holds one of secrets.
func assertNoSecret(t *testing.T, f *fixture, secrets ...string) {
	t.Helper()
	var texts []string
	for _, s := range f.spans.GetSpans() {
		texts = append(texts, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			texts = append(texts, string(kv.Key)+"="+kv.Value.String())
		}
		for _, ev := range s.Events {
			texts = append(texts, ev.Name)
			for _, kv := range ev.Attributes {
				texts = append(texts, string(kv.Key)+"="+kv.Value.String())
			}
		}
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			texts = append(texts, m.Name)
			for _, set := range metricAttributeSets(m) {
				for _, kv := range set.ToSlice() {
					texts = append(texts, string(kv.Key)+"="+kv.Value.String())
				}
			}
		}
	}
	require.NotEmpty(t, texts)
	for _, secret := range secrets {
		require.NotEmpty(t, secret)
		for _, text := range texts {
			assert.NotContains(t, text, secret)
		}
	}
}

func metricAttributeSets(m metricdata.Metrics) []attribute.Set {
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	}
	return out
}

// routeOf is the route template's path part.
func routeOf(route string) string {
	_, p, _ := strings.Cut(route, " ")
	return p
}
