package cryptopay

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPIErrorMapping(t *testing.T) {
	sentinels := []error{ErrUnauthorized, ErrNotFound, ErrInvalidRequest, ErrRateLimited, ErrServer}
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		header      map[string]string
		want        error
		code, msg   string
	}{
		{"documented shape 400", 400, "application/json", `{"code":"validation_error","message":"amount must be > 0"}`, nil, ErrInvalidRequest, "validation_error", "amount must be > 0"},
		{"422", 422, "application/json", `{"code":"unprocessable","message":"bad network"}`, nil, ErrInvalidRequest, "unprocessable", "bad network"},
		{"401", 401, "application/json", `{"code":"unauthorized","message":"invalid api key"}`, nil, ErrUnauthorized, "unauthorized", "invalid api key"},
		{"403", 403, "application/json", `{"code":"forbidden","message":"no"}`, nil, ErrUnauthorized, "forbidden", "no"},
		{"404", 404, "application/json", `{"code":"not_found","message":"payment not found"}`, map[string]string{"X-Request-Id": "req_123"}, ErrNotFound, "not_found", "payment not found"},
		{"html from a proxy", 404, "text/html", "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>\n<p>nginx</p></body></html>", nil, ErrNotFound, "", "404 Not Found Not Found nginx"},
		{"empty body", 401, "", "", nil, ErrUnauthorized, "", "Unauthorized"},
		{"problem+json", 400, "application/problem+json", `{"type":"about:blank","title":"Bad Request","status":400,"detail":"orderId is required"}`, nil, ErrInvalidRequest, "", "Bad Request: orderId is required"},
		{"error string", 400, "application/json", `{"error":"invalid currency"}`, nil, ErrInvalidRequest, "", "invalid currency"},
		{"nested error", 403, "application/json", `{"error":{"code":"key_revoked","message":"key revoked"}}`, nil, ErrUnauthorized, "key_revoked", "key revoked"},
		{"numeric code", 400, "application/json", `{"code":1001,"message":"bad"}`, nil, ErrInvalidRequest, "1001", "bad"},
		{"plain text", 400, "text/plain", "  bad\r\nrequest\x00  ", nil, ErrInvalidRequest, "", "bad request"},
		{"json array", 400, "application/json", `["a","b"]`, nil, ErrInvalidRequest, "", `["a","b"]`},
		{"unknown 4xx", 418, "", "", nil, nil, "", "I'm a teapot"},
		{"odd status", 399, "", "", nil, nil, "", "unexpected status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			mux.HandleFunc("GET /v1/currencies", func(w http.ResponseWriter, _ *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			_, err := c.ListCurrencies(context.Background())
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.code, apiErr.Code)
			assert.Equal(t, tt.msg, apiErr.Message)
			assert.Equal(t, "GET", apiErr.Method)
			assert.Equal(t, "/v1/currencies", apiErr.Path)
			assert.Equal(t, tt.body, string(apiErr.Body))
			for _, s := range sentinels {
				assert.Equal(t, s == tt.want, errors.Is(err, s), "errors.Is(%v)", s)
			}
			if id := tt.header["X-Request-Id"]; id != "" {
				assert.Equal(t, id, apiErr.RequestID)
				assert.Contains(t, err.Error(), id)
			}
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestAPIErrorServerStatuses(t *testing.T) {
	for _, status := range []int{500, 501, 502, 503, 504, 599} {
		e := &APIError{StatusCode: status}
		assert.ErrorIs(t, e, ErrServer, "%d", status)
		assert.True(t, e.Temporary())
	}
	assert.ErrorIs(t, &APIError{StatusCode: 429}, ErrRateLimited)
	assert.False(t, (&APIError{StatusCode: 404}).Temporary())
}

func TestErrorBodyCapped(t *testing.T) {
	c, mux := setup(t)
	big := strings.Repeat("x", 100<<10)
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(big))
	})
	_, err := c.GetBalances(context.Background())
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Len(t, apiErr.Body, maxErrorBody)
	assert.Less(t, len(err.Error()), 400, "the message is a summary, not the body")
}

func TestValidationRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		call  func(c *Client) error
		field string
	}{
		{"payment zero amount", func(c *Client) error {
			p := validPaymentParams()
			p.Amount = p.Amount.Sub(p.Amount)
			_, err := c.CreatePayment(ctx, p)
			return err
		}, "Amount"},
		{"payment negative amount", func(c *Client) error {
			p := validPaymentParams()
			p.Amount = p.Amount.Neg()
			_, err := c.CreatePayment(ctx, p)
			return err
		}, "Amount"},
		{"payment no currency", func(c *Client) error {
			p := validPaymentParams()
			p.Currency = ""
			_, err := c.CreatePayment(ctx, p)
			return err
		}, "Currency"},
		{"payment no customer id", func(c *Client) error {
			p := validPaymentParams()
			p.CustomerID = ""
			_, err := c.CreatePayment(ctx, p)
			return err
		}, "CustomerID"},
		{"payment no customer ip", func(c *Client) error {
			p := validPaymentParams()
			p.CustomerIP = ""
			_, err := c.CreatePayment(ctx, p)
			return err
		}, "CustomerIP"},
		{"payout zero amount", func(c *Client) error {
			p := validPayoutParams()
			p.Amount = p.Amount.Sub(p.Amount)
			_, err := c.CreatePayout(ctx, p)
			return err
		}, "Amount"},
		{"payout no wallet", func(c *Client) error {
			p := validPayoutParams()
			p.WalletAddress = ""
			_, err := c.CreatePayout(ctx, p)
			return err
		}, "WalletAddress"},
		{"payout no order id", func(c *Client) error {
			p := validPayoutParams()
			p.OrderID = ""
			_, err := c.CreatePayout(ctx, p)
			return err
		}, "OrderID"},
		{"payout no customer id", func(c *Client) error {
			p := validPayoutParams()
			p.CustomerID = ""
			_, err := c.CreatePayout(ctx, p)
			return err
		}, "CustomerID"},
		{"payout no customer ip", func(c *Client) error {
			p := validPayoutParams()
			p.CustomerIP = ""
			_, err := c.CreatePayout(ctx, p)
			return err
		}, "CustomerIP"},
		{"empty payment id", func(c *Client) error { _, err := c.GetPayment(ctx, ""); return err }, "id"},
		{"non-uuid payment id", func(c *Client) error { _, err := c.GetPayment(ctx, "12345"); return err }, "id"},
		{"uuid without hyphens", func(c *Client) error { _, err := c.GetPayment(ctx, strings.ReplaceAll(paymentID, "-", "")); return err }, "id"},
		{"payment id traversal", func(c *Client) error { _, err := c.GetPayment(ctx, "../../v1/payout/list?x=3f1c2b8a-6d4e"); return err }, "id"},
		{"empty payout id", func(c *Client) error { _, err := c.GetPayout(ctx, ""); return err }, "id"},
		{"payout id dot-dot", func(c *Client) error { _, err := c.GetPayout(ctx, ".."); return err }, "id"},
		{"payout id dot", func(c *Client) error { _, err := c.GetPayout(ctx, "."); return err }, "id"},
		{"payout id DEL", func(c *Client) error { _, err := c.GetPayout(ctx, "a\x7fb"); return err }, "id"},
		{"payout id C1 control", func(c *Client) error { _, err := c.GetPayout(ctx, "a\u0085b"); return err }, "id"},
		{"payout id newline", func(c *Client) error { _, err := c.GetPayout(ctx, "a\nb"); return err }, "id"},
		{"payout id too long", func(c *Client) error { _, err := c.GetPayout(ctx, strings.Repeat("a", 257)); return err }, "id"},
		{"negative limit", func(c *Client) error { _, err := c.ListPayouts(ctx, ListPayoutsParams{Limit: -1}); return err }, "Limit"},
		{"negative offset", func(c *Client) error { _, err := c.ListPayouts(ctx, ListPayoutsParams{Offset: -1}); return err }, "Offset"},
		{"find empty order", func(c *Client) error { _, _, err := findPayout(c, ctx, ""); return err }, "OrderID"},
		{"nil ctx", func(c *Client) error {
			var nilCtx context.Context
			_, err := c.GetBalances(nilCtx)
			return err
		}, "ctx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var n atomic.Int64
			mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { n.Add(1) })
			err := tt.call(c)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Equal(t, tt.field, ve.Field)
			assert.Zero(t, n.Load(), "nothing may be sent")
		})
	}
}
