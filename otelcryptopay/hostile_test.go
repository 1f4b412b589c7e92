package otelcryptopay_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"
)

// heldOutKey has a shape no code special-cases: mixed case, '/' and '+'.
const heldOutKey = "Kx9/pQ-Zr7+Lm2Wd/Yt4Hn8"

// TestHostileServerKeyNotInTelemetry: a server that puts the key (and a
// wallet and a customer IP) in its reason phrase and headers, answering 503
// to a read (retried) and to a create, gets no piece of them into any span,
// span event, status text or metric.
func TestHostileServerKeyNotInTelemetry(t *testing.T) {
	f := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		k := r.Header.Get("X-Api-Key")
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 503 key %s wallet TWalletHostile customer 198.51.100.77\r\n", strings.ToUpper(k))
		fmt.Fprintf(buf, "X-Request-Id: %s%s\r\nX-%s: 1\r\n", strings.Repeat("r", 116), k, strings.ReplaceAll(k, "/", "%2F"))
		fmt.Fprintf(buf, "Content-Length: 2\r\nConnection: close\r\n\r\n{}")
		_ = buf.Flush()
	}))
	t.Cleanup(srv.Close)
	c, err := cryptopay.NewClient(srv.URL, heldOutKey, cryptopay.WithObserver(f.obs),
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 2, MinWait: time.Millisecond, MaxWait: 2 * time.Millisecond}))
	require.NoError(t, err)

	_, err = c.GetBalances(context.Background())
	require.ErrorIs(t, err, cryptopay.ErrServer)
	_, err = c.CreatePayout(context.Background(), payoutParams("order-hostile"))
	require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)

	reasons := 0
	for _, s := range f.spans.GetSpans() {
		if v, ok := attr(s, otelcryptopay.RetryReasonKey); ok {
			reasons++
			assert.NotContains(t, v.AsString(), "wallet", "the reason names the status, not the server's phrase")
		}
	}
	assert.Positive(t, reasons)
	secrets := []string{"TWalletHostile", "198.51.100.77"}
	for _, k := range []string{heldOutKey, strings.ToUpper(heldOutKey)} {
		for i := 0; i+6 <= len(k); i++ {
			secrets = append(secrets, k[i:i+6])
		}
	}
	assertNoSecret(t, f, secrets...)
}

// TestStatusCodeSeriesBounded: one server answering every status code from
// 200 to 999 makes a small, fixed number of call.duration series for a
// route (codes outside the common set are folded into their class), and
// the same for error.type on retries.
func TestStatusCodeSeriesBounded(t *testing.T) {
	f := setup(t)
	for code := 200; code <= 999; code++ {
		res := cryptopay.CallResult{StatusCode: code}
		attempt := cryptopay.AttemptResult{StatusCode: code, Retry: code >= 400}
		if code >= 300 {
			res.Err = fmt.Errorf("status %d", code)
			attempt.Err = res.Err
		}
		call(f.obs, getPayout, []cryptopay.AttemptResult{attempt}, res, false)
	}
	m, ok := f.metric(t, "cryptopay.client.call.duration")
	require.True(t, ok)
	series := len(metricAttributeSets(m))
	assert.LessOrEqual(t, series, 40, "801 codes, at most 40 series")

	retries, ok := f.metric(t, "cryptopay.client.retries")
	require.True(t, ok)
	assert.LessOrEqual(t, len(metricAttributeSets(retries)), 30)

	assert.Equal(t, uint64(95), f.histogramCount(t, "cryptopay.client.call.duration", otelcryptopay.StatusClassKey.String("5xx")),
		"500..599 but 500..504 share one series")
	assert.Equal(t, uint64(400), f.histogramCount(t, "cryptopay.client.call.duration", otelcryptopay.StatusClassKey.String("other")),
		"600..999 are one series")
}
