package cryptopay

import "context"

// Currency is a currency and network pair the service supports.
type Currency struct {
	// Currency is the currency key, for example "usdt".
	Currency string `json:"currency"`
	// Network is the network key, for example "tron".
	Network string `json:"network"`
}

// wireCurrencies is the GET /v1/currencies body, decoded as is.
type wireCurrencies []Currency

// currencyPool reuses the wire form of GET /v1/currencies (see wirePool).
var currencyPool wirePool[wireCurrencies]

func (w *wireCurrencies) to(out *[]Currency) {
	*out = *w
	if *out == nil {
		*out = []Currency{}
	}
}

// ListCurrencies reads the supported currency and network pairs.
//
// GET /v1/currencies. The API marks this operation as under development.
func (c *Client) ListCurrencies(ctx context.Context, opts ...Option) ([]Currency, error) {
	return deref(fetch[[]Currency](ctx, c, listCurrencies.call(opts), &currencyPool))
}
