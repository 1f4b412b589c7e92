package pgstore

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

func strPtr(s string) *string { return &s }

// nullDecimal reads numeric text to the digit, NULL as none, and refuses
// text that is no amount (PostgreSQL's numeric holds NaN) with an error
// naming it.
func TestNullDecimal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      *string
		want    string // "": none
		wantErr string
	}{
		{name: "NULL"},
		{name: "zero", in: strPtr("0"), want: "0"},
		{name: "eighteen decimals", in: strPtr("0.000000000000000001"), want: "0.000000000000000001"},
		{name: "thirty decimals", in: strPtr("12345678901234567890.123456789012345678901234567891"),
			want: "12345678901234567890.123456789012345678901234567891"},
		{name: "negative", in: strPtr("-100.5"), want: "-100.5"},
		{name: "NaN", in: strPtr("NaN"), wantErr: `amount "NaN"`},
		{name: "not a number", in: strPtr("ten"), wantErr: `amount "ten"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nullDecimal(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.False(t, got.Valid)
				return
			}
			require.NoError(t, err)
			if tc.want == "" {
				assert.False(t, got.Valid)
				return
			}
			require.True(t, got.Valid)
			assert.True(t, got.Decimal.Equal(decimal.RequireFromString(tc.want)), "got %s, want %s", got.Decimal, tc.want)
		})
	}
}

// nullText writes an amount as numeric text PostgreSQL reads to the digit,
// none as NULL; read back through numeric, it is the same amount.
func TestNullText(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1)
	for _, tc := range []struct {
		name string
		in   decimal.NullDecimal
		want *string
	}{
		{name: "none", in: decimal.NullDecimal{}},
		{name: "zero", in: decimal.NewNullDecimal(decimal.Zero), want: strPtr("0")},
		{name: "trailing zeros dropped", in: decimal.NewNullDecimal(decimal.RequireFromString("12.340")), want: strPtr("12.34")},
		{name: "thirty decimals", in: decimal.NewNullDecimal(decimal.RequireFromString("0.000000000000000000000000000001")),
			want: strPtr("0.000000000000000000000000000001")},
		{name: "more digits than a float holds", in: decimal.NewNullDecimal(decimal.RequireFromString("12345678901234567890.123456789012345678901234567891")),
			want: strPtr("12345678901234567890.123456789012345678901234567891")},
		{name: "negative", in: decimal.NewNullDecimal(decimal.RequireFromString("-7.25")), want: strPtr("-7.25")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := nullText(tc.in)
			assert.Equal(t, tc.want, text)
			var back *string
			require.NoError(t, pool.QueryRow(context.Background(), `SELECT $1::numeric::text`, text).Scan(&back))
			got, err := nullDecimal(back)
			require.NoError(t, err)
			assert.Equal(t, tc.in.Valid, got.Valid)
			assert.True(t, got.Decimal.Equal(tc.in.Decimal), "through numeric: got %s, want %s", got.Decimal, tc.in.Decimal)
		})
	}
}
