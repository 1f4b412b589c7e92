package pgstore

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// Amounts travel to and from PostgreSQL as numeric text (numeric::text
// out, $n::numeric in), never as floats: every digit the API sent is kept.

// nullDecimal is s, numeric text read from a row, as an amount (nil:
// none); text that is not a decimal is an error naming it.
func nullDecimal(s *string) (decimal.NullDecimal, error) {
	if s == nil {
		return decimal.NullDecimal{}, nil
	}
	d, err := decimal.NewFromString(*s)
	if err != nil {
		return decimal.NullDecimal{}, fmt.Errorf("amount %q: %w", *s, err)
	}
	return decimal.NewNullDecimal(d), nil
}

// nullText is d as numeric text for SQL (nil: NULL).
func nullText(d decimal.NullDecimal) *string {
	if !d.Valid {
		return nil
	}
	s := d.Decimal.String()
	return &s
}
