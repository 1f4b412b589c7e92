package cryptopay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/ids"
	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// This file holds what every resource shares: the one generic path an
// endpoint method goes through (validate, marshal, send, decode, convert),
// the pool type of the wire structs (each resource's file declares its
// pools), and the checks on parameters and ids.

// endpoint names one API operation: its method, its path (for routes with
// an id, the part before the id) and its route template.
type endpoint struct {
	method, path, route string
}

// The API's operations.
var (
	createPayment  = endpoint{http.MethodPost, "/v1/payment", "POST /v1/payment"}
	getPayment     = endpoint{http.MethodGet, "/v1/payment/", "GET /v1/payment/{id}/status"}
	createPayout   = endpoint{http.MethodPost, "/v1/payout", "POST /v1/payout"}
	getPayout      = endpoint{http.MethodGet, "/v1/payout/", "GET /v1/payout/{id}/status"}
	listPayouts    = endpoint{http.MethodGet, "/v1/payout/list", "GET /v1/payout/list"}
	getBalances    = endpoint{http.MethodGet, "/v1/balance", "GET /v1/balance"}
	listCurrencies = endpoint{http.MethodGet, "/v1/currencies", "GET /v1/currencies"}
)

// call is the request for e with no query and no body.
func (e endpoint) call(opts []Option) request {
	return request{method: e.method, path: e.path, route: e.route, opts: opts}
}

// decoder is a wire struct (W, used through its pointer PW) that a body
// decodes into in one pass and that converts itself into the public T.
type decoder[T, W any] interface {
	*W
	to(*T)
}

// wirePool reuses the wire structs responses are decoded into: each call
// then allocates only what it returns. A struct goes back zeroed, so no
// field of one response shows through in the next (json leaves absent
// fields as they were) and nothing it pointed to is kept.
type wirePool[W any] struct{ pool sync.Pool }

func (p *wirePool[W]) get() *W {
	if w, ok := p.pool.Get().(*W); ok {
		return w
	}
	return new(W)
}

func (p *wirePool[W]) put(w *W) {
	var zero W
	*w = zero
	p.pool.Put(w)
}

// fetch sends r, decodes the 2xx body into a pooled W (checking its shape
// if W has a check method) and converts it to a new T.
func fetch[T, W any, PW decoder[T, W]](ctx context.Context, c *Client, r request, pool *wirePool[W]) (*T, error) {
	w := pool.get()
	defer pool.put(w)
	if err := c.do(ctx, r, PW(w)); err != nil {
		return nil, err
	}
	v := new(T)
	PW(w).to(v)
	return v, nil
}

// deref returns *v, for endpoints that answer with a slice.
func deref[T any](v *T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return *v, nil
}

// decodeVia is the UnmarshalJSON of a public type T: b is decoded into its
// wire form W, which converts itself into dst.
func decodeVia[T, W any, PW decoder[T, W]](b []byte, dst *T) error {
	var w W
	if err := json.Unmarshal(b, PW(&w)); err != nil {
		return err
	}
	PW(&w).to(dst)
	return nil
}

// createParams is what a create request's parameters provide.
type createParams interface {
	Validate() error
	MarshalJSON() ([]byte, error)
}

// create validates params (nothing is sent if they are refused), marshals
// them and POSTs them to e. orderID goes into an OutcomeUnknownError.
func create[T, W any, PW decoder[T, W], P createParams](ctx context.Context, c *Client, e endpoint, params P, orderID string, opts []Option, pool *wirePool[W]) (*T, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	r := e.call(opts)
	r.body, r.orderID = body, orderID
	return fetch[T, W, PW](ctx, c, r, pool)
}

// getByID checks id with validID and GETs e.path + escaped id + "/status".
func getByID[T, W any, PW decoder[T, W]](ctx context.Context, c *Client, e endpoint, validID func(string) error, id string, opts []Option, pool *wirePool[W]) (*T, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	r := e.call(opts)
	r.path += url.PathEscape(id) + "/status"
	r.id = id
	return fetch[T, W, PW](ctx, c, r, pool)
}

// checkIDStatus reports what makes a response without an id or a status
// unusable as an API answer ("" if nothing).
func checkIDStatus(id, status, noID string) string {
	switch {
	case id == "":
		return noID
	case status == "":
		return "status missing"
	}
	return ""
}

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
// (identifier, key, size: see fieldRule). v is the params struct
// (addressable or not).
func checkParams(v reflect.Value, rules []paramRule, amount decimal.Decimal) error {
	if err := positiveAmount(amount); err != nil {
		return err
	}
	for _, r := range rules {
		if err := validText(r.name, v.Field(r.index).String()); err != nil {
			return err
		}
	}
	for _, r := range rules {
		if r.required && v.Field(r.index).Len() == 0 {
			return &ValidationError{Field: r.name, Reason: "must not be empty"}
		}
	}
	for _, r := range rules {
		if s := v.Field(r.index).String(); r.check != nil && s != "" {
			if reason := r.check(s); reason != "" {
				return &ValidationError{Field: r.name, Reason: reason}
			}
		}
	}
	return nil
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
