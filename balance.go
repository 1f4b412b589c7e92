package cryptopay

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// Balance is the merchant's balance in one currency on one network.
type Balance struct {
	// Currency is the currency key, for example "usdt".
	Currency string `json:"currency"`
	// Network is the network key, for example "tron".
	Network string `json:"network"`
	// Amount is the balance, exact.
	Amount decimal.Decimal `json:"amount"`
}

type wireBalance struct {
	Currency string      `json:"currency"`
	Network  string      `json:"network"`
	Amount   wire.Amount `json:"amount"`
}

// UnmarshalJSON reads a balance entry; the amount may be a number or a string.
func (b *Balance) UnmarshalJSON(data []byte) error {
	var w wireBalance
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = w.balance()
	return nil
}

func (w *wireBalance) balance() Balance {
	return Balance{Currency: w.Currency, Network: w.Network, Amount: w.Amount.Decimal}
}

// GetBalances reads the merchant's balances, one entry per currency and
// network.
//
// GET /v1/balance. The API marks this operation as under development.
func (c *Client) GetBalances(ctx context.Context, opts ...RequestOption) ([]Balance, error) {
	var w []wireBalance // decoded in one pass, then converted
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/balance", route: "GET /v1/balance", opts: opts}, &w); err != nil {
		return nil, err
	}
	out := make([]Balance, len(w))
	for i := range w {
		out[i] = w[i].balance()
	}
	return out, nil
}
