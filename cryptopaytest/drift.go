package cryptopaytest

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// The drifts a books check must find, made on purpose: each is something
// a real processor (or a person at it) could do behind the merchant's
// back. None sends a webhook: the merchant learns of it only by looking.

// DuplicatePayout creates a second payout with the payout id's orderId,
// wallet, amount, currency and network, as if it had been sent outside
// the merchant's payout queue (a second system, a person at the
// processor's console): a double payment. It is listed after the
// payouts created before it, in status created, and takes from the
// balance what a create takes. It returns the new payout's id; an
// unknown id is ErrNotFound.
func (s *Server) DuplicatePayout(id string) (string, error) {
	now := s.Now().Truncate(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payouts[id]
	if !ok {
		return "", fmt.Errorf("%w: payout %s", ErrNotFound, id)
	}
	d := *p
	d.id, d.status, d.paid = uuid.NewString(), cryptopay.PayoutCreated, false
	if !d.createdAt.Before(now) {
		now = d.createdAt.Add(time.Millisecond) // another createdAt: the list tells them apart
	}
	d.createdAt, d.updatedAt = now, now
	s.creditLocked(pair{d.currency, d.network}, d.reserved.Neg())
	s.payouts[d.id] = &d
	s.payoutList = append(s.payoutList, &d)
	return d.id, nil
}

// SetPayoutAmount changes the amount the processor reports for a payout
// (in the list and its status), as a processor that altered it would;
// the balance and what the wallet receives are left as they were. An
// amount that is not positive is ErrInvalid; an unknown id ErrNotFound.
func (s *Server) SetPayoutAmount(id string, amount decimal.Decimal) error {
	if !amount.IsPositive() {
		return fmt.Errorf("%w: payout amount must be greater than 0, got %s", ErrInvalid, amount)
	}
	return editLocked(s, s.payouts, "payout", id, func(p *payout) { p.amount = amount })
}

// editLocked runs f on the object of id in m with s.mu held; an unknown id
// is ErrNotFound naming kind.
func editLocked[T any](s *Server, m map[string]*T, kind, id string, f func(*T)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := m[id]
	if !ok {
		return fmt.Errorf("%w: %s %s", ErrNotFound, kind, id)
	}
	f(v)
	return nil
}

// LosePayout makes the processor forget a payout: it leaves the list and
// its status reads 404, while what it took from the balance stays taken.
// An unknown id is ErrNotFound.
func (s *Server) LosePayout(id string) error {
	return editLocked(s, s.payouts, "payout", id, func(p *payout) {
		delete(s.payouts, id)
		s.payoutList = slices.DeleteFunc(s.payoutList, func(q *payout) bool { return q == p })
	})
}

// DebitBalance takes amount from the balance of a currency and network
// pair by hand, with no payout behind it (a fee nobody announced, a
// person at the processor's console); a negative amount credits it.
func (s *Server) DebitBalance(currency, network string, amount decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creditLocked(pair{currency, network}, amount.Neg())
}

// SetPaidAmount sets the amount the processor reports paid on a payment,
// up or down, without a status change or a webhook: merchantAmount
// follows (the paid amount minus the payment's fee, never below zero) and
// the balance moves by merchantAmount's change, as Pay's would. A
// negative amount is ErrInvalid; an unknown id ErrNotFound.
func (s *Server) SetPaidAmount(paymentID string, paid decimal.Decimal) error {
	if paid.IsNegative() {
		return fmt.Errorf("%w: paid amount must not be negative, got %s", ErrInvalid, paid)
	}
	return editLocked(s, s.payments, "payment", paymentID, func(p *payment) { s.addPaidLocked(p, paid.Sub(p.paid)) })
}

// The control API's form of the drifts (see ControlHandler).
