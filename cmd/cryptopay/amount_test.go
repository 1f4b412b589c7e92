package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in, want string
		err      error // nil: accepted
	}{
		{"10.5", "10.5", nil},
		{"0.000000000000000001", "0.000000000000000001", nil},
		{"123456789012", "123456789012", nil},
		{"+7", "7", nil},
		{"-5", "-5", nil}, // the sign is read; a payout's Validate refuses it
		{".5", "0.5", nil},
		{"1.23457E+11", "", errExponent},
		{"1e100", "", errExponent},
		{"1.23457E-06", "", errExponent},
		{"2E3", "", errExponent},
		{"1e", "", errNotDecimal},
		{"e5", "", errNotDecimal},
		{"NaN", "", errNotDecimal},
		{"Inf", "", errNotDecimal},
		{"1,5", "", errNotDecimal},
		{"1 000", "", errNotDecimal},
		{" 10", "", errNotDecimal},
		{"1.2.3", "", errNotDecimal},
		{"", "", errNotDecimal},
		{"-", "", errNotDecimal},
		{"0x10", "", errNotDecimal},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := parseAmount(tt.in)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.String())
		})
	}
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"10.5", "1.23457E+11", "1e100", "-0", "+.5", "9" + string(make([]byte, 200))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseAmount(s)
		if err != nil {
			return
		}
		for _, c := range s {
			if c == 'e' || c == 'E' {
				t.Fatalf("%q accepted with an exponent as %s", s, d)
			}
		}
	})
}

// payment create and payout create take plain decimals only: an exponent
// is refused with the reason, before anything is sent.
func TestCreateRefusesExponentAmounts(t *testing.T) {
	for _, base := range [][]string{paymentCreateArgs, append(payoutCreateArgs, "--yes")} {
		for _, amount := range []string{"1.23457E+11", "1e100", "1.23457E-06"} {
			t.Run(base[0]+"/"+amount, func(t *testing.T) {
				f := setup(t)
				args := append([]string(nil), base...)
				for i := range args {
					if args[i] == "--amount" {
						args[i+1] = amount
					}
				}
				r := f.run(args...)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Contains(t, r.stderr, "has an exponent")
				assert.Contains(t, r.stderr, "spreadsheet")
				assert.Zero(t, f.srv.PaymentCount()+f.srv.PayoutCount(), "nothing was created")
			})
		}
	}
}
