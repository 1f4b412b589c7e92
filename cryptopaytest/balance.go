package cryptopaytest

import (
	"net/http"

	"github.com/shopspring/decimal"
)

// creditLocked adds delta (which may be negative) to a balance. Caller
// holds s.mu.
func (s *Server) creditLocked(key pair, delta decimal.Decimal) {
	if delta.IsZero() {
		return
	}
	if _, ok := s.balances[key]; !ok {
		s.balanceKey = append(s.balanceKey, key)
	}
	s.balances[key] = s.balances[key].Add(delta)
}

// SetBalance sets the merchant's balance of a currency and network pair.
// It does not check the pair against the supported currencies.
func (s *Server) SetBalance(currency, network string, amount decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := pair{currency, network}
	if _, ok := s.balances[key]; !ok {
		s.balanceKey = append(s.balanceKey, key)
	}
	s.balances[key] = amount
}

// Balance returns the merchant's balance of a currency and network pair
// (zero for a pair the server has never seen).
func (s *Server) Balance(currency, network string) decimal.Decimal {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.balances[pair{currency, network}]
}

// getBalances handles GET /v1/balance: one entry per pair, supported pairs
// first in their configured order.
func (s *Server) getBalances(w http.ResponseWriter) {
	s.mu.RLock()
	out := make([]balanceJSON, 0, len(s.balanceKey))
	for _, k := range s.balanceKey {
		out = append(out, balanceJSON{Currency: k.Currency, Network: k.Network, Amount: number(s.balances[k])})
	}
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, out)
}
