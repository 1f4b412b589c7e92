package cryptopaytest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// createPayment handles POST /v1/payment.
func (s *Server) createPayment(w http.ResponseWriter, body []byte) {
	o, rerr := parseObject(body)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	p, rerr := s.readPaymentParams(o)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	s.mu.Lock()
	now := s.Now().Truncate(time.Millisecond)
	p.createdAt, p.updatedAt, p.expiredAt = now, now, now.Add(s.cfg.paymentTTL)
	s.addPaymentLocked(p)
	j := p.json(false, s.cfg.unpaid)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, j)
}

func (s *Server) readPaymentParams(o object) (*payment, *requestError) {
	p := &payment{status: cryptopay.PaymentWaiting}
	var err *requestError
	if p.amount, err = o.amount("amount"); err != nil {
		return nil, err
	}
	if p.feeByUser, err = o.boolean("platformFeeByUser", true); err != nil {
		return nil, err
	}
	if p.currency, err = o.str("currency", true, true); err != nil {
		return nil, err
	}
	if p.network, err = o.str("network", true, false); err != nil {
		return nil, err
	}
	if p.customerID, err = o.str("customerId", true, true); err != nil {
		return nil, err
	}
	if p.customerIP, err = o.str("customerIp", true, true); err != nil {
		return nil, err
	}
	if p.orderID, err = o.str("orderId", true, false); err != nil {
		return nil, err
	}
	if p.additionalData, err = o.optStr("additionalData"); err != nil {
		return nil, err
	}
	if p.webhookURL, err = o.str("webhookUrl", false, false); err != nil {
		return nil, err
	}
	if p.webhookURL != "" {
		if err = checkWebhookURL(p.webhookURL); err != nil {
			return nil, err
		}
	}
	if !s.supported[pair{p.currency, p.network}] {
		return nil, &requestError{http.StatusBadRequest, codeUnsupported,
			fmt.Sprintf("currency %q on network %q is not supported", p.currency, p.network)}
	}
	p.id = uuid.NewString()
	p.fee = p.amount.Mul(s.cfg.feePercent.Shift(-2))
	p.payAmount = p.amount
	if p.feeByUser {
		p.payAmount = p.amount.Add(p.fee)
	}
	p.payAddress = address(p.network, p.id, "pay")
	p.qrURI = qrURI(p.network, p.payAddress, p.payAmount)
	return p, nil
}

// getPayment handles GET /v1/payment/{id}/status.
func (s *Server) getPayment(w http.ResponseWriter, id string) {
	j, ok := s.paymentJSON(id)
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "payment "+id+" not found")
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// paymentJSON reads a payment's status response, expiring it first if due.
func (s *Server) paymentJSON(id string) (paymentJSON, bool) {
	now := s.Now()
	s.mu.RLock()
	p, ok := s.payments[id]
	if !ok {
		s.mu.RUnlock()
		return paymentJSON{}, false
	}
	if !p.expiryDue(now) {
		j := p.json(true, s.cfg.unpaid)
		s.mu.RUnlock()
		return j, true
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(p, now)
	return p.json(true, s.cfg.unpaid), true
}

// expireLocked expires p if it is due. Caller holds s.mu.
func (s *Server) expireLocked(p *payment, now time.Time) {
	if !p.expiryDue(now) {
		return
	}
	s.setPaymentLocked(p, cryptopay.PaymentExpired, now)
}

// addPaymentLocked stores a new payment and queues its expiry. Caller holds
// s.mu; p.expiredAt must be set.
func (s *Server) addPaymentLocked(p *payment) {
	s.payments[p.id] = p
	if p.status == cryptopay.PaymentWaiting {
		s.expiry.add(p)
	}
}

// setPaymentLocked changes status, stamps updatedAt and queues the webhook.
func (s *Server) setPaymentLocked(p *payment, st cryptopay.PaymentStatus, now time.Time) {
	p.status = st
	s.paymentChangedLocked(p, now)
}

func (s *Server) paymentChangedLocked(p *payment, now time.Time) {
	p.updatedAt = now.Truncate(time.Millisecond)
	if p.webhookURL != "" {
		s.wh.enqueue("payment", p.id, string(p.status), p.webhookURL, p.json(true, s.cfg.unpaid))
	}
}

// Pay records amount arriving for the payment: the paid amount accumulates
// and the status becomes paid (paid == payAmount), paid_partial (below) or
// paid_over (above). merchantAmount becomes paidAmount minus the payment's
// fee (never below zero) and the balance of the payment's currency and
// network rises by the difference; paidAddress is set to a deterministic
// sender address. A payment that expired can still be paid (a late
// transfer). Pay refuses a failed or rejected payment (ErrTransition), an
// unknown id (ErrNotFound) and an amount that is not positive (ErrInvalid).
// The webhook is sent.
func (s *Server) Pay(paymentID string, amount decimal.Decimal) error {
	if !amount.IsPositive() {
		return fmt.Errorf("%w: pay amount must be greater than 0, got %s", ErrInvalid, amount)
	}
	now := s.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[paymentID]
	if !ok {
		return fmt.Errorf("%w: payment %s", ErrNotFound, paymentID)
	}
	s.expireLocked(p, now)
	switch p.status {
	case cryptopay.PaymentFailed, cryptopay.PaymentRejected:
		return fmt.Errorf("%w: payment %s is %s and cannot be paid", ErrTransition, paymentID, p.status)
	}
	s.addPaidLocked(p, amount)
	s.setPaymentLocked(p, paidStatus(p.paid, p.payAmount), now)
	return nil
}

// addPaidLocked adds amount to the paid total and credits the merchant.
func (s *Server) addPaidLocked(p *payment, amount decimal.Decimal) {
	p.paid = p.paid.Add(amount)
	merchant := decimal.Max(p.paid.Sub(p.fee), decimal.Zero)
	key := pair{p.currency, p.network}
	s.creditLocked(key, merchant.Sub(p.merchant))
	p.merchant = merchant
	p.everPaid = true
	if p.paidAddress == "" {
		p.paidAddress = address(p.network, p.id, "from")
	}
}

func paidStatus(paid, due decimal.Decimal) cryptopay.PaymentStatus {
	switch paid.Cmp(due) {
	case 0:
		return cryptopay.PaymentPaid
	case -1:
		return cryptopay.PaymentPaidPartial
	}
	return cryptopay.PaymentPaidOver
}

// SetPaymentStatus moves a payment to st as the processor would, and sends
// the webhook. The allowed moves are the SDK's payment lifecycle table
// (cryptopay.PaymentStatus.CanMoveTo), late moves included:
//
//	waiting      -> confirming | locked | failed | rejected | expired | paid | paid_partial | paid_over
//	confirming   -> locked | failed | rejected | paid | paid_partial | paid_over
//	locked       -> confirming | failed | rejected | paid | paid_partial | paid_over
//	expired      -> confirming | locked | paid | paid_partial | paid_over   (a late transfer)
//	paid_partial -> confirming | locked | paid | paid_over                  (the rest arrived)
//	paid         -> paid_over                                               (a transfer on top)
//
// paid pays the outstanding remainder (as Pay would, balance included).
// expired expires the payment now: an expiredAt still in the future moves
// back to the fake's current time (no processor does that: pgstore's
// tracker reports the changed expiredAt as an anomaly; Advance the clock
// past expiredAt to test one).
// paid_partial and paid_over need an amount: they are accepted only when the
// amount already paid matches them; otherwise use Pay. Setting the status a
// payment already has is a no-op. paid_over, failed and rejected are final
// (ErrTransition); an unknown id is ErrNotFound.
func (s *Server) SetPaymentStatus(id string, st cryptopay.PaymentStatus) error {
	return setStatus(s, "payment", id, st, s.findPaymentLocked, s.movePaymentLocked)
}

// findPaymentLocked looks a payment up for setStatus, expiring it first if
// due. Caller holds s.mu.
func (s *Server) findPaymentLocked(id string, now time.Time) (*payment, cryptopay.PaymentStatus, bool) {
	p, ok := s.payments[id]
	if !ok {
		return nil, "", false
	}
	s.expireLocked(p, now)
	return p, p.status, true
}

// movePaymentLocked makes a move setStatus allowed. Caller holds s.mu.
func (s *Server) movePaymentLocked(p *payment, st cryptopay.PaymentStatus, now time.Time) error {
	switch st {
	case cryptopay.PaymentPaid:
		if p.paid.GreaterThan(p.payAmount) {
			return fmt.Errorf("%w: payment %s has %s paid, more than payAmount %s: it is paid_over, not paid",
				ErrTransition, p.id, p.paid, p.payAmount)
		}
		if rest := p.payAmount.Sub(p.paid); rest.IsPositive() {
			s.addPaidLocked(p, rest)
		}
	case cryptopay.PaymentExpired:
		// Expired now, not at the time it was given: a forced expiry moves
		// expiredAt back, so the payment never reads expired before it.
		if p.expiredAt.After(now) {
			p.expiredAt = now
		}
	case cryptopay.PaymentPaidPartial, cryptopay.PaymentPaidOver:
		if !p.paid.IsPositive() || paidStatus(p.paid, p.payAmount) != st {
			return fmt.Errorf("%w: payment %s has %s of %s paid; use Pay with an amount to make it %s",
				ErrTransition, p.id, p.paid, p.payAmount, st)
		}
	}
	s.setPaymentLocked(p, st, now)
	return nil
}

// PaymentStatus returns the payment's current status as the server holds
// it (expiring it first if due).
func (s *Server) PaymentStatus(id string) (cryptopay.PaymentStatus, error) {
	j, ok := s.paymentJSON(id)
	if !ok {
		return "", fmt.Errorf("%w: payment %s", ErrNotFound, id)
	}
	return cryptopay.PaymentStatus(j.Status), nil
}

// PaymentCount returns how many payments have been created.
func (s *Server) PaymentCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.payments)
}
