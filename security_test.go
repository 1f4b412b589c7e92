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
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

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

// TestSecurityPathEscaping: ids that try to leave their path segment are
// refused before sending (empty, ".", "..", control characters) or,
// escaped, stay in their one segment and reach no other endpoint (a 404);
// a payment id that is not a UUID is refused before sending.
func TestSecurityPathEscaping(t *testing.T) {
	s := cryptopaytest.NewServer()
	t.Cleanup(s.Close)
	c := s.Client()
	ctx := context.Background()
	hostile := []string{"../balance", "../../v1/balance", "x/../../v1/currencies", "..", "%2e%2e", "a?limit=1", "a#frag", "list", "x/status", " /v1/balance", "po\r\nX-Api-Key: other",
		"po_ü+1", "a:b", "po;x", "po&limit=1", `po'"<>`, "~user", "po..", "%", "@evil.example"}
	refused := 0
	for _, id := range hostile {
		before := s.Requests(cryptopaytest.RouteGetPayout)
		_, err := c.GetPayout(ctx, id)
		require.Error(t, err, "%q", id)
		if errors.Is(err, cryptopay.ErrInvalidParams) {
			refused++
			assert.Equal(t, before, s.Requests(cryptopaytest.RouteGetPayout), "%q refused before sending", id)
		} else {
			assert.ErrorIs(t, err, cryptopay.ErrNotFound, "%q reaches the payout status route as an id", id)
			// The fake routes on the unescaped path, so an id holding a
			// slash (sent as %2F, inside its one segment) matches no route
			// there: a 404 that reaches no endpoint at all.
			want := before + 1
			if strings.Contains(id, "/") {
				want = before
			}
			assert.Equal(t, want, s.Requests(cryptopaytest.RouteGetPayout), "%q", id)
		}

		_, err = c.GetPayment(ctx, id)
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams, "%q is not a payment id", id)
	}
	for _, r := range []cryptopaytest.Route{cryptopaytest.RouteBalance, cryptopaytest.RouteCurrencies, cryptopaytest.RouteListPayouts, cryptopaytest.RouteGetPayment, cryptopaytest.RouteCreatePayout, cryptopaytest.RouteCreatePayment} {
		assert.Zero(t, s.Requests(r), "no hostile id reached %s", r)
	}
	t.Logf("%d of %d hostile payout ids refused before sending, the rest escaped into one segment", refused, len(hostile))
}

// TestSecurityHugeBodiesCapped: a server (or a proxy in front of it) that
// answers with a huge body cannot make the client hold it: an error body
// is kept to 8 KiB, a success body beyond WithMaxResponseBytes is refused.
func TestSecurityHugeBodiesCapped(t *testing.T) {
	s := cryptopaytest.NewServer()
	t.Cleanup(s.Close)
	ctx := context.Background()
	huge := strings.Repeat("<p>spam spam spam</p>", 4<<20/21) // 4 MiB of HTML

	c := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 500, Body: huge, ContentType: "text/html"})
	_, err := c.GetBalances(ctx)
	var apiErr *cryptopay.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.LessOrEqual(t, len(apiErr.Body), 8<<10)
	assert.LessOrEqual(t, len(apiErr.Message), 600)
	assert.Less(t, len(err.Error()), 1024)

	small := s.Client(cryptopay.WithMaxResponseBytes(1 << 20))
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Status: 200, Body: `[` + strings.Repeat(`{"currency":"usdt","network":"tron"},`, 2<<20/36) + `{}]`})
	_, err = small.ListCurrencies(ctx)
	assert.ErrorIs(t, err, cryptopay.ErrUnexpectedResponse)
	assert.Contains(t, err.Error(), "larger than")
}

// TestSecurityPlainHTTPOnlyToLoopback: plain http:// is accepted only for
// hosts that are loopback by address or are "localhost", so the key never
// crosses a network in clear text unless WithInsecureHTTP says so.
func TestSecurityPlainHTTPOnlyToLoopback(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.8.9.10", true},
		{"http://[::1]:9", true},
		{"http://LOCALHOST", true},
		{"http://[::ffff:127.0.0.1]", true},
		{"https://api.example.com", true},
		{"http://127.0.0.1.nip.io", false},
		{"http://localhost.example.com", false},
		{"http://localhost.", false},
		{"http://0.0.0.0", false},
		{"http://10.0.0.1", false},
		{"http://[::]", false},
		{"http://example.com@127.0.0.1", false}, // credentials in the URL
		{"https://user:pass@api.example.com", false},
		{"ftp://api.example.com", false},
		{"//api.example.com", false},
	} {
		_, err := cryptopay.NewClient(tc.url, "k_0123456789")
		if tc.ok {
			assert.NoError(t, err, tc.url)
			continue
		}
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams, tc.url)
		if u, perr := url.Parse(tc.url); perr == nil && u.Scheme == "http" && u.User == nil {
			_, err = cryptopay.NewClient(tc.url, "k_0123456789", cryptopay.WithInsecureHTTP())
			assert.NoError(t, err, "%s with WithInsecureHTTP", tc.url)
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
