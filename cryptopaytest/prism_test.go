package cryptopaytest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/internal/toolnotice"
)

// openAPIPath is the OpenAPI rendering of the spec.
const openAPIPath = "../testdata/openapi.yaml"

// needBinary finds a program a test needs. With CI=true a missing one fails
// the test; otherwise the test is skipped, loudly.
func needBinary(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	toolnotice.Missing(t, fmt.Sprintf("%s is not on PATH (%s)", name, install))
	return ""
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a child process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// offlineEnv is the environment without proxy settings, so that a child
// process can reach nothing but the loopback addresses it is given.
func offlineEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_OPTIONS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "NO_PROXY=*", "no_proxy=*")
}

// startPrism starts Prism's validating proxy for the spec in front of
// upstream on a free loopback port, and returns a func that waits until it
// listens and returns its base URL. Node takes about 2 s of CPU to start
// it: a test that starts it before t.Parallel and waits after has it start
// while the tests before it run. It is stopped when the test ends; its
// output is logged if the test failed.
func startPrism(t *testing.T, upstream string) (listening func() string) {
	t.Helper()
	bin := needBinary(t, "prism", "npm install -g @stoplight/prism-cli@5")
	spec, err := filepath.Abs(openAPIPath)
	require.NoError(t, err)
	port := freeLoopbackPort(t)
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "proxy", spec, upstream, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--errors", "--cors", "false", "--multiprocess", "false")
	cmd.Dir = t.TempDir()
	cmd.Env = offlineEnv()
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prism output:\n%s", out.String())
		}
	})
	return func() string {
		t.Helper()
		deadline := time.Now().Add(25 * time.Second)
		for !strings.Contains(out.String(), "Prism is listening") {
			select {
			case <-exited:
				t.Fatalf("prism exited before listening:\n%s", out.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("prism did not start within 25 s:\n%s", out.String())
			}
		}
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	}
}

// violationRecorder is a transport that notes every response through Prism
// that reports a violation of the OpenAPI file: an sl-violations header
// (any severity, request or response) or Prism's own error body.
type violationRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
	n    int
}

func (v *violationRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if h := resp.Header.Get("sl-violations"); h != "" {
		v.seen = append(v.seen, r.Method+" "+r.URL.Path+": "+h)
	} else if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		v.seen = append(v.seen, r.Method+" "+r.URL.Path+": Prism answered with a problem document")
	}
	return resp, nil
}

func (v *violationRecorder) report() (requests int, violations []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n, append([]string(nil), v.seen...)
}

// TestSpecHasNoExternalRefs keeps the OpenAPI file self-contained, so the
// validator never fetches anything from the network.
func TestSpecHasNoExternalRefs(t *testing.T) {
	b, err := os.ReadFile(openAPIPath)
	require.NoError(t, err)
	refs := regexp.MustCompile(`\$ref:\s*"?([^"\s]+)`).FindAllSubmatch(b, -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		assert.True(t, strings.HasPrefix(string(m[1]), "#/"), "external $ref %s", m[1])
	}
}

// TestFakeIsSchemaValidBehindPrism runs the fake behind Prism's validating
// proxy with the OpenAPI rendering of the spec, drives every endpoint and
// every status of both lifecycles through the SDK pointed at Prism, and
// fails on any violation Prism reports, in a request or a response.
func TestFakeIsSchemaValidBehindPrism(t *testing.T) {
	srv := newServer(t)
	listening := startPrism(t, srv.URL) // starts now, in the sequential run
	t.Parallel()
	base := listening()
	rec := &violationRecorder{next: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	c, err := cryptopay.NewClient(base, srv.APIKey,
		cryptopay.WithHTTPClient(&http.Client{Transport: rec}),
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}), // a violation must not be retried away
		cryptopay.WithTimeout(10*time.Second))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prismNegativeControl(ctx, t, srv, base)
	prismReads(ctx, t, c)
	prismPaymentLifecycle(ctx, t, srv, c)
	prismPayoutLifecycle(ctx, t, srv, c)
	prismErrors(ctx, t, c)

	n, violations := rec.report()
	assert.Empty(t, violations, "Prism reported violations of testdata/openapi.yaml")
	assert.GreaterOrEqual(t, n, 30, "requests checked through Prism")
	t.Logf("%d SDK requests through Prism, %d violations", n, len(violations))
}

// prismNegativeControl shows that the harness sees a violation: an answer
// of the wrong shape becomes Prism's error.
func prismNegativeControl(ctx context.Context, t *testing.T, srv *cryptopaytest.Server, base string) {
	t.Helper()
	srv.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Status: 200, Body: `[{"currency":1}]`})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/currencies", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", srv.APIKey)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, resp.Header.Get("sl-violations"), "a wrong shape must be reported: %s", body)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "--errors turns it into an error: %s", body)
}

func prismReads(ctx context.Context, t *testing.T, c *cryptopay.Client) {
	t.Helper()
	cur, err := c.ListCurrencies(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, cur)
	bal, err := c.GetBalances(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, bal)
}

func prismPaymentParams(order, webhook string) cryptopay.CreatePaymentParams {
	return cryptopay.CreatePaymentParams{
		Amount: dec("10"), PlatformFeeByUser: true, Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: order, WebhookURL: webhook,
	}
}

// prismPaymentLifecycle reads a payment in every status the fake can give
// it, created with and without the optional fields.
func prismPaymentLifecycle(ctx context.Context, t *testing.T, srv *cryptopaytest.Server, c *cryptopay.Client) {
	t.Helper()
	create := func(order, webhook string) string {
		params := prismPaymentParams(order, webhook)
		if webhook != "" {
			params.AdditionalData = "note"
		}
		p, err := c.CreatePayment(ctx, params)
		require.NoError(t, err)
		return p.ID
	}
	read := func(id string, want cryptopay.PaymentStatus) {
		t.Helper()
		p, err := c.GetPayment(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, p.Status)
	}
	a := create("pay-a", "")
	read(a, cryptopay.PaymentWaiting)
	for _, st := range []cryptopay.PaymentStatus{cryptopay.PaymentConfirming, cryptopay.PaymentLocked} {
		require.NoError(t, srv.SetPaymentStatus(a, st))
		read(a, st)
	}
	require.NoError(t, srv.Pay(a, dec("4")))
	read(a, cryptopay.PaymentPaidPartial)
	require.NoError(t, srv.Pay(a, dec("6.1")))
	read(a, cryptopay.PaymentPaid)
	require.NoError(t, srv.Pay(a, dec("1")))
	read(a, cryptopay.PaymentPaidOver)

	b := create("pay-b", "http://127.0.0.1:9/hook")
	srv.Advance(cryptopaytest.DefaultPaymentTTL)
	read(b, cryptopay.PaymentExpired)
	for _, st := range []cryptopay.PaymentStatus{cryptopay.PaymentFailed, cryptopay.PaymentRejected} {
		id := create("pay-"+string(st), "")
		require.NoError(t, srv.SetPaymentStatus(id, st))
		read(id, st)
	}
}

// prismPayoutLifecycle reads payouts in every status, lists them, and
// reconciles one by order id.
func prismPayoutLifecycle(ctx context.Context, t *testing.T, srv *cryptopaytest.Server, c *cryptopay.Client) {
	t.Helper()
	create := func(order, webhook string) string {
		p, err := c.CreatePayout(ctx, cryptopay.CreatePayoutParams{
			WalletAddress: "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", Amount: dec("2"), Currency: "usdt", Network: "tron",
			CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: order, WebhookURL: webhook,
		})
		require.NoError(t, err)
		return p.ID
	}
	read := func(id string, want cryptopay.PayoutStatus) {
		t.Helper()
		p, err := c.GetPayout(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, p.Status)
	}
	paths := [][]cryptopay.PayoutStatus{
		{cryptopay.PayoutReview, cryptopay.PayoutProcessing, cryptopay.PayoutConfirming, cryptopay.PayoutPaid},
		{cryptopay.PayoutFailed},
		{cryptopay.PayoutCancelled},
	}
	for i, path := range paths {
		webhook := ""
		if i == 0 {
			webhook = "http://127.0.0.1:9/hook"
		}
		id := create(fmt.Sprintf("po-%d", i), webhook)
		read(id, cryptopay.PayoutCreated)
		for _, st := range path {
			require.NoError(t, srv.SetPayoutStatus(id, st))
			read(id, st)
		}
	}
	create("po-open", "")
	page, err := c.ListPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 2, Offset: 1})
	require.NoError(t, err)
	require.Len(t, page.Payouts, 2)
	n := 0
	for _, err := range c.AllPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 3}) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 4, n)
	found, ok, err := findPayout(c, ctx, "po-1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "po-1", found.OrderID)
}

// prismErrors checks the error answers against the error body.
func prismErrors(ctx context.Context, t *testing.T, c *cryptopay.Client) {
	t.Helper()
	var apiErr *cryptopay.APIError
	_, err := c.GetPayment(ctx, "00000000-0000-4000-8000-000000000000")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	_, err = c.GetPayout(ctx, "no-such-payout")
	require.ErrorAs(t, err, &apiErr)
	params := prismPaymentParams("pay-x", "")
	params.Currency = "doge"
	_, err = c.CreatePayment(ctx, params)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "unsupported_currency", apiErr.Code, "the {code, message} body was read")
	require.False(t, errors.Is(err, cryptopay.ErrOutcomeUnknown))
}
