package main

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func TestStatusClass(t *testing.T) {
	tests := []struct {
		terminal, success, action bool
		want                      string
	}{
		{false, false, false, "in progress"},
		{true, false, false, "terminal, not a success"},
		{true, true, false, "terminal, success"},
		{true, false, true, "terminal, not a success; needs a person"},
		{false, false, true, "in progress; needs a person"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, statusClass(tt.terminal, tt.success, tt.action))
		})
	}
	assert.Equal(t, "terminal, success", paymentClass(cryptopay.PaymentPaid))
	assert.Equal(t, "in progress", paymentClass(cryptopay.PaymentWaiting))
	assert.Equal(t, "terminal, success", payoutClass(cryptopay.PayoutPaid))
}

func TestMoneyAndTimeText(t *testing.T) {
	tiny := decimal.New(1, -30)
	assert.Equal(t, "0.000000000000000000000000000001", money(tiny), "exact, no exponent")
	assert.Equal(t, "12.5", money(decimal.RequireFromString("12.50")))
	assert.Equal(t, "", nullMoney(decimal.NullDecimal{}), "absent")
	assert.Equal(t, "0", nullMoney(decimal.NewNullDecimal(decimal.Zero)), "zero is not absent")
	assert.Equal(t, "", when(time.Time{}))
	at := time.Date(2026, 11, 25, 21, 30, 0, 500, time.FixedZone("CET", 3600))
	assert.Equal(t, "2026-11-25T20:30:00.0000005Z", when(at), "UTC, RFC 3339 with its fraction")
}

func TestCell(t *testing.T) {
	a := &app{secrets: []string{"sk_live_Q7wX2pL9vR4tY8nB"}, dbSecrets: []string{"postgres://u:hunter2@db/x"}}
	tests := []struct{ name, in, want string }{
		{"empty is a dash", "", "-"},
		{"plain", "usdt", "usdt"},
		{"tab and line break", "a\tb\nc", "a b c"},
		{"escape sequence", "x\x1b[2Jy", "x [2Jy"},
		{"the key", "echo sk_live_Q7wX2pL9vR4tY8nB", "echo [REDACTED]"},
		{"the database URL", "dial postgres://u:hunter2@db/x failed", "dial [REDACTED] failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, a.cell(tt.in))
		})
	}
}
