package oapibench_test

// The clients of the comparison and the server they share, built the way
// the root module's benchmarks build theirs (bench_test.go): a loopback
// httptest server answering with canned JSON, the same bytes for every
// client, and one transport configuration for all. The floor is the root's
// own (internal/benchfloor).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/internal/benchfloor"
	"github.com/cryptopay/cryptopay-go/scripts/oapibench/oapiclient"
)

// apiKey is the canned server's key.
const apiKey = "sk_bench_0123456789abcdef"

// createParams is the payment every client creates: the root benchmarks'
// parameters (a non-loopback webhook URL, which the fake records as
// failed and never calls).
var createParams = cryptopay.CreatePaymentParams{
	Amount: decimal.RequireFromString("100"), PlatformFeeByUser: true, Currency: "usdt", Network: "tron",
	CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: "order-1001", AdditionalData: "cart 17",
	WebhookURL: "https://shop.example/hook?token=abc",
}

// answers are the fake's answers for one payment: its create answer and
// its status once paid, as bytes.
type answers struct {
	id            string
	created, read []byte
}

// fakeAnswers creates createParams' payment at the fake, pays it and
// returns the two answers as the fake wrote them, so the canned server's
// bytes are the fake's (which cryptopaytest tests against the OpenAPI
// document) and not a hand-written copy.
func fakeAnswers(tb testing.TB) answers {
	tb.Helper()
	fake := cryptopaytest.NewServer()
	defer fake.Close()
	c := newSDK(tb, fake.URL, fake.APIKey)
	p, err := c.CreatePayment(context.Background(), createParams)
	if err != nil {
		tb.Fatal(err)
	}
	if err := fake.Pay(p.ID, p.PayAmount); err != nil {
		tb.Fatal(err)
	}
	raw := func(method, path string, body []byte) []byte {
		req, err := http.NewRequest(method, fake.URL+path, bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("X-Api-Key", fake.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode/100 != 2 {
			tb.Fatalf("%s %s: %d %s %v", method, path, resp.StatusCode, b, err)
		}
		return b
	}
	body, err := benchfloor.PaymentBody(benchfloor.CreatePaymentParams(createParams))
	if err != nil {
		tb.Fatal(err)
	}
	return answers{id: p.ID, created: raw(http.MethodPost, "/v1/payment", body),
		read: raw(http.MethodGet, "/v1/payment/"+p.ID+"/status", nil)}
}

// newCannedServer serves a's create answer to POST /v1/payment (201) and
// its read answer to GET /v1/payment/{a.id}/status, after reading the
// request's body whole, as the root benchmarks' server does.
func newCannedServer(tb testing.TB, a answers) *httptest.Server {
	tb.Helper()
	readPath := "/v1/payment/" + a.id + "/status"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		code, body := http.StatusNotFound, []byte(`{"code":"not_found","message":"no route"}`)
		switch {
		case r.Header.Get("X-Api-Key") != apiKey:
			code, body = http.StatusUnauthorized, []byte(`{"code":"unauthorized","message":"bad key"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/payment":
			code, body = http.StatusCreated, a.created
		case r.Method == http.MethodGet && r.URL.Path == readPath:
			code, body = http.StatusOK, a.read
		}
		w.Header()["Content-Type"] = []string{"application/json"}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(s.Close)
	return s
}

// newSDK is the SDK's client, every check on, on its own default transport.
func newSDK(tb testing.TB, url, key string, opts ...cryptopay.Option) *cryptopay.Client {
	tb.Helper()
	c, err := cryptopay.NewClient(url, key, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

// newHTTPClient is the http.Client the oapi-codegen client and the floor
// use: the floor's (benchfloor.NewHTTPClient), the SDK's default transport
// field by field and its per-attempt timeout (which costs a timer per
// request, as the SDK's does).
func newHTTPClient(tb testing.TB) *http.Client {
	hc := benchfloor.NewHTTPClient()
	tb.Cleanup(hc.CloseIdleConnections)
	return hc
}

// newOAPI is the generated client as a merchant minimally sets it up: the
// API key added by a request editor, on hc; with hc nil, on what the
// generated code takes by default (an http.Client{}: the default
// transport, and no timeout, so a server that never answers holds the
// call for ever).
func newOAPI(tb testing.TB, url, key string, hc *http.Client) *oapiclient.ClientWithResponses {
	tb.Helper()
	opts := []oapiclient.ClientOption{oapiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-Api-Key", key)
		return nil
	})}
	if hc != nil {
		opts = append(opts, oapiclient.WithHTTPClient(hc))
	}
	c, err := oapiclient.NewClientWithResponses(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// oapiCreate converts the SDK's parameters to the generated request, as
// a merchant would: the amount becomes a float32, the type oapi-codegen
// gives an OpenAPI number without a format (inexact: it keeps about seven
// significant digits).
func oapiCreate(p cryptopay.CreatePaymentParams) oapiclient.CreatePaymentRequest {
	return oapiclient.CreatePaymentRequest{
		Amount: float32(p.Amount.InexactFloat64()), PlatformFeeByUser: p.PlatformFeeByUser, Currency: p.Currency,
		Network: p.Network, CustomerId: p.CustomerID, CustomerIp: p.CustomerIP, OrderId: p.OrderID,
		AdditionalData: &p.AdditionalData, WebhookUrl: &p.WebhookURL,
	}
}

var errStatus = errors.New("unexpected answer")

// oapiCreatePayment and oapiGetPayment are the least a merchant does with
// the generated client: call, and take the parsed answer of the expected
// status (which the generated code decodes into its struct).
func oapiCreatePayment(ctx context.Context, c *oapiclient.ClientWithResponses, body oapiclient.CreatePaymentRequest) (*oapiclient.PaymentCreated, error) {
	r, err := c.CreatePaymentWithResponse(ctx, body)
	if err != nil {
		return nil, err
	}
	return expected(r.JSON201, r.StatusCode())
}

func oapiGetPayment(ctx context.Context, c *oapiclient.ClientWithResponses, id string) (*oapiclient.PaymentStatus, error) {
	r, err := c.GetPaymentStatusWithResponse(ctx, id)
	if err != nil {
		return nil, err
	}
	return expected(r.JSON200, r.StatusCode())
}

// expected returns the answer the generated code parsed for the expected
// status, or, when it parsed none (another status), an error naming code.
func expected[T any](answer *T, code int) (*T, error) {
	if answer == nil {
		return nil, fmt.Errorf("%w: %d", errStatus, code)
	}
	return answer, nil
}
