package cryptopay

import (
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/internal/ids"
	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// This file holds the checks every resource shares on parameters and ids
// (the generic path of an endpoint method is in endpoint.go).

// paramRule is one string field of a params struct: its index, its Go name,
// whether it must not be empty and the field's own rule, from its struct
// tag (cryptopay:"required,id=128": see fieldRule).
type paramRule struct {
	index    int
	name     string
	required bool
	// check says why a non-empty value is refused ("" if it is not);
	// nil: no rule beyond UTF-8.
	check func(string) string
}

// paramRules lists the string fields of the params struct t, once per type.
func paramRules(t reflect.Type) []paramRule {
	var rules []paramRule
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.String {
			required, check := fieldRule(f.Tag.Get("cryptopay"))
			rules = append(rules, paramRule{i, f.Name, required, check})
		}
	}
	return rules
}

// checkParams applies the rules every create request shares: the amount is
// greater than 0, every string field is valid UTF-8 (JSON would silently
// turn invalid bytes into U+FFFD, so an orderId would no longer match its
// payout and reconciling would say "not found"), the required string
// fields are not empty, and each non-empty field passes its own rule
// (identifier, key, size: see fieldRule), and the amount has no more
// decimal places than currency has on network (amountPlaces). v is the
// params struct (addressable or not).
func checkParams(v reflect.Value, rules []paramRule, amount decimal.Decimal, currency, network string) error {
	if err := positiveAmount(amount); err != nil {
		return err
	}
	var buf [16]string // the fields' values, read once (no allocation for up to 16)
	vals := buf[:0]
	for _, r := range rules {
		vals = append(vals, v.Field(r.index).String())
	}
	for i, r := range rules {
		if err := validText(r.name, vals[i]); err != nil {
			return err
		}
	}
	for i, r := range rules {
		if r.required && vals[i] == "" {
			return &ValidationError{Field: r.name, Reason: "must not be empty"}
		}
	}
	for i, r := range rules {
		if s := vals[i]; r.check != nil && s != "" {
			if reason := r.check(s); reason != "" {
				return &ValidationError{Field: r.name, Reason: reason}
			}
		}
	}
	return amountPlaces(amount, currency, network)
}

// amountPlaces refuses an amount with more decimal places than currency
// has on network (address.Decimals: 8 for btc on bitcoin, 6 for usdt on
// tron), naming the pair: the chain cannot move less than its smallest
// unit. Trailing zeros do not count (1.500000000 btc is 1.5). A pair whose
// places are not known passes.
func amountPlaces(amount decimal.Decimal, currency, network string) error {
	places, known := address.Decimals(currency, network)
	if !known || -amount.Exponent() <= int32(places) || amount.Equal(amount.Truncate(int32(places))) {
		return nil
	}
	return &ValidationError{Field: "Amount", Reason: "has more decimal places than " + currency + " on " + network +
		" allows (" + strconv.Itoa(places) + "): " + amount.String()}
}

// validText refuses a string that is not valid UTF-8, before it is sent.
func validText(name, s string) error {
	if !utf8.ValidString(s) {
		return &ValidationError{Field: name, Reason: "is not valid UTF-8 (JSON would replace the invalid bytes, so the server would store a different value)"}
	}
	return nil
}

// positiveAmount refuses an amount that is not greater than 0, or whose
// plain text would be longer than wire.MaxAmountLen (the bound every amount
// read from a response has): decimal.New(1, -50_000_000) would otherwise
// send a 50 MB body. The exponent and digit count are checked before the
// amount is ever printed.
func positiveAmount(d decimal.Decimal) error {
	const tooLong = "has more than 128 digits (exponent or coefficient out of range)"
	if e := d.Exponent(); e < -wire.MaxAmountLen || e > wire.MaxAmountLen {
		return &ValidationError{Field: "Amount", Reason: tooLong}
	}
	if d.NumDigits() > wire.MaxAmountLen || len(d.String()) > wire.MaxAmountLen {
		return &ValidationError{Field: "Amount", Reason: tooLong}
	}
	if !d.IsPositive() {
		return &ValidationError{Field: "Amount", Reason: "must be greater than 0, got " + d.String()}
	}
	return nil
}

// requiredAmount reports what makes an amount a response must carry
// unusable ("" if nothing): absent, null or "" (read as 0, a payment's
// "paid >= payAmount" would pass), or negative.
func requiredAmount(name string, a wire.Amount) string {
	switch {
	case !a.Valid:
		return name + " missing"
	case a.Decimal.IsNegative():
		return name + " is negative"
	}
	return ""
}

// marshalWithAmount writes fields (a struct whose Amount is tagged json:"-")
// as a JSON object whose first member is "amount", a bare JSON number in
// plain notation: decimal.Decimal would write a quoted string, and the
// package's global switch must not be touched.
func marshalWithAmount(amount decimal.Decimal, fields any) ([]byte, error) {
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	n := amount.String()
	out := make([]byte, 0, len(rest)+len(n)+len(`{"amount":,`))
	out = append(out, `{"amount":`...)
	out = append(out, n...)
	if len(rest) > 2 { // not "{}"
		out = append(out, ',')
	}
	return append(out, rest[1:]...), nil
}

// validatePaymentID refuses an id that is not a payment id (see ids.Payment).
func validatePaymentID(id string) error { return idError(ids.Payment(id)) }

// validatePayoutID refuses an id that cannot be sent as a payout id (see
// ids.Payout).
func validatePayoutID(id string) error { return idError(ids.Payout(id)) }

func idError(reason string) error {
	if reason == "" {
		return nil
	}
	return &ValidationError{Field: "id", Reason: reason}
}
