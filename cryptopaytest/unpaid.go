package cryptopaytest

import (
	"fmt"
	"strconv"
)

// UnpaidFields says how the status-only fields (paidAmount, merchantAmount
// and, for payments, paidAddress; merchantAmount in payout list items) are
// written before the object has been paid. The spec types them as number
// and string and does not say what an unpaid object carries, so only
// UnpaidZero, the default, is schema-valid; real servers have been seen to
// send the others, and a client must cope with each.
type UnpaidFields int

const (
	// UnpaidNull writes them as JSON null (formerly the default; not
	// schema-valid: the spec types them as number and string).
	UnpaidNull UnpaidFields = iota
	// UnpaidOmit leaves them out.
	UnpaidOmit
	// UnpaidZero writes 0 for the amounts and "" for the address (the
	// default).
	UnpaidZero
)

// String names the mode as the cmd's -unpaid-fields flag spells it.
func (u UnpaidFields) String() string {
	switch u {
	case UnpaidNull:
		return "null"
	case UnpaidOmit:
		return "omit"
	case UnpaidZero:
		return "zero"
	}
	return "UnpaidFields(" + strconv.Itoa(int(u)) + ")"
}

// ParseUnpaidFields reads "null", "omit" or "zero".
func ParseUnpaidFields(s string) (UnpaidFields, error) {
	switch s {
	case "null":
		return UnpaidNull, nil
	case "omit":
		return UnpaidOmit, nil
	case "zero":
		return UnpaidZero, nil
	}
	return 0, fmt.Errorf("%w: unpaid fields mode %q (want null, omit or zero)", ErrInvalid, s)
}
