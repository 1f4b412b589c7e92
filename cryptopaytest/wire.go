package cryptopaytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The wire structs below are written from the spec
// (shared/spec/interface.md), not from the SDK's types, so that the SDK's
// JSON tags are checked against the contract rather than against themselves.

// pair is a currency and network pair (a map key).
type pair = Currency

// number is an amount written as a bare JSON number. decimal.Decimal's own
// MarshalJSON writes a quoted string, and its global switch must not be
// touched, so the digits are written here.
type number decimal.Decimal

// MarshalJSON writes the decimal's plain-notation digits.
func (n number) MarshalJSON() ([]byte, error) {
	return []byte(decimal.Decimal(n).String()), nil
}

// fieldState says whether a status-only field is written, and how.
type fieldState uint8

const (
	fieldOmit fieldState = iota // left out (omitzero)
	fieldNull                   // null
	fieldSet                    // the value
)

// optNumber is a status-only amount: set, null or absent.
type optNumber struct {
	d     decimal.Decimal
	state fieldState
}

// IsZero makes omitzero leave the field out when it is not to be written.
func (o optNumber) IsZero() bool { return o.state == fieldOmit }

// MarshalJSON writes the amount as a number, or null.
func (o optNumber) MarshalJSON() ([]byte, error) {
	if o.state != fieldSet {
		return []byte("null"), nil
	}
	return []byte(o.d.String()), nil
}

// optString is a status-only string: set, null or absent.
type optString struct {
	s     string
	state fieldState
}

// IsZero makes omitzero leave the field out when it is not to be written.
func (o optString) IsZero() bool { return o.state == fieldOmit }

// MarshalJSON writes the string, or null.
func (o optString) MarshalJSON() ([]byte, error) {
	if o.state != fieldSet {
		return []byte("null"), nil
	}
	return json.Marshal(o.s)
}

// wireTime formats a timestamp as RFC 3339 in UTC with milliseconds, the way
// most JSON APIs write it: 2025-01-02T03:04:05.678Z.
func wireTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// paymentJSON is a Payment object. The status-only fields are left out of
// the creation response.
type paymentJSON struct {
	PaymentID         string    `json:"paymentId"`
	Status            string    `json:"status"`
	PayAmount         number    `json:"payAmount"`
	PayAddress        string    `json:"payAddress"`
	PayQrCodeURI      string    `json:"payQrCodeUri"`
	Currency          string    `json:"currency"`
	Network           string    `json:"network"`
	CustomerID        string    `json:"customerId"`
	CustomerIP        string    `json:"customerIp"`
	OrderID           string    `json:"orderId"`
	AdditionalData    *string   `json:"additionalData,omitempty"`
	PlatformFeeByUser bool      `json:"platformFeeByUser"`
	CreatedAt         string    `json:"createdAt"`
	UpdatedAt         string    `json:"updatedAt"`
	ExpiredAt         string    `json:"expiredAt"`
	WebhookURL        string    `json:"webhookUrl,omitempty"` // left out when none was sent: "" is no uri
	PaidAmount        optNumber `json:"paidAmount,omitzero"`
	MerchantAmount    optNumber `json:"merchantAmount,omitzero"`
	PaidAddress       optString `json:"paidAddress,omitzero"`
}

// payoutJSON is a Payout object. paidAmount and merchantAmount are left out
// of the creation response.
type payoutJSON struct {
	PayoutID         string    `json:"payoutId"`
	Status           string    `json:"status"`
	Amount           number    `json:"amount"`
	WalletAddress    string    `json:"walletAddress"`
	NetworkFeeByUser bool      `json:"networkFeeByUser"`
	Currency         string    `json:"currency"`
	Network          string    `json:"network"`
	CustomerID       string    `json:"customerId"`
	CustomerIP       string    `json:"customerIp"`
	OrderID          string    `json:"orderId"`
	CreatedAt        string    `json:"createdAt"`
	UpdatedAt        string    `json:"updatedAt"`
	AdditionalData   *string   `json:"additionalData,omitempty"`
	WebhookURL       string    `json:"webhookUrl,omitempty"` // left out when none was sent, as for payments
	PaidAmount       optNumber `json:"paidAmount,omitzero"`
	MerchantAmount   optNumber `json:"merchantAmount,omitzero"`
}

type nameJSON struct {
	Name string `json:"name"`
}

type walletJSON struct {
	Label   string `json:"label"`
	Address string `json:"address"`
}

// payoutListItemJSON is an element of the payout list; the spec gives it no
// payout id.
type payoutListItemJSON struct {
	Status         string     `json:"status"`
	Amount         number     `json:"amount"`
	MerchantAmount optNumber  `json:"merchantAmount,omitzero"`
	PaidAddress    string     `json:"paidAddress"`
	OrderID        string     `json:"orderId"`
	CustomerID     string     `json:"customerId"`
	PayCurrency    nameJSON   `json:"payCurrency"`
	PayNetwork     nameJSON   `json:"payNetwork"`
	CreatedAt      string     `json:"createdAt"`
	PayoutWallet   walletJSON `json:"payoutWallet"`
}

type payoutListJSON struct {
	Payout []payoutListItemJSON `json:"payout"`
	Count  int                  `json:"count"`
}

type balanceJSON struct {
	Currency string `json:"currency"`
	Network  string `json:"network"`
	Amount   number `json:"amount"`
}

type currencyJSON struct {
	Currency string `json:"currency"`
	Network  string `json:"network"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes the server sends in {code, message} bodies.
const (
	codeUnauthorized     = "unauthorized"
	codeInvalidRequest   = "invalid_request"
	codeUnsupported      = "unsupported_currency"
	codeInsufficient     = "insufficient_funds"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeTooLarge         = "payload_too_large"
	codeMediaType        = "unsupported_media_type"
	codeFault            = "fault_injected"
	codeClosed           = "server_closed"
	codeConflict         = "conflict"
)

func errorBody(code, msg string) []byte {
	b, _ := json.Marshal(errorJSON{Code: code, Message: msg})
	return b
}

func writeRaw(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "encoding the response: "+err.Error())
		return
	}
	writeRaw(w, status, "application/json", b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeRaw(w, status, "application/json", errorBody(code, msg))
}

// requestError is a 4xx answer found while reading a request.
type requestError struct {
	status int
	code   string
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) *requestError {
	return &requestError{http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf(format, args...)}
}

// checkJSONContentType refuses a body that is not declared as JSON.
func checkJSONContentType(r *http.Request) *requestError {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return &requestError{http.StatusUnsupportedMediaType, codeMediaType, "Content-Type must be application/json, got " + strconv.Quote(ct)}
}

// object is a request body read with exact, case-sensitive keys (the
// standard decoder matches keys case-insensitively, which would let a
// wrong-case key from a client pass). Unknown keys are tolerated.
type object map[string]json.RawMessage

func parseObject(body []byte) (object, *requestError) {
	var o object
	if err := json.Unmarshal(body, &o); err != nil || o == nil {
		return nil, badRequest("body must be a JSON object")
	}
	return o, nil
}

func (o object) present(key string) bool {
	v, ok := o[key]
	return ok && string(v) != "null"
}

// hint names a key that differs from want only in case, for error messages.
func (o object) hint(want string) string {
	for k := range o {
		if k != want && strings.EqualFold(k, want) {
			return fmt.Sprintf(" (found %q: keys are case-sensitive)", k)
		}
	}
	return ""
}

// str reads a string field; required fields must be present and not null,
// minLen1 fields must also be non-empty.
func (o object) str(key string, required, minLen1 bool) (string, *requestError) {
	if !o.present(key) {
		if required || minLen1 {
			return "", badRequest("%s is required%s", key, o.hint(key))
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(o[key], &s); err != nil {
		return "", badRequest("%s must be a string", key)
	}
	if minLen1 && s == "" {
		return "", badRequest("%s must not be empty", key)
	}
	return s, nil
}

func (o object) optStr(key string) (*string, *requestError) {
	if !o.present(key) {
		return nil, nil
	}
	s, err := o.str(key, true, false)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func (o object) boolean(key string, required bool) (bool, *requestError) {
	if !o.present(key) {
		if required {
			return false, badRequest("%s is required%s", key, o.hint(key))
		}
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(o[key], &b); err != nil {
		return false, badRequest("%s must be a boolean", key)
	}
	return b, nil
}

// amount reads a positive amount sent as a JSON number or a numeric string,
// exactly (no float on the way).
func (o object) amount(key string) (decimal.Decimal, *requestError) {
	if !o.present(key) {
		return decimal.Decimal{}, badRequest("%s is required%s", key, o.hint(key))
	}
	d, err := parseAmount(o[key])
	if err != nil {
		return decimal.Decimal{}, badRequest("%s %s", key, err.Error())
	}
	if !d.IsPositive() {
		return decimal.Decimal{}, badRequest("%s must be greater than 0, got %s", key, d.String())
	}
	return d, nil
}

var errNotAmount = errors.New("must be a decimal number")

// parseAmount reads a JSON number or a JSON string holding one. It bounds
// the size and exponent so that a hostile amount cannot make decimal
// arithmetic allocate without end.
func parseAmount(raw json.RawMessage) (decimal.Decimal, error) {
	if len(raw) > 128 {
		return decimal.Decimal{}, errors.New("is too long")
	}
	var n json.Number // accepts a number, or a string that holds a valid number
	if err := json.Unmarshal(raw, &n); err != nil || n == "" {
		return decimal.Decimal{}, errNotAmount
	}
	d, err := decimal.NewFromString(string(n))
	if err != nil {
		return decimal.Decimal{}, errNotAmount
	}
	if e := d.Exponent(); e < -64 || e > 64 {
		return decimal.Decimal{}, errors.New("is out of range")
	}
	return d, nil
}

// checkWebhookURL accepts an absolute http(s) URL.
func checkWebhookURL(s string) *requestError {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badRequest("webhookUrl must be an absolute http or https URL")
	}
	return nil
}

func writeRequestError(w http.ResponseWriter, e *requestError) {
	writeError(w, e.status, e.code, e.msg)
}
