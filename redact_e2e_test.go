package cryptopay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end tests of redact.go: the API key reaches the server only in
// its header, and no log line or error, whatever the server sends back.

// TestSecurityKeyOnlyInItsHeader records every request of every endpoint
// at a loopback server: the key travels only as x-api-key, never in the
// URL, the body or another header, and no request carries a header that
// makes net/http replay it on its own (Idempotency-Key).
func TestSecurityKeyOnlyInItsHeader(t *testing.T) {
	const key = "sk_live_onlyinheader_0123456789"
	var mu sync.Mutex
	var seen []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, bodies = append(seen, r.Clone(context.Background())), append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable) // also exercises the retry path
		_, _ = w.Write([]byte(`{"code":"down","message":"try later"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := cryptopay.NewClient(srv.URL, key, cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 1, MinWait: 1, MaxWait: 1}))
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	ctx := context.Background()
	fx := &fmFixture{paymentID: "3f1c2b8a-6d4e-4c1a-9b2f-0a1b2c3d4e5f", payoutID: "po_1"}
	for _, ep := range fmEndpoints {
		_, err := ep.call(ctx, c, fx, "sec-"+ep.name)
		require.Error(t, err, ep.name)
		assert.NotContains(t, err.Error(), key)
	}
	require.NotEmpty(t, seen)
	for i, r := range seen {
		assert.Equal(t, key, r.Header.Get("X-Api-Key"), r.URL.Path)
		assert.NotContains(t, r.URL.String(), key)
		assert.NotContains(t, string(bodies[i]), key)
		for name, vals := range r.Header {
			if http.CanonicalHeaderKey(name) == "X-Api-Key" {
				continue
			}
			assert.NotContains(t, strings.Join(vals, " "), key, "header %s", name)
		}
		for _, h := range []string{"Idempotency-Key", "X-Idempotency-Key", "Authorization", "Cookie"} {
			assert.Empty(t, r.Header.Get(h), "%s %s carries %s", r.Method, r.URL.Path, h)
		}
	}
}

// TestSecurityDebugLogOverFaults runs one call per endpoint under the
// faults that produce the most text (echoed key, HTML, resets, garbage
// 2xx) with a debug logger that keeps everything, and checks that neither
// the log nor any error holds the key. (TestFaultMatrix does the same over
// the whole matrix.)
func TestSecurityDebugLogOverFaults(t *testing.T) {
	const key = "sk_live_debuglog_abcdef0123456789"
	s := cryptopaytest.NewServer(cryptopaytest.WithAPIKey(key))
	t.Cleanup(s.Close)
	var logs bytes.Buffer
	var mu sync.Mutex
	c := s.Client(cryptopay.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := context.Background()
	setup := s.Client()
	p, err := setup.CreatePayment(ctx, fmPaymentParams("sec-fixture"))
	require.NoError(t, err)
	po, err := setup.CreatePayout(ctx, fmPayoutParams("sec-fixture-po"))
	require.NoError(t, err)
	fx := &fmFixture{paymentID: p.ID, payoutID: po.ID}
	faults := []cryptopaytest.Fault{
		{Status: 500, Body: `{"code":"` + key + `","message":"x-api-key=` + key + `"}`, Times: 4},
		{Status: 502, Body: "<html>" + key + "</html>", ContentType: "text/html"},
		{Drop: true, Process: true},
		{Status: 200, Body: `{"echo":"` + key + `"}`, Process: true},
		{Status: 429, RetryAfter: "0", Body: key},
	}
	for i, f := range faults {
		for _, ep := range fmEndpoints {
			s.InjectFault(ep.route, f)
			_, err := ep.call(ctx, c, fx, fmt.Sprintf("sec-log-%s-%d", ep.name, i))
			s.ClearFaults()
			if err != nil {
				assert.NotContains(t, err.Error(), key)
				var apiErr *cryptopay.APIError
				if errors.As(err, &apiErr) {
					assert.NotContains(t, string(apiErr.Body), key)
					assert.NotContains(t, apiErr.Code, key)
				}
			}
		}
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	require.Contains(t, out, "cryptopay request", "the logger saw the attempts")
	assert.NotContains(t, out, key)
}
