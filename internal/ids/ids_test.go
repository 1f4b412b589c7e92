package ids

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPayment(t *testing.T) {
	tests := []struct{ name, id, want string }{
		{"canonical", "0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a", ""},
		{"upper case", "0B9E2C4A-5F1D-4C3B-9A8E-7D6F5E4C3B2A", ""},
		{"empty", "", "payment id is empty"},
		{"no dashes", "0b9e2c4a5f1d4c3b9a8e7d6f5e4c3b2a", "payment id is not a UUID"},
		{"braces", "{0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a}", "payment id is not a UUID"},
		{"urn", "urn:uuid:0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a", "payment id is not a UUID"},
		{"36 bytes, not hex", "zb9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a", "payment id is not a UUID"},
		{"order id", "order-1", "payment id is not a UUID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Payment(tt.id))
		})
	}
}

func TestPayout(t *testing.T) {
	tests := []struct{ name, id, want string }{
		{"plain", "po_123", ""},
		{"slash and space are sent escaped", "a/b c", ""},
		{"dots inside", "a..b", ""},
		{"at the bound", strings.Repeat("x", MaxPayoutIDLen), ""},
		{"empty", "", "payout id is empty"},
		{"over the bound", strings.Repeat("x", MaxPayoutIDLen+1), "payout id is longer than 256 bytes"},
		{"dot", ".", `payout id "." would be read as a path step, not an id`},
		{"dot dot", "..", `payout id ".." would be read as a path step, not an id`},
		{"newline", "po\n1", "payout id contains a control character"},
		{"NUL", "po\x001", "payout id contains a control character"},
		{"C1 control", "po\u00851", "payout id contains a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Payout(tt.id))
		})
	}
}

func TestPaymentKey(t *testing.T) {
	tests := []struct{ id, want string }{
		{"0B9E2C4A-5F1D-4C3B-9A8E-7D6F5E4C3B2A", "0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a"},
		{"0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a", "0b9e2c4a-5f1d-4c3b-9a8e-7d6f5e4c3b2a"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, PaymentKey(tt.id))
		assert.Equal(t, PaymentKey(tt.id), PaymentKey(strings.ToUpper(tt.id)), "case must not change the key")
	}
}
