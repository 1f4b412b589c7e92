package cryptopay

import (
	"context"
	"strconv"

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

// balanceFields is Balance without its methods, so that its wire form can
// embed it and json fills its plain fields directly.
type balanceFields Balance

// wireBalance is a balance entry with its amount read leniently.
type wireBalance struct {
	balanceFields
	Amount wire.Amount `json:"amount"`
}

func (w *wireBalance) to(b *Balance) {
	*b = Balance(w.balanceFields)
	b.Amount = w.Amount.Decimal
}

// UnmarshalJSON reads a balance entry; the amount may be a number or a string.
func (b *Balance) UnmarshalJSON(data []byte) error { return decodeVia[Balance, wireBalance](data, b) }

// wireBalances is the GET /v1/balance body.
type wireBalances []wireBalance

// balancePool reuses the wire form of GET /v1/balance (see wirePool).
var balancePool wirePool[wireBalances]

// check refuses a balance whose amount is missing or negative.
func (w *wireBalances) check() string {
	for i := range *w {
		if why := requiredAmount("amount", (*w)[i].Amount); why != "" {
			return "balance " + strconv.Itoa(i) + ": " + why
		}
	}
	return ""
}

func (w *wireBalances) to(out *[]Balance) {
	*out = make([]Balance, len(*w))
	for i := range *w {
		(*w)[i].to(&(*out)[i])
	}
}

// GetBalances reads the merchant's balances, one entry per currency and
// network.
//
// GET /v1/balance. The API marks this operation as under development.
func (c *Client) GetBalances(ctx context.Context, opts ...Option) ([]Balance, error) {
	return deref(fetch[[]Balance](ctx, c, getBalances.call(opts), &balancePool))
}
