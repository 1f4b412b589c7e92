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

// balanceFields is Balance without its methods (see paymentFields).
type balanceFields Balance

// wireBalance is a balance entry with its amount read leniently.
type wireBalance struct {
	balanceFields
	Amount wire.Amount `json:"amount"`
}

func (w *wireBalance) balance() Balance {
	b := Balance(w.balanceFields)
	b.Amount = w.Amount.Decimal
	return b
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

// wireBalances is the GET /v1/balance body.
type wireBalances []wireBalance

func (w *wireBalances) value() []Balance {
	out := make([]Balance, len(*w))
	for i := range *w {
		out[i] = (*w)[i].balance()
	}
	return out
}

var (
	getBalances = endpoint{http.MethodGet, "/v1/balance", "GET /v1/balance"}
	balancePool wirePool[wireBalances]
)

// GetBalances reads the merchant's balances, one entry per currency and
// network.
//
// GET /v1/balance. The API marks this operation as under development.
func (c *Client) GetBalances(ctx context.Context, opts ...RequestOption) ([]Balance, error) {
	r := request{method: getBalances.method, path: getBalances.path, route: getBalances.route, opts: opts}
	return fetch[[]Balance](ctx, c, r, &balancePool)
}
