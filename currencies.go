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

// wireCurrencies is the GET /v1/currencies body, decoded as is.
type wireCurrencies []Currency

func (w *wireCurrencies) value() []Currency {
	if *w == nil {
		return []Currency{}
	}
	return *w
}

var (
	listCurrencies = endpoint{http.MethodGet, "/v1/currencies", "GET /v1/currencies"}
	currencyPool   wirePool[wireCurrencies]
)

// ListCurrencies reads the supported currency and network pairs.
//
// GET /v1/currencies. The API marks this operation as under development.
func (c *Client) ListCurrencies(ctx context.Context, opts ...RequestOption) ([]Currency, error) {
	r := request{method: listCurrencies.method, path: listCurrencies.path, route: listCurrencies.route, opts: opts}
	return fetch[[]Currency](ctx, c, r, &currencyPool)
}
