package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeAmount(t *testing.T) {
	tests := []struct {
		in      string
		valid   bool
		want    string
		wantErr error
	}{
		{``, false, "0", nil},
		{`null`, false, "0", nil},
		{`""`, false, "0", nil},
		{`" "`, false, "0", nil},
		{`0.1`, true, "0.1", nil},
		{`"0.1"`, true, "0.1", nil},
		{`1e-8`, true, "0.00000001", nil},
		{`"lots"`, false, "0", ErrBadAmount},
		{`"1`, false, "0", ErrBadAmount},
		{strings.Repeat("9", MaxAmountLen), true, strings.Repeat("9", MaxAmountLen), nil},
		{strings.Repeat("9", MaxAmountLen+1), false, "0", ErrAmountTooLong},
		{`"` + strings.Repeat("9", MaxAmountLen-1) + `"`, false, "0", ErrAmountTooLong},
		{`1e128`, true, "1e128", nil},
		{`1e129`, false, "0", ErrAmountTooLong},
		{`1e-129`, false, "0", ErrAmountTooLong},
		{`"1e9999"`, false, "0", ErrAmountTooLong},
		{`-1e-9999`, false, "0", ErrAmountTooLong},
		{`"1e999999999"`, false, "0", ErrBadAmount}, // refused by the decimal package or by the bound
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 20)], func(t *testing.T) {
			a, err := DecodeAmount([]byte(tt.in))
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.ErrorIs(t, err, ErrBadAmount, "every refusal matches ErrBadAmount")
				assert.Equal(t, Amount{}, a)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.valid, a.Valid)
			assert.True(t, a.Decimal.Equal(decimal.RequireFromString(tt.want)), "%s", a.Decimal)
		})
	}
}

// TestDecodeAmountMillionDigits: a million-digit amount inside a JSON body
// is refused by its length, without parsing the digits (parsing them takes
// seconds): the refusal is ErrAmountTooLong.
func TestDecodeAmountMillionDigits(t *testing.T) {
	body := []byte(`{"amount":1` + strings.Repeat("0", 1_000_000) + `}`)
	var v struct {
		Amount Amount `json:"amount"`
	}
	err := json.Unmarshal(body, &v)
	assert.ErrorIs(t, err, ErrAmountTooLong)
	allocs := testing.AllocsPerRun(5, func() { _, _ = DecodeAmount(body[10 : len(body)-1]) })
	assert.Zero(t, allocs, "refused before any parsing")
}

func TestNumberMarshal(t *testing.T) {
	b, err := json.Marshal(struct {
		N Number `json:"n"`
	}{Number(decimal.RequireFromString("1e-8"))})
	require.NoError(t, err)
	assert.Equal(t, `{"n":0.00000001}`, string(b))
}

// FuzzDecodeAmount: the bounded decoder never panics, refuses anything
// longer than MaxAmountLen, and what it accepts is exact and small: its
// plain form parses back to the same value and is at most a few hundred
// characters.
func FuzzDecodeAmount(f *testing.F) {
	for _, s := range []string{`1`, `"0.1"`, `1e-8`, `null`, `""`, `" 7.25 "`, `"abc"`, `1e128`, `1e-129`, `"1e999999999"`,
		`-0.000000000000000001`, `.5`, `"+1"`, strings.Repeat("9", 129), `"NaN"`, `"Infinity"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAmount(b)
		if err != nil {
			if !errors.Is(err, ErrBadAmount) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(b) > MaxAmountLen {
			t.Fatalf("accepted %d bytes", len(b))
		}
		if !a.Valid {
			return
		}
		s := a.Decimal.String()
		if len(s) > 2*MaxAmountLen+4 {
			t.Fatalf("plain form of %q is %d characters", b, len(s))
		}
		back, err := decimal.NewFromString(s)
		if err != nil || !back.Equal(a.Decimal) {
			t.Fatalf("%q -> %s does not parse back: %v", b, s, err)
		}
	})
}
