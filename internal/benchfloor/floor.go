// Package benchfloor is the floor of the SDK's benchmarks: the client a
// careful developer writes by hand with net/http and encoding/json, exact
// amounts (decimal) and time.Time timestamps, the control every benchmark
// of the SDK is compared with. The root module's benchmarks
// (bench_test.go, webhook_bench_test.go) and scripts/oapibench measure
// against this one client, so their tables share one control.
//
// Its rules (BENCHMARKS.md, "Fairness"): the SDK's default transport
// settings, field by field (NewHTTPClient); the SDK's headers (x-api-key,
// Accept, User-Agent, Content-Type on a body); the same request body; the
// answer read whole under a size cap and decoded into a struct of the
// SDK's fields.
//
// Only tests import it. It imports nothing of the module (a leaf of
// internal/), so it has its own parameter types, convertible from the
// SDK's (CreatePaymentParams).
package benchfloor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// UserAgent is the floor's User-Agent header.
const UserAgent = "floor/0.1.0 (go)"

// MaxConnsPerHost is the SDK's default bound on its transport's
// connections (cryptopay.DefaultMaxConnsPerHost), which the floor's
// transport copies.
const MaxConnsPerHost = 256

// maxBody caps the answer the floor reads.
const maxBody = 16 << 20

// ErrStatus is the floor's error for an answer outside 2xx.
var ErrStatus = errors.New("floor: unexpected status")

// NewHTTPClient returns an http.Client on the SDK's default transport
// settings, field by field (TLS aside: the benchmarks run over loopback
// HTTP), with the SDK's per-attempt timeout of 30 seconds (which costs a
// timer per request, as the SDK's does). Close its idle connections when
// done (CloseIdleConnections).
func NewHTTPClient() *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxConnsPerHost:       MaxConnsPerHost,
		MaxIdleConns:          MaxConnsPerHost,
		MaxIdleConnsPerHost:   MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Client is the floor: calls to the API at its base URL with its key.
type Client struct {
	hc   *http.Client
	base string
	key  string
}

// New returns the floor on hc (NewHTTPClient, or any other for a
// diagnostic) for the API at base (no trailing slash) with key.
func New(hc *http.Client, base, key string) *Client {
	return &Client{hc: hc, base: base, key: key}
}

// Call sends method to the base URL + path with body (nil: none) and
// decodes a 2xx answer into out; another status is ErrStatus.
func (c *Client) Call(ctx context.Context, method, path string, body []byte, out any) error {
	return c.do(ctx, method, c.base+path, body, out)
}

// do is Call on a whole URL, so that a method building its path makes one
// string, not two.
func (c *Client) do(ctx context.Context, method, url string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %d", ErrStatus, resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// CreatePayment sends POST /v1/payment with p's body (PaymentBody) and
// decodes the payment.
func (c *Client) CreatePayment(ctx context.Context, p CreatePaymentParams) (*Payment, error) {
	body, err := PaymentBody(p)
	if err != nil {
		return nil, err
	}
	out := new(Payment)
	return out, c.do(ctx, http.MethodPost, c.base+"/v1/payment", body, out)
}

// GetPayment sends GET /v1/payment/{id}/status and decodes the payment.
// id is put in the path as it is: the caller escapes an id it does not
// trust.
func (c *Client) GetPayment(ctx context.Context, id string) (*Payment, error) {
	out := new(Payment)
	return out, c.do(ctx, http.MethodGet, c.base+"/v1/payment/"+id+"/status", nil, out)
}

// CreatePayout sends POST /v1/payout with p's body and decodes the payout.
func (c *Client) CreatePayout(ctx context.Context, p CreatePayoutParams) (*Payout, error) {
	body, err := json.Marshal(payoutBody{
		WalletAddress: p.WalletAddress, NetworkFeeByUser: p.NetworkFeeByUser, Amount: Number(p.Amount),
		Currency: p.Currency, Network: p.Network, CustomerID: p.CustomerID, CustomerIP: p.CustomerIP,
		OrderID: p.OrderID, AdditionalData: p.AdditionalData, WebhookURL: p.WebhookURL,
	})
	if err != nil {
		return nil, err
	}
	out := new(Payout)
	return out, c.do(ctx, http.MethodPost, c.base+"/v1/payout", body, out)
}
