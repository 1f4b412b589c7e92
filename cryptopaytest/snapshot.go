package cryptopaytest

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// PaymentSnapshot is a copy of a payment as the server holds it, for
// dashboards and assertions. Changing it changes nothing on the server.
type PaymentSnapshot struct {
	// ID is the paymentId.
	ID string
	// OrderID is the merchant's orderId.
	OrderID string
	// Status is the current status.
	Status cryptopay.PaymentStatus
	// Amount is the amount requested; PayAmount is what the customer must
	// send (Amount plus the fee when the customer bears it).
	Amount, PayAmount decimal.Decimal
	// PaidAmount is what has arrived so far and MerchantAmount the
	// merchant's share of it; both are invalid (Valid false) until the first
	// payment arrives.
	PaidAmount, MerchantAmount decimal.NullDecimal
	// Currency and Network name the pair, for example "usdt" and "tron".
	Currency, Network string
	// PayAddress is the (fake, unusable) address to pay to, and
	// PayQRCodeURI the payQrCodeUri built from it.
	PayAddress, PayQRCodeURI string
	// WebhookURL is where status changes are posted ("" for none).
	WebhookURL string
	// CreatedAt, UpdatedAt and ExpiredAt are on the server clock.
	CreatedAt, UpdatedAt, ExpiredAt time.Time
}

// PayoutSnapshot is a copy of a payout as the server holds it. Changing it
// changes nothing on the server.
type PayoutSnapshot struct {
	// ID is the payoutId.
	ID string
	// OrderID is the merchant's orderId.
	OrderID string
	// Status is the current status.
	Status cryptopay.PayoutStatus
	// Amount is the amount requested.
	Amount decimal.Decimal
	// PaidAmount (what the wallet receives) and MerchantAmount (what the
	// balance paid) are invalid (Valid false) until the payout is paid.
	PaidAmount, MerchantAmount decimal.NullDecimal
	// Currency and Network name the pair.
	Currency, Network string
	// WalletAddress is the destination.
	WalletAddress string
	// WebhookURL is where status changes are posted ("" for none).
	WebhookURL string
	// CreatedAt and UpdatedAt are on the server clock.
	CreatedAt, UpdatedAt time.Time
}

// BalanceSnapshot is the merchant's balance of one currency and network pair.
type BalanceSnapshot struct {
	// Currency and Network name the pair.
	Currency, Network string
	// Amount is the balance.
	Amount decimal.Decimal
}

// Payments returns a copy of every payment, oldest first (ties by id). A
// waiting payment past its expiredAt is listed as waiting until the server
// expires it (within a second, or on the next read or Advance).
func (s *Server) Payments() []PaymentSnapshot {
	s.mu.RLock()
	out := make([]PaymentSnapshot, 0, len(s.payments))
	for _, p := range s.payments {
		out = append(out, p.snapshot())
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b PaymentSnapshot) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Payment returns a copy of one payment (expiring it first if due), or an
// error matching ErrNotFound.
func (s *Server) Payment(id string) (PaymentSnapshot, error) {
	if _, ok := s.paymentJSON(id); !ok { // applies a due expiry
		return PaymentSnapshot{}, fmt.Errorf("%w: payment %s", ErrNotFound, id)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.payments[id].snapshot(), nil
}

func (p *payment) snapshot() PaymentSnapshot {
	ps := PaymentSnapshot{
		ID: p.id, OrderID: p.orderID, Status: p.status, Amount: p.amount, PayAmount: p.payAmount,
		Currency: p.currency, Network: p.network, PayAddress: p.payAddress, PayQRCodeURI: p.qrURI,
		WebhookURL: p.webhookURL, CreatedAt: p.createdAt, UpdatedAt: p.updatedAt, ExpiredAt: p.expiredAt,
	}
	if p.everPaid {
		ps.PaidAmount = decimal.NullDecimal{Decimal: p.paid, Valid: true}
		ps.MerchantAmount = decimal.NullDecimal{Decimal: p.merchant, Valid: true}
	}
	return ps
}

// Payouts returns a copy of every payout, in creation order.
func (s *Server) Payouts() []PayoutSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]PayoutSnapshot, 0, len(s.payoutList))
	for _, p := range s.payoutList {
		ps := PayoutSnapshot{
			ID: p.id, OrderID: p.orderID, Status: p.status, Amount: p.amount, Currency: p.currency,
			Network: p.network, WalletAddress: p.walletAddress, WebhookURL: p.webhookURL,
			CreatedAt: p.createdAt, UpdatedAt: p.updatedAt,
		}
		if p.paid {
			ps.PaidAmount = decimal.NullDecimal{Decimal: p.paidAmount, Valid: true}
			ps.MerchantAmount = decimal.NullDecimal{Decimal: p.reserved, Valid: true}
		}
		out = append(out, ps)
	}
	return out
}

// Balances returns every balance in the order GET /v1/balance lists them.
func (s *Server) Balances() []BalanceSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]BalanceSnapshot, 0, len(s.balanceKey))
	for _, k := range s.balanceKey {
		out = append(out, BalanceSnapshot{Currency: k.Currency, Network: k.Network, Amount: s.balances[k]})
	}
	return out
}
