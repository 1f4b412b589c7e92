package benchfloor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is what the server got of one request.
type seen struct {
	method, uri, body string
	header            http.Header
}

// serve answers every request with code and answer, and records it.
func serve(t *testing.T, code int, answer string) (*Client, *seen) {
	t.Helper()
	got := new(seen)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = seen{method: r.Method, uri: r.RequestURI, body: string(b), header: r.Header.Clone()}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(s.Close)
	hc := NewHTTPClient()
	t.Cleanup(hc.CloseIdleConnections)
	return New(hc, s.URL, "sk_floor"), got
}

const paymentJSON = `{"paymentId":"p-1","status":"paid","payAmount":101.500000000000000001,"orderId":"order-1",` +
	`"createdAt":"2025-01-02T03:04:05.123Z","paidAmount":101.5,"merchantAmount":null}`

// TestRequests: the floor's requests, byte for byte (method, path, the
// SDK's headers, the body), which the benchmarks' figures depend on.
func TestRequests(t *testing.T) {
	ctx := context.Background()
	pay := CreatePaymentParams{Amount: decimal.RequireFromString("100.10"), PlatformFeeByUser: true, Currency: "usdt",
		Network: "tron", CustomerID: "c-1", CustomerIP: "203.0.113.7", OrderID: "order-1"}
	payout := CreatePayoutParams{WalletAddress: "0xabc", Amount: decimal.RequireFromString("25.75"), Currency: "usdt",
		Network: "eth", CustomerID: "c-1", CustomerIP: "203.0.113.7", OrderID: "po-1", WebhookURL: "https://shop.example/h"}
	for _, tt := range []struct {
		name, method, uri, body string
		call                    func(c *Client) error
	}{
		{"CreatePayment", http.MethodPost, "/v1/payment",
			`{"amount":100.1,"platformFeeByUser":true,"currency":"usdt","network":"tron","customerId":"c-1","customerIp":"203.0.113.7","orderId":"order-1"}`,
			func(c *Client) error { _, err := c.CreatePayment(ctx, pay); return err }},
		{"GetPayment", http.MethodGet, "/v1/payment/p-1/status", "",
			func(c *Client) error { _, err := c.GetPayment(ctx, "p-1"); return err }},
		{"CreatePayout", http.MethodPost, "/v1/payout",
			`{"walletAddress":"0xabc","networkFeeByUser":false,"amount":25.75,"currency":"usdt","network":"eth","customerId":"c-1","customerIp":"203.0.113.7","orderId":"po-1","webhookUrl":"https://shop.example/h"}`,
			func(c *Client) error { _, err := c.CreatePayout(ctx, payout); return err }},
		{"Call", http.MethodGet, "/v1/payout/list?limit=100", "",
			func(c *Client) error { return c.Call(ctx, http.MethodGet, "/v1/payout/list?limit=100", nil, new(Page)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, got := serve(t, http.StatusOK, `{}`)
			require.NoError(t, tt.call(c))
			assert.Equal(t, tt.method, got.method)
			assert.Equal(t, tt.uri, got.uri)
			assert.Equal(t, tt.body, got.body)
			want := http.Header{"X-Api-Key": {"sk_floor"}, "Accept": {"application/json"}, "User-Agent": {UserAgent}}
			if tt.body != "" {
				want["Content-Type"] = []string{"application/json"}
			}
			for k, v := range want {
				assert.Equal(t, v, got.header[k], k)
			}
			if tt.body == "" {
				assert.Empty(t, got.header["Content-Type"])
			}
		})
	}
}

// TestDecodesExactly: amounts to the digit, a null amount as not valid.
func TestDecodesExactly(t *testing.T) {
	c, _ := serve(t, http.StatusCreated, paymentJSON)
	p, err := c.GetPayment(context.Background(), "p-1")
	require.NoError(t, err)
	assert.Equal(t, "101.500000000000000001", p.PayAmount.String())
	assert.Equal(t, "101.5", p.PaidAmount.Decimal.String())
	assert.True(t, p.PaidAmount.Valid)
	assert.False(t, p.MerchantAmount.Valid)
	assert.Equal(t, "order-1", p.OrderID)
	assert.Equal(t, 123000000, p.CreatedAt.Nanosecond())
}

// TestStatusOutside2xx: an answer outside 2xx is ErrStatus, with its code.
func TestStatusOutside2xx(t *testing.T) {
	c, _ := serve(t, http.StatusUnauthorized, `{"code":"unauthorized"}`)
	_, err := c.GetPayment(context.Background(), "p-1")
	require.ErrorIs(t, err, ErrStatus)
	assert.EqualError(t, err, "floor: unexpected status: 401")
}
