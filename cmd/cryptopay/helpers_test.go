package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// fixture is a fake server and the environment the CLI runs in.
type fixture struct {
	t   *testing.T
	srv *cryptopaytest.Server
	env map[string]string
	// login is the operating system's user the CLI believes it runs as
	// ("": the real one).
	login string
}

// setup starts a fake and an environment pointing the CLI at it.
func setup(t *testing.T, opts ...cryptopaytest.ServerOption) *fixture {
	t.Helper()
	srv := cryptopaytest.NewServer(append([]cryptopaytest.ServerOption{cryptopaytest.WithWebhookRetry(1, 0)}, opts...)...)
	t.Cleanup(srv.Close)
	return &fixture{t: t, srv: srv, env: map[string]string{
		envBaseURL:       srv.URL,
		envAPIKey:        srv.APIKey,
		envWebhookSecret: testSecret,
	}}
}

// terms says which streams the CLI believes are terminals.
type terms struct{ stdin, stdout, stderr bool }

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in-process on the fixture's environment.
func (f *fixture) runCLI(tm terms, stdin string, args ...string) result {
	return f.runWith(f.t.Context(), tm, strings.NewReader(stdin), &bytes.Buffer{}, args...)
}

// run is runCLI with no terminal and no stdin.
func (f *fixture) run(args ...string) result { return f.runCLI(terms{}, "", args...) }

func (f *fixture) runWith(ctx context.Context, tm terms, stdin io.Reader, stdout io.Writer, args ...string) result {
	var errBuf bytes.Buffer
	a := &app{
		ctx:    ctx,
		stdin:  stdin,
		stdout: stdout,
		stderr: &errBuf,
		getenv: func(k string) string { return f.env[k] },
		isTerminal: func(v any) bool {
			switch v {
			case stdin:
				return tm.stdin
			case stdout:
				return tm.stdout
			case any(&errBuf):
				return tm.stderr
			}
			return false
		},
		now: time.Now,
		login: func() string {
			if f.login != "" {
				return f.login
			}
			return osLogin()
		},
		clientOpts: []cryptopay.Option{cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 2, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond})},
	}
	code := a.main(args)
	out := ""
	if s, ok := stdout.(fmt.Stringer); ok {
		out = s.String()
	}
	return result{code: code, stdout: out, stderr: errBuf.String()}
}

// createPayment makes a payment through the SDK.
func (f *fixture) createPayment(orderID, amount, webhookURL string) *cryptopay.Payment {
	f.t.Helper()
	p, err := f.srv.Client().CreatePayment(f.t.Context(), cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString(amount), Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: webhookURL,
	})
	require.NoError(f.t, err)
	return p
}

// createPayout makes a payout through the SDK.
func (f *fixture) createPayout(orderID, amount string) *cryptopay.Payout {
	f.t.Helper()
	p, err := f.srv.Client().CreatePayout(f.t.Context(), cryptopay.CreatePayoutParams{
		Amount: decimal.RequireFromString(amount), Currency: "usdt", Network: "tron", WalletAddress: "TWWL4ZrfTFbX6NDMrMHUtToH4xzpMNF26i",
		CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: orderID,
	})
	require.NoError(f.t, err)
	return p
}

// seedPayouts creates n payouts through the fake's in-process handler (no
// TCP, so 10,000 take little time); payout i has order id seedOrder(i) and
// amount seedAmount(i).
func (f *fixture) seedPayouts(n int) {
	f.t.Helper()
	f.srv.SetBalance("usdt", "tron", decimal.New(1, 12))
	h := f.srv.Handler()
	for i := range n {
		body := fmt.Sprintf(`{"walletAddress":"TW%05d","networkFeeByUser":%t,"amount":%s,"currency":"usdt","network":"tron","customerId":"c%d","customerIp":"203.0.113.7","orderId":%q}`,
			i, i%2 == 0, seedAmount(i), i%7, seedOrder(i))
		req := httptest.NewRequest(http.MethodPost, "/v1/payout", strings.NewReader(body))
		req.Host = "127.0.0.1" // the fake refuses other host names (DNS rebinding)
		req.Header.Set("x-api-key", f.srv.APIKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(f.t, http.StatusOK, rec.Code, rec.Body.String())
	}
}

func seedOrder(i int) string { return fmt.Sprintf("exp-%05d", i) }

// seedAmount has 18 decimals, so a float anywhere on the way would show.
func seedAmount(i int) string { return fmt.Sprintf("%d.%018d", i%1000, i+1) }

// writeFile writes content to a new file in a temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// lineWriter is a goroutine-safe buffer that signals each line written.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 64)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if strings.HasSuffix(l, "\n") {
			w.lines <- strings.TrimSuffix(l, "\n")
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
