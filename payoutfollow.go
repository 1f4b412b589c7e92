package cryptopay

import (
	"context"
	"fmt"
	"time"
)

// payoutFollow is a WaitForPayout by orderId: it reads the payout list
// until it learns the payout's id (from a list item that carries one, or
// from a payout a webhook handed over), then reads GET /v1/payout/{id}.
type payoutFollow struct {
	orderID string
	id      string // learned; "" until then
}

// waitForPayoutByOrderID is WaitForPayout for an OrderID.
func (c *Client) waitForPayoutByOrderID(ctx context.Context, orderID string, cfg *waitConfig[Payout, PayoutStatus]) (*Payout, error) {
	if err := validText("OrderID", orderID); err != nil {
		return nil, err
	}
	f := &payoutFollow{orderID: orderID}
	spec := waitSpec[Payout, PayoutStatus]{
		kind: kindPayoutOrder,
		get:  f.get,
		// state also learns the id of every payout the wait sees, read or
		// handed over by a webhook (it runs in the waiting goroutine).
		state: func(p *Payout) (PayoutStatus, time.Time) {
			if f.id == "" && p.ID != "" {
				f.id = p.ID
			}
			return p.Status, p.UpdatedAt
		},
		terminal: PayoutStatus.IsTerminal,
	}
	return waitLoop(ctx, c, spec, orderID, cfg)
}

// get reads the payout: by id once known, else from the payout list.
func (f *payoutFollow) get(c *Client, ctx context.Context, _ string, opts ...Option) (*Payout, error) {
	if f.id != "" {
		return c.GetPayout(ctx, f.id, opts...)
	}
	s := newPayoutSearch(ctx, c, f.orderID, time.Time{}, opts)
	if err := s.run(); err != nil {
		return nil, err
	}
	if s.found == nil {
		return nil, fmt.Errorf("the payout list holds no payout with this orderId: %w", ErrNotFound)
	}
	return s.found.payout(), nil
}

// payout is the Payout the list item describes, as far as it does: no
// UpdatedAt, no PaidAmount, and its ID only if the server sent one.
func (it *PayoutListItem) payout() *Payout {
	return &Payout{
		ID:             it.ID,
		Status:         it.Status,
		Amount:         it.Amount,
		WalletAddress:  it.PaidAddress,
		Currency:       it.Currency,
		Network:        it.Network,
		CustomerID:     it.CustomerID,
		OrderID:        it.OrderID,
		CreatedAt:      it.CreatedAt,
		MerchantAmount: it.MerchantAmount,
	}
}
