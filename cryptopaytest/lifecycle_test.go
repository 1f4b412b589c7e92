package cryptopaytest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func paymentWith(amount string, feeByUser bool) string {
	return fmt.Sprintf(`{"amount":%s,"platformFeeByUser":%t,"currency":"usdt","network":"tron",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o"}`, amount, feeByUser)
}

func TestPayAmounts(t *testing.T) {
	tests := []struct {
		name      string
		feeByUser bool
		pays      []string
		status    cryptopay.PaymentStatus
		paid      string
		merchant  string
	}{
		// amount 100, fee 1%: fee 1; payAmount 101 (user) or 100 (merchant).
		{"exact, user pays fee", true, []string{"101"}, cryptopay.PaymentPaid, "101", "100"},
		{"exact, merchant pays fee", false, []string{"100"}, cryptopay.PaymentPaid, "100", "99"},
		{"partial", true, []string{"50"}, cryptopay.PaymentPaidPartial, "50", "49"},
		{"partial below the fee", false, []string{"0.5"}, cryptopay.PaymentPaidPartial, "0.5", "0"},
		{"over", true, []string{"150.5"}, cryptopay.PaymentPaidOver, "150.5", "149.5"},
		{"partial then rest", true, []string{"1", "100"}, cryptopay.PaymentPaid, "101", "100"},
		{"three small parts", false, []string{"0.1", "0.2", "99.7"}, cryptopay.PaymentPaid, "100", "99"},
		{"paid then more", false, []string{"100", "0.00000001"}, cryptopay.PaymentPaidOver, "100.00000001", "99.00000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("0")))
			id := createPayment(t, s, paymentWith("100", tt.feeByUser))
			for _, a := range tt.pays {
				require.NoError(t, s.Pay(id, dec(a)))
			}
			m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
			assert.Equal(t, string(tt.status), m["status"])
			assert.True(t, num(t, m, "paidAmount").Equal(dec(tt.paid)), "paid %v", m["paidAmount"])
			assert.True(t, num(t, m, "merchantAmount").Equal(dec(tt.merchant)), "merchant %v", m["merchantAmount"])
			assert.True(t, s.Balance("usdt", "tron").Equal(dec(tt.merchant)), "balance %s", s.Balance("usdt", "tron"))
		})
	}
}

func TestPayRefusals(t *testing.T) {
	s := newServer(t)
	id := createPayment(t, s, paymentBody)
	assert.ErrorIs(t, s.Pay(id, dec("0")), cryptopaytest.ErrInvalid)
	assert.ErrorIs(t, s.Pay(id, dec("-1")), cryptopaytest.ErrInvalid)
	assert.ErrorIs(t, s.Pay("nope", dec("1")), cryptopaytest.ErrNotFound)
	for _, st := range []cryptopay.PaymentStatus{cryptopay.PaymentFailed, cryptopay.PaymentRejected} {
		id := createPayment(t, s, paymentBody)
		require.NoError(t, s.SetPaymentStatus(id, st))
		err := s.Pay(id, dec("1"))
		assert.ErrorIs(t, err, cryptopaytest.ErrTransition)
		assert.Contains(t, err.Error(), string(st))
	}
}

func TestExpiryAndLatePayment(t *testing.T) {
	s := newServer(t, cryptopaytest.WithPaymentTTL(time.Hour))
	id := createPayment(t, s, paymentBody)
	before := s.Now()
	s.Advance(59 * time.Minute)
	st, err := s.PaymentStatus(id)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, st)
	assert.GreaterOrEqual(t, s.Now().Sub(before), 59*time.Minute)

	s.Advance(time.Minute)
	m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "expired", m["status"])
	assert.True(t, num(t, m, "paidAmount").IsZero(), "nothing paid yet")

	// A late transfer still lands.
	require.NoError(t, s.Pay(id, dec("10.1")))
	m = call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "paid", m["status"])

	// A paid payment never expires.
	s.Advance(48 * time.Hour)
	st, _ = s.PaymentStatus(id)
	assert.Equal(t, cryptopay.PaymentPaid, st)
	s.Advance(-time.Hour) // ignored
}

func TestExpiryIsLazyOnRead(t *testing.T) {
	// The clock moves with real time too: a tiny TTL expires on the next read.
	s := newServer(t, cryptopaytest.WithPaymentTTL(time.Millisecond))
	id := createPayment(t, s, paymentBody)
	time.Sleep(5 * time.Millisecond)
	m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "expired", m["status"])
}

func TestSetPaymentStatus(t *testing.T) {
	type step struct {
		to      cryptopay.PaymentStatus
		pay     string // Pay this first
		wantErr error
	}
	tests := []struct {
		name  string
		steps []step
		final cryptopay.PaymentStatus
		paid  string
	}{
		{"confirming then paid", []step{{to: "confirming"}, {to: "paid"}}, "paid", "10.1"},
		{"locked then rejected", []step{{to: "locked"}, {to: "rejected"}}, "rejected", "0"},
		{"expired then paid late", []step{{to: "expired"}, {to: "paid"}}, "paid", "10.1"},
		{"partial then paid pays the rest", []step{{pay: "4", to: "paid_partial"}, {to: "paid"}}, "paid", "10.1"},
		{"same status is a no-op", []step{{to: "waiting"}}, "waiting", "0"},
		{"paid is final", []step{{to: "paid"}, {to: "failed", wantErr: cryptopaytest.ErrTransition}}, "paid", "10.1"},
		{"failed is final", []step{{to: "failed"}, {to: "paid", wantErr: cryptopaytest.ErrTransition}}, "failed", "0"},
		{"rejected is final", []step{{to: "rejected"}, {to: "waiting", wantErr: cryptopaytest.ErrTransition}}, "rejected", "0"},
		{"no way back to waiting", []step{{to: "confirming"}, {to: "waiting", wantErr: cryptopaytest.ErrTransition}}, "confirming", "0"},
		{"paid_partial needs an amount", []step{{to: "paid_partial", wantErr: cryptopaytest.ErrTransition}}, "waiting", "0"},
		{"paid_over needs an amount", []step{{to: "paid_over", wantErr: cryptopaytest.ErrTransition}}, "waiting", "0"},
		{"paid refused when overpaid", []step{{pay: "20", to: "paid", wantErr: cryptopaytest.ErrTransition}}, "paid_over", "20"},
		{"unknown status", []step{{to: "done", wantErr: cryptopaytest.ErrInvalid}}, "waiting", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			id := createPayment(t, s, paymentBody)
			for _, st := range tt.steps {
				if st.pay != "" {
					require.NoError(t, s.Pay(id, dec(st.pay)))
				}
				err := s.SetPaymentStatus(id, st.to)
				if st.wantErr != nil {
					assert.ErrorIs(t, err, st.wantErr)
				} else {
					require.NoError(t, err)
				}
			}
			m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
			assert.Equal(t, string(tt.final), m["status"])
			if tt.paid != "0" {
				assert.True(t, num(t, m, "paidAmount").Equal(dec(tt.paid)), "paid %v", m["paidAmount"])
			}
		})
	}
	s := newServer(t)
	assert.ErrorIs(t, s.SetPaymentStatus("nope", "paid"), cryptopaytest.ErrNotFound)
	_, err := s.PaymentStatus("nope")
	assert.ErrorIs(t, err, cryptopaytest.ErrNotFound)
}

func TestPayoutTransitions(t *testing.T) {
	tests := []struct {
		path    []cryptopay.PayoutStatus
		refused cryptopay.PayoutStatus // the last step must be refused, if set
	}{
		{path: []cryptopay.PayoutStatus{"processing", "paid"}},
		{path: []cryptopay.PayoutStatus{"review", "processing", "confirming", "paid"}},
		{path: []cryptopay.PayoutStatus{"review", "cancelled"}},
		{path: []cryptopay.PayoutStatus{"review", "failed"}},
		{path: []cryptopay.PayoutStatus{"processing", "confirming", "failed"}},
		{path: []cryptopay.PayoutStatus{"cancelled"}},
		{path: []cryptopay.PayoutStatus{"paid"}, refused: "paid"},
		{path: []cryptopay.PayoutStatus{"confirming"}, refused: "confirming"},
		{path: []cryptopay.PayoutStatus{"processing", "cancelled"}, refused: "cancelled"},
		{path: []cryptopay.PayoutStatus{"processing", "review"}, refused: "review"},
		{path: []cryptopay.PayoutStatus{"processing", "paid", "failed"}, refused: "failed"},
		{path: []cryptopay.PayoutStatus{"cancelled", "processing"}, refused: "processing"},
		{path: []cryptopay.PayoutStatus{"processing", "failed", "paid"}, refused: "paid"},
		{path: []cryptopay.PayoutStatus{"processing", "created"}, refused: "created"},
	}
	for _, tt := range tests {
		var names []string
		for _, p := range tt.path {
			names = append(names, string(p))
		}
		t.Run(strings.Join(names, ">"), func(t *testing.T) {
			s := newServer(t)
			id := createPayout(t, s, payoutBody)
			for i, st := range tt.path {
				err := s.SetPayoutStatus(id, st)
				if i == len(tt.path)-1 && tt.refused != "" {
					require.ErrorIs(t, err, cryptopaytest.ErrTransition)
					assert.Contains(t, err.Error(), string(st))
					return
				}
				require.NoError(t, err)
			}
			got, err := s.PayoutStatus(id)
			require.NoError(t, err)
			assert.Equal(t, tt.path[len(tt.path)-1], got)
		})
	}
	s := newServer(t)
	id := createPayout(t, s, payoutBody)
	assert.NoError(t, s.SetPayoutStatus(id, "created"), "same status is a no-op")
	assert.ErrorIs(t, s.SetPayoutStatus(id, "sent"), cryptopaytest.ErrInvalid)
	assert.ErrorIs(t, s.SetPayoutStatus("nope", "paid"), cryptopaytest.ErrNotFound)
	_, err := s.PayoutStatus("nope")
	assert.ErrorIs(t, err, cryptopaytest.ErrNotFound)
}

func TestPayoutBalances(t *testing.T) {
	tests := []struct {
		final     cryptopay.PayoutStatus
		feeByUser bool
		balance   string // after the final status, starting from 100
		paid      string
		merchant  string
	}{
		{"paid", true, "90", "9.95", "10"},
		{"paid", false, "89.95", "10", "10.05"},
		{"failed", true, "100", "", ""},
		{"cancelled", false, "100", "", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/feeByUser=%t", tt.final, tt.feeByUser), func(t *testing.T) {
			s := newServer(t, cryptopaytest.WithBalance("eth", "eth", dec("100")))
			body := fmt.Sprintf(`{"walletAddress":"0xabc","networkFeeByUser":%t,"amount":"10","currency":"eth","network":"eth",
				"customerId":"c","customerIp":"1.2.3.4","orderId":"o"}`, tt.feeByUser)
			id := createPayout(t, s, body)
			if tt.feeByUser {
				assert.True(t, s.Balance("eth", "eth").Equal(dec("90")))
			} else {
				assert.True(t, s.Balance("eth", "eth").Equal(dec("89.95")))
			}
			if tt.final != "cancelled" {
				require.NoError(t, s.SetPayoutStatus(id, "processing"))
			}
			require.NoError(t, s.SetPayoutStatus(id, tt.final))
			assert.True(t, s.Balance("eth", "eth").Equal(dec(tt.balance)), "balance %s", s.Balance("eth", "eth"))
			m := call(t, s, "GET", "/v1/payout/"+id+"/status", "").obj(t)
			if tt.paid == "" {
				assert.True(t, num(t, m, "paidAmount").IsZero(), "never paid")
				return
			}
			assert.True(t, num(t, m, "paidAmount").Equal(dec(tt.paid)))
			assert.True(t, num(t, m, "merchantAmount").Equal(dec(tt.merchant)))
			list := call(t, s, "GET", "/v1/payout/list", "").obj(t)["payout"].([]any)
			assert.Equal(t, tt.merchant, list[0].(map[string]any)["merchantAmount"].(fmt.Stringer).String())
		})
	}
}

func TestInsufficientFundsExactEdge(t *testing.T) {
	s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("25")), cryptopaytest.WithNetworkFeePercent(dec("0")))
	createPayout(t, s, payoutBody) // exactly the balance
	assert.True(t, s.Balance("usdt", "tron").IsZero())
	r := call(t, s, "POST", "/v1/payout", payoutBody)
	assert.Equal(t, 400, r.Status)
	assert.Equal(t, "insufficient_funds", r.obj(t)["code"])
	s.SetBalance("usdt", "tron", dec("25"))
	createPayout(t, s, payoutBody)
	assert.Equal(t, 2, s.PayoutsWithOrderID("po-1"), "the fake never deduplicates by orderId")
	assert.Len(t, s.PayoutIDsWithOrderID("po-1"), 2)
	assert.Equal(t, 0, s.PayoutsWithOrderID("other"))
}
