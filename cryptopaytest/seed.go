package cryptopaytest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// SeedPayouts adds n payouts at once, as if they had been created over the
// API one after another, so that a test can build a large account (100,000
// payouts) in well under a second. Payout i (from 0) has orderId
// orderIDPrefix+i, status created, amount 1 usdt on tron, and createdAt
// Now() - (n-i)*step (truncated to milliseconds): the seeded payouts are
// listed before, and are older than, every payout created afterwards.
// Balances are not debited and no webhooks are sent. step must be at least
// a millisecond so that createdAt tells them apart.
func (s *Server) SeedPayouts(n int, orderIDPrefix string, step time.Duration) error {
	if n < 0 || step < time.Millisecond {
		return fmt.Errorf("%w: SeedPayouts(%d, %q, %s): n must not be negative and step must be at least 1ms", ErrInvalid, n, orderIDPrefix, step)
	}
	now := s.Now()
	wallet := address("tron", orderIDPrefix, "seed") // one valid address for all: computed once
	seeded := make([]*payout, n)
	for i := range seeded {
		at := now.Add(-time.Duration(n-i) * step).Truncate(time.Millisecond)
		seeded[i] = &payout{
			id: uuid.NewString(), status: cryptopay.PayoutCreated, amount: decimal.NewFromInt(1),
			walletAddress: wallet, currency: "usdt", network: "tron",
			customerID: "seed", customerIP: "192.0.2.1", orderID: orderIDPrefix + strconv.Itoa(i),
			createdAt: at, updatedAt: at, reserved: decimal.NewFromInt(1),
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range seeded {
		s.payouts[p.id] = p
	}
	s.payoutList = append(s.payoutList, seeded...)
	return nil
}
