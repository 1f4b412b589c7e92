package cryptopaytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/cryptopay/cryptopay-go"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// newServer starts a server closed at the end of the test.
func newServer(t testing.TB, opts ...cryptopaytest.ServerOption) *cryptopaytest.Server {
	t.Helper()
	s := cryptopaytest.NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

// rawClient is a plain HTTP client for wire-level tests.
var rawClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// obj decodes the reply as a JSON object, numbers kept as json.Number.
func (r reply) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), "body: %s", r.Body)
	return m
}

// arr decodes the reply as a JSON array of objects.
func (r reply) arr(t testing.TB) []map[string]any {
	t.Helper()
	var m []map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), "body: %s", r.Body)
	return m
}

// call sends a request with the server's key and a JSON content type unless
// hdr overrides them (a value "" removes the header).
func call(t testing.TB, s *cryptopaytest.Server, method, path, body string, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("x-api-key", s.APIKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := rawClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, resp.Header, b}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// num reads a JSON number field (failing on a string: amounts are numbers).
func num(t testing.TB, m map[string]any, key string) decimal.Decimal {
	t.Helper()
	n, ok := m[key].(json.Number)
	require.Truef(t, ok, "%s is %T (%v), want a JSON number", key, m[key], m[key])
	return dec(n.String())
}

const paymentBody = `{"amount":10,"platformFeeByUser":true,"currency":"usdt","network":"tron",
	"customerId":"cust-1","customerIp":"203.0.113.7","orderId":"order-1"}`

const payoutBody = `{"walletAddress":"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G","networkFeeByUser":true,"amount":25,"currency":"usdt",
	"network":"tron","customerId":"cust-1","customerIp":"203.0.113.7","orderId":"po-1"}`

// createPayment creates a payment over raw HTTP and returns its id.
func createPayment(t testing.TB, s *cryptopaytest.Server, body string) string {
	t.Helper()
	r := call(t, s, "POST", "/v1/payment", body)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	return r.obj(t)["paymentId"].(string)
}

// createPayout creates a payout over raw HTTP and returns its id.
func createPayout(t testing.TB, s *cryptopaytest.Server, body string) string {
	t.Helper()
	r := call(t, s, "POST", "/v1/payout", body)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	return r.obj(t)["payoutId"].(string)
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// findPayout is ReconcilePayout without an attempt time (the whole list),
// read as found or not.
func findPayout(c *cryptopay.Client, ctx context.Context, orderID string) (*cryptopay.PayoutListItem, bool, error) {
	res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: orderID})
	if err != nil {
		return nil, false, err
	}
	return res.Payout, res.Verdict == cryptopay.PayoutExists, nil
}

// closeReturns closes s and fails the test if Close has not returned when
// the test's context ends: what is pending (a retry, a delay) is an hour
// away, so returning at all shows that Close did not wait for it.
func closeReturns(t *testing.T, s *cryptopaytest.Server) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Close()
	}()
	select {
	case <-done:
	case <-ctx(t).Done():
		t.Fatal("Close waited for what was pending")
	}
}
