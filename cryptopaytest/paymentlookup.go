package cryptopaytest

import "sort"

// PaymentIDsWithOrderID returns the ids of the payments created with
// orderID, oldest first. The API has no such search; this is the test's
// stand-in for the customer who holds the payment link after the
// merchant's create answer was lost.
func (s *Server) PaymentIDsWithOrderID(orderID string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []*payment
	for _, p := range s.payments {
		if p.orderID == orderID {
			found = append(found, p)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].createdAt.Before(found[j].createdAt) })
	ids := make([]string, len(found))
	for i, p := range found {
		ids[i] = p.id
	}
	return ids
}
