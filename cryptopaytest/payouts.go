package cryptopaytest

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// createPayout handles POST /v1/payout.
func (s *Server) createPayout(w http.ResponseWriter, body []byte) {
	o, rerr := parseObject(body)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	p, rerr := s.readPayoutParams(o)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	s.mu.Lock()
	key := pair{p.currency, p.network}
	if have := s.balances[key]; have.LessThan(p.reserved) {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, codeInsufficient,
			fmt.Sprintf("balance %s %s/%s is below the %s this payout needs", have, p.currency, p.network, p.reserved))
		return
	}
	s.creditLocked(key, p.reserved.Neg())
	now := s.Now().Truncate(time.Millisecond)
	p.createdAt, p.updatedAt = now, now
	s.payouts[p.id] = p
	s.payoutList = append(s.payoutList, p)
	j := p.json(false, s.cfg.unpaid)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) readPayoutParams(o object) (*payout, *requestError) {
	p := &payout{status: cryptopay.PayoutCreated}
	var err *requestError
	if p.walletAddress, err = o.str("walletAddress", true, true); err != nil {
		return nil, err
	}
	if p.feeByUser, err = o.boolean("networkFeeByUser", false); err != nil {
		return nil, err
	}
	if p.amount, err = o.amount("amount"); err != nil {
		return nil, err
	}
	if p.currency, err = o.str("currency", true, true); err != nil {
		return nil, err
	}
	if p.network, err = o.str("network", true, true); err != nil {
		return nil, err
	}
	if p.customerID, err = o.str("customerId", true, true); err != nil {
		return nil, err
	}
	if p.customerIP, err = o.str("customerIp", true, true); err != nil {
		return nil, err
	}
	if p.orderID, err = o.str("orderId", true, true); err != nil {
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
	fee := p.amount.Mul(s.cfg.networkFeePercent.Shift(-2))
	if p.feeByUser {
		p.reserved, p.paidAmount = p.amount, p.amount.Sub(fee)
	} else {
		p.reserved, p.paidAmount = p.amount.Add(fee), p.amount
	}
	p.id = uuid.NewString()
	return p, nil
}

// getPayout handles GET /v1/payout/{id}/status.
func (s *Server) getPayout(w http.ResponseWriter, id string) {
	s.mu.RLock()
	p, ok := s.payouts[id]
	var j payoutJSON
	if ok {
		j = p.json(true, s.cfg.unpaid)
	}
	s.mu.RUnlock()
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "payout "+id+" not found")
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// listPayouts handles GET /v1/payout/list?limit=&offset=: payouts in
// creation order, limit DefaultListLimit by default and at most
// MaxListLimit, offset 0 by default; count is the total.
func (s *Server) listPayouts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, rerr := queryInt(q, "limit", DefaultListLimit, 1)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	offset, rerr := queryInt(q, "offset", 0, 0)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	limit = min(limit, MaxListLimit)
	out := payoutListJSON{Payout: []payoutListItemJSON{}}
	s.mu.RLock()
	list := s.listedPayoutsLocked()
	out.Count = len(list)
	if offset < len(list) {
		for _, p := range list[offset:min(offset+limit, len(list))] {
			out.Payout = append(out.Payout, p.listItem(s.cfg.unpaid))
		}
	}
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, out)
}

// listedPayoutsLocked returns the payouts the list shows: all of them, or
// with WithPayoutListLag those created at least the lag ago (payoutList is
// in creation order, so they are a prefix). Needs s.mu.
func (s *Server) listedPayoutsLocked() []*payout {
	lag := s.cfg.payoutListLag
	if lag <= 0 {
		return s.payoutList
	}
	cutoff := s.Now().Add(-lag)
	n := sort.Search(len(s.payoutList), func(i int) bool { return s.payoutList[i].createdAt.After(cutoff) })
	return s.payoutList[:n]
}

func queryInt(q url.Values, key string, def, minimum int) (int, *requestError) {
	v := q.Get(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minimum {
		return 0, badRequest("%s must be an integer >= %d", key, minimum)
	}
	return n, nil
}

// SetPayoutStatus moves a payout to st and sends the webhook. The allowed
// moves are the SDK's payout lifecycle table
// (cryptopay.PayoutStatus.CanMoveTo):
//
//	created    -> review | processing | failed | cancelled
//	review     -> processing | failed | cancelled
//	processing -> confirming | paid | failed
//	confirming -> paid | failed
//
// paid sets paidAmount and merchantAmount. failed and cancelled give the
// reserved amount back to the balance. paid, failed and cancelled are final.
// Setting the status a payout already has is a no-op; any other move is an
// error matching ErrTransition that names both statuses; an unknown id is
// ErrNotFound.
func (s *Server) SetPayoutStatus(id string, st cryptopay.PayoutStatus) error {
	return setStatus(s, "payout", id, st,
		func(id string, _ time.Time) (*payout, cryptopay.PayoutStatus, bool) {
			p, ok := s.payouts[id]
			if !ok {
				return nil, "", false
			}
			return p, p.status, true
		}, s.movePayoutLocked)
}

// movePayoutLocked makes a move setStatus allowed. Caller holds s.mu.
func (s *Server) movePayoutLocked(p *payout, st cryptopay.PayoutStatus, now time.Time) error {
	switch st {
	case cryptopay.PayoutPaid:
		p.paid = true
	case cryptopay.PayoutFailed, cryptopay.PayoutCancelled:
		s.creditLocked(pair{p.currency, p.network}, p.reserved)
	}
	p.status = st
	p.updatedAt = now.Truncate(time.Millisecond)
	if p.webhookURL != "" {
		s.wh.enqueue("payout", p.id, string(p.status), p.webhookURL, p.json(true, s.cfg.unpaid))
	}
	return nil
}

// PayoutStatus returns the payout's current status as the server holds it.
func (s *Server) PayoutStatus(id string) (cryptopay.PayoutStatus, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.payouts[id]
	if !ok {
		return "", fmt.Errorf("%w: payout %s", ErrNotFound, id)
	}
	return p.status, nil
}

// PayoutCount returns how many payouts have been created.
func (s *Server) PayoutCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.payoutList)
}

// PayoutsWithOrderID returns how many payouts were created with orderID.
// The server does not deduplicate, so a payout sent twice counts 2: the
// no-double-payout tests assert it is 1.
func (s *Server) PayoutsWithOrderID(orderID string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, p := range s.payoutList {
		if p.orderID == orderID {
			n++
		}
	}
	return n
}

// PayoutIDsWithOrderID returns the ids of the payouts created with orderID,
// in creation order.
func (s *Server) PayoutIDsWithOrderID(orderID string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
	for _, p := range s.payoutList {
		if p.orderID == orderID {
			ids = append(ids, p.id)
		}
	}
	return ids
}
