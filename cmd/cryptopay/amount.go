package main

import (
	"errors"
	"strings"

	"github.com/shopspring/decimal"
)

// maxAmountText bounds an amount as typed: the SDK refuses more than 128
// digits anyway, and a longer text is not read at all.
const maxAmountText = 160

// errExponent explains why an amount in scientific notation is refused.
var errExponent = errors.New("has an exponent (such as 1.23457E+11): write the plain decimal (123456789012); " +
	"a spreadsheet shows large and small numbers that way and may have rounded the value it saved")

// errNotDecimal is an amount that is not a plain decimal.
var errNotDecimal = errors.New("not a decimal: want a plain decimal number such as 10.5, with a point and no thousands separators")

// parseAmount reads an amount as people write it: a plain decimal (digits,
// at most one '.', an optional leading sign), exactly. An exponent is
// refused with the reason (a spreadsheet's "1.23457E+11" is 123456789012
// rounded, "1e100" a 101-digit number), and so are NaN, Inf, thousands
// separators, white space and texts over maxAmountText characters.
func parseAmount(s string) (decimal.Decimal, error) {
	if len(s) > maxAmountText {
		return decimal.Decimal{}, errors.New("longer than 160 characters")
	}
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		case (c == '-' || c == '+') && i == 0:
		case (c == 'e' || c == 'E') && digits > 0 && i+1 < len(s):
			if _, err := decimal.NewFromString(s); err == nil {
				return decimal.Decimal{}, errExponent
			}
			return decimal.Decimal{}, errNotDecimal
		default:
			return decimal.Decimal{}, errNotDecimal
		}
	}
	if digits == 0 {
		return decimal.Decimal{}, errNotDecimal
	}
	d, err := decimal.NewFromString(strings.TrimPrefix(s, "+"))
	if err != nil {
		return decimal.Decimal{}, errNotDecimal
	}
	return d, nil
}
