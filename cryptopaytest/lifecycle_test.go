package cryptopaytest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

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
