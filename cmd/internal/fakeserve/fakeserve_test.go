package fakeserve

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"everything", []string{"-addr", "127.0.0.1:0", "-api-key", "k", "-fee-percent", "2.5", "-network-fee-percent", "0",
			"-payment-ttl", "1m", "-balance", "usdt/tron=5", "-balance", "btc/bitcoin=0.1", "-unpaid-fields", "omit",
			"-webhook-attempts", "2", "-webhook-backoff", "10ms", "-webhook-any-host", "-v"}, ""},
		{"bad fee", []string{"-fee-percent", "x"}, "not a decimal"},
		{"bad balance", []string{"-balance", "usdt=5"}, "currency/network=amount"},
		{"negative balance", []string{"-balance", "usdt/tron=-5"}, "non-negative"},
		{"bad mode", []string{"-unpaid-fields", "none"}, "unpaid fields"},
		{"unknown flag", []string{"-port", "1"}, "not defined"},
		{"extra arg", []string{"serve"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("fake", tt.args, io.Discard)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotEmpty(t, cfg.Options)
			assert.NotEmpty(t, cfg.Addr)
		})
	}
	_, err := Parse("fake", []string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
}

func TestRunRefusesBadSettings(t *testing.T) {
	for _, args := range [][]string{
		{"-addr", "localhost"},
		{"-addr", "0.0.0.0:8080"},
		{"-addr", ":8080"},
		{"-addr", "192.0.2.1:8080"},
		{"-payment-ttl", "0s"},
		{"-webhook-attempts", "0"},
		{"-api-key", ""},
		{"-fee-percent", "-1"},
	} {
		err := Run(context.Background(), "fake", append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, io.Discard)
		assert.ErrorIs(t, err, cryptopaytest.ErrInvalid, "%v", args)
	}
}

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, "cryptopay-fakeserver", []string{"-addr", "127.0.0.1:0", "-api-key", "cli_key", "-v", "-balance", "usdt/tron=7"}, &out, &logs)
	}()

	// The banner's last line names the URL twice; wait for it, not just the first.
	urlRE := regexp.MustCompile(`(?s)listening on (http://127\.0\.0\.1:\d+).*/v1/currencies\n`)
	var base string
	require.Eventually(t, func() bool {
		m := urlRE.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 30*time.Second, 5*time.Millisecond)
	assert.Contains(t, out.String(), "API key:     cli_key")

	req, _ := http.NewRequest("GET", base+"/v1/balance", nil)
	req.Header.Set("x-api-key", "cli_key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), `{"currency":"usdt","network":"tron","amount":7}`)

	resp, err = http.Post(base+"/_control/clock/advance", "application/json", strings.NewReader(`{"seconds":60}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Eventually(t, func() bool { return strings.Contains(logs.String(), "cryptopaytest request") }, 30*time.Second, 5*time.Millisecond, "-v logs requests")

	req, _ = http.NewRequest("POST", base+"/_control/clock/advance", strings.NewReader(`{"seconds":60}`))
	req.Header.Set("Origin", "http://evil.example")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the control API keeps its Origin check behind the mux")

	resp, err = http.Get(base + "/")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the dashboard is mounted at /")
	assert.Contains(t, string(body), "cryptopay sandbox")
	assert.Contains(t, out.String(), "dashboard:   "+base+"/")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after the context ended")
	}
	assert.Contains(t, out.String(), "shutting down")
	_, err = http.Get(base + "/v1/balance")
	assert.Error(t, err, "the listener is closed")
}

// TestHostCheckAndConnections: every part of the runner's listener (API,
// control API, dashboard) refuses a request for a host that is not
// loopback, the mark of DNS rebinding, and /_control/state counts the
// connections the runner's listener accepted.
func TestHostCheckAndConnections(t *testing.T) {
	inst, err := Start(Config{Addr: "127.0.0.1:0", Options: []cryptopaytest.ServerOption{cryptopaytest.WithAPIKey("host_key")}})
	require.NoError(t, err)
	t.Cleanup(inst.Close)

	tests := []struct {
		name, method, path, host, body string
		want                           int
	}{
		{"api rebinding", "POST", "/v1/payment", "evil.example", `{"amount":1}`, http.StatusForbidden},
		{"api rebinding with port", "GET", "/v1/balance", "evil.example:8080", "", http.StatusForbidden},
		{"api loopback", "GET", "/v1/balance", "", "", http.StatusOK},
		{"api localhost", "GET", "/v1/balance", "localhost:1234", "", http.StatusOK},
		{"api ipv6 loopback", "GET", "/v1/balance", "[::1]:1234", "", http.StatusOK},
		{"control rebinding", "GET", "/_control/state", "evil.example", "", http.StatusForbidden},
		{"dashboard rebinding", "GET", "/", "evil.example", "", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, inst.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			if tt.host != "" {
				req.Host = tt.host
			}
			req.Header.Set("x-api-key", "host_key")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.want, resp.StatusCode)
		})
	}
	assert.Equal(t, 0, inst.Server.PaymentCount(), "a rebinding page created nothing")

	// Three fresh connections to the runner's listener, each closed after
	// its request, then the state read on a fourth.
	for range 3 {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(inst.URL + "/_control/clock")
		require.NoError(t, err)
		resp.Body.Close()
	}
	before := inst.Server.ConnectionsOpened()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(inst.URL + "/_control/state")
	require.NoError(t, err)
	var st struct {
		ConnectionsOpened int64 `json:"connectionsOpened"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	assert.GreaterOrEqual(t, before, int64(3))
	assert.Equal(t, before+1, st.ConnectionsOpened, "the state counts the runner's own listener")
}

// Every URL the banner names answers (the control API's own URL answered
// 404), and the control API lists the payout ids.
func TestBannerURLsAnswer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, "cryptopay-fakeserver", []string{"-addr", "127.0.0.1:0"}, &out, io.Discard) }()
	urlRE := regexp.MustCompile(`(?s)listening on (http://127\.0\.0\.1:\d+).*/v1/currencies\n`)
	require.Eventually(t, func() bool { return urlRE.MatchString(out.String()) }, 30*time.Second, 5*time.Millisecond)
	base := urlRE.FindStringSubmatch(out.String())[1]
	urls := regexp.MustCompile(regexp.QuoteMeta(base)+`[^\s']*`).FindAllString(out.String(), -1)
	require.GreaterOrEqual(t, len(urls), 3, out.String())
	for _, u := range urls {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("x-api-key", cryptopaytest.DefaultAPIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, u)
	}
	resp, err := http.Get(base + "/_control/payouts")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, "[]", string(body))
	cancel()
	require.NoError(t, <-done)
}
