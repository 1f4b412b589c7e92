package cryptopaytest

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// newStateT builds a Server's state without a listener or sweeper.
func newStateT(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	require.Empty(t, cfg.errs)
	s := newState(cfg)
	t.Cleanup(func() { s.wh.close(); s.wh.wait() })
	return s
}

const internalPaymentBody = `{"amount":1,"platformFeeByUser":false,"currency":"usdt","network":"tron",
	"customerId":"c","customerIp":"127.0.0.1","orderId":"o"}`

// mustCreatePayment creates a payment through the route's handler and
// returns its id.
func mustCreatePayment(t testing.TB, s *Server, body string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.createPayment(rec, []byte(body))
	require.Equal(t, 201, rec.Code, rec.Body.String())
	var out struct {
		PaymentID string `json:"paymentId"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out.PaymentID
}

func TestExpiryQueueExpiresOnlyDue(t *testing.T) {
	tests := []struct {
		name    string
		created int
		advance time.Duration // after the last creation
		wantDue int
	}{
		{"none due", 10, 0, 0},
		{"earliest three", 10, DefaultPaymentTTL - 7*time.Minute + time.Millisecond, 3},
		{"all", 10, DefaultPaymentTTL, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStateT(t, WithStartTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
			s.clock.realStart = time.Now().Add(time.Hour) // freeze real time out of the way
			var ids []string
			for i := range tt.created {
				if i > 0 {
					s.clock.offset.Add(int64(time.Minute))
				}
				ids = append(ids, mustCreatePayment(t, s, internalPaymentBody))
			}
			// One of the due ones is paid first: its entry must be dropped
			// without changing it.
			if tt.wantDue > 0 {
				require.NoError(t, s.Pay(ids[0], decimal.NewFromInt(1)))
			}
			s.Advance(tt.advance)
			s.mu.RLock()
			defer s.mu.RUnlock()
			assert.Len(t, s.expiry, tt.created-tt.wantDue, "due entries leave the queue, others stay")
			for i, id := range ids {
				want := cryptopay.PaymentWaiting
				switch {
				case i == 0 && tt.wantDue > 0:
					want = cryptopay.PaymentPaid
				case i < tt.wantDue:
					want = cryptopay.PaymentExpired
				}
				assert.Equal(t, want, s.payments[id].status, "payment %d", i)
			}
		})
	}
}

// BenchmarkExpireDueIdle is one sweeper tick on a fake holding many waiting
// payments of which none is due: it must not depend on how many there are.
func BenchmarkExpireDueIdle(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := newStateT(b)
			(&scaleFake{s: s}).addPayments(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.expireDue()
			}
		})
	}
}
