// Package wire holds the JSON helpers the SDK uses on the wire: amounts that
// encode as JSON numbers without touching shopspring/decimal's globals, and
// lenient decoders for amounts and timestamps sent by real servers.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Number is a decimal that marshals as a bare JSON number (decimal.Decimal
// marshals a quoted string by default). Its String form is plain notation,
// never an exponent, so every digit survives.
type Number decimal.Decimal

// MarshalJSON writes the decimal as a JSON number.
func (n Number) MarshalJSON() ([]byte, error) {
	return []byte(decimal.Decimal(n).String()), nil
}

// Amount decodes an amount sent as a JSON number, a JSON string holding a
// number, null, or an empty string. Valid is false for null, "" and absence.
// It is bounded: see DecodeAmount.
type Amount struct {
	Decimal decimal.Decimal
	Valid   bool
}

// MaxAmountLen bounds an amount's JSON text (quotes and spaces included):
// far longer than any real amount, and short enough that parsing it costs
// next to nothing. Parsing a decimal takes time that grows faster than its
// length, so an unbounded amount would let a hostile body burn CPU.
const MaxAmountLen = 128

var (
	// ErrBadAmount reports an amount that is neither a number nor a
	// numeric string.
	ErrBadAmount = errors.New("amount is not a decimal number")
	// ErrAmountTooLong reports an amount whose JSON text is longer than
	// MaxAmountLen, or whose exponent is beyond ±MaxAmountLen (1e999999999
	// is short, but printing it would take a gigabyte). It matches
	// ErrBadAmount too.
	ErrAmountTooLong = fmt.Errorf("%w: longer than %d characters or digits", ErrBadAmount, MaxAmountLen)
)

// DecodeAmount is the one bounded amount decoder: every amount the SDK
// reads, in API responses and in webhook bodies, goes through it (Amount's
// UnmarshalJSON calls it). b is the amount's raw JSON value; a value
// longer than MaxAmountLen is refused with ErrAmountTooLong before any
// parsing, and so is one whose exponent is beyond ±MaxAmountLen. null, ""
// and an empty b give an invalid Amount and no error.
func DecodeAmount(b []byte) (Amount, error) {
	if len(b) > MaxAmountLen {
		return Amount{}, ErrAmountTooLong
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return Amount{}, nil
	}
	if b[0] == '"' {
		if len(b) < 2 || b[len(b)-1] != '"' {
			return Amount{}, ErrBadAmount
		}
		b = bytes.TrimSpace(b[1 : len(b)-1])
		if len(b) == 0 {
			return Amount{}, nil
		}
	}
	// decimal.NewFromString accepts forms JSON does not (".5", "+1") and the
	// strings "NaN"/"Inf" are rejected by it; a leading '.' or '+' from a
	// lenient server is harmless, so it is accepted.
	d, err := decimal.NewFromString(string(b))
	if err != nil {
		return Amount{}, fmt.Errorf("%w: %q", ErrBadAmount, b) // b is at most MaxAmountLen: quoted whole, so a key in it is scrubbed whole
	}
	if e := d.Exponent(); e < -MaxAmountLen || e > MaxAmountLen {
		return Amount{}, ErrAmountTooLong
	}
	return Amount{Decimal: d, Valid: true}, nil
}

// UnmarshalJSON implements json.Unmarshaler with DecodeAmount.
func (a *Amount) UnmarshalJSON(b []byte) error {
	v, err := DecodeAmount(b)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Null converts a to a decimal.NullDecimal.
func (a Amount) Null() decimal.NullDecimal {
	return decimal.NullDecimal{Decimal: a.Decimal, Valid: a.Valid}
}

// Time decodes a timestamp. RFC 3339 (with or without fractional seconds) is
// the contract; a timestamp without a zone is read as UTC, a space may stand
// for the 'T', and null, "" or a value it cannot read give the zero time: a
// timestamp is informational and must never make a payment unreadable.
type Time struct{ time.Time }

var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	t.Time = time.Time{}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil
	}
	// Fast path, no allocation: strict RFC 3339 straight from the bytes.
	// When it succeeds its result is the one time.Parse(RFC3339Nano) gives
	// (both use the same RFC 3339 parser); anything else goes the long way.
	if in := b[1 : len(b)-1]; len(in) > 0 && in[0] > ' ' && in[len(in)-1] > ' ' && !bytes.ContainsRune(in, '\\') {
		if err := t.Time.UnmarshalText(in); err == nil {
			return nil
		}
		t.Time = time.Time{}
	}
	s := strings.TrimSpace(string(b[1 : len(b)-1]))
	if s == "" {
		return nil
	}
	for _, layout := range timeLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v
			return nil
		}
	}
	return nil
}
