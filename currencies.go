package cryptopay

import (
	"context"
	"net/http"
)

// Currency is a currency and network pair the service supports.
type Currency struct {
	// Currency is the currency key, for example "usdt".
	Currency string `json:"currency"`
	// Network is the network key, for example "tron".
	Network string `json:"network"`
}

// ListCurrencies reads the supported currency and network pairs.
//
// GET /v1/currencies. The API marks this operation as under development.
func (c *Client) ListCurrencies(ctx context.Context, opts ...RequestOption) ([]Currency, error) {
	var out []Currency
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/currencies", route: "GET /v1/currencies", opts: opts}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []Currency{}
	}
	return out, nil
}
