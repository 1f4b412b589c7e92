package cryptopay

import (
	"cmp"
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// Payment is a payment link: where and how much the customer pays, and what
// has been paid so far. Amounts are exact decimals.
type Payment struct {
	// ID is the payment's UUID (paymentId).
	ID string `json:"paymentId"`
	// Status is the payment's current status.
	Status PaymentStatus `json:"status"`
	// PayAmount is the crypto amount the customer must pay: the requested
	// amount plus the fee when PlatformFeeByUser is set.
	PayAmount decimal.Decimal `json:"payAmount"`
	// PayAddress is the address to pay to.
	PayAddress string `json:"payAddress"`
	// PayQRCodeURI is a URI for the payment QR code.
	PayQRCodeURI string `json:"payQrCodeUri"`
	// Currency is the cryptocurrency, for example "usdt".
	Currency string `json:"currency"`
	// Network is the network, for example "erc20".
	Network string `json:"network"`
	// CustomerID is the merchant's customer identifier.
	CustomerID string `json:"customerId"`
	// CustomerIP is the customer's IP address.
	CustomerIP string `json:"customerIp"`
	// OrderID is the merchant's order identifier.
	OrderID string `json:"orderId"`
	// AdditionalData is the merchant's free-form data, if any.
	AdditionalData string `json:"additionalData,omitempty"`
	// PlatformFeeByUser reports whether the customer bears the fee.
	PlatformFeeByUser bool `json:"platformFeeByUser"`
	// CreatedAt is the creation time (zero if the server sent none or an
	// unreadable one).
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is the last update time.
	UpdatedAt time.Time `json:"updatedAt"`
	// ExpiredAt is when an unpaid payment expires.
	ExpiredAt time.Time `json:"expiredAt"`
	// WebhookURL is where the service sends events for this payment.
	WebhookURL string `json:"webhookUrl"`
	// PaidAmount is the amount paid; Valid is false when the server did not
	// send it (creation responses never do), which differs from a zero.
	PaidAmount decimal.NullDecimal `json:"paidAmount"`
	// MerchantAmount is the amount credited to the merchant; Valid as above.
	MerchantAmount decimal.NullDecimal `json:"merchantAmount"`
	// PaidAddress is the address the service reports for the payment (status
	// responses only).
	PaidAddress string `json:"paidAddress,omitempty"`
}

// wirePayment is a payment as read from the wire: Payment's fields, with
// the amounts and times read by lenient decoders (amounts as numbers or
// strings, bounded in length; timestamps never fatal). Its fields are
// Payment's, declared flat rather than by embedding a copy of Payment:
// json finds an embedded struct's fields through reflection on every
// field of every response (TestWirePaymentHasPaymentsFields keeps the two
// lists the same).
type wirePayment struct {
	ID                string        `json:"paymentId"`
	Status            PaymentStatus `json:"status"`
	PayAmount         wire.Amount   `json:"payAmount"`
	PayAddress        string        `json:"payAddress"`
	PayQRCodeURI      string        `json:"payQrCodeUri"`
	Currency          string        `json:"currency"`
	Network           string        `json:"network"`
	CustomerID        string        `json:"customerId"`
	CustomerIP        string        `json:"customerIp"`
	OrderID           string        `json:"orderId"`
	AdditionalData    string        `json:"additionalData,omitempty"`
	PlatformFeeByUser bool          `json:"platformFeeByUser"`
	CreatedAt         wire.Time     `json:"createdAt"`
	UpdatedAt         wire.Time     `json:"updatedAt"`
	ExpiredAt         wire.Time     `json:"expiredAt"`
	WebhookURL        string        `json:"webhookUrl"`
	PaidAmount        wire.Amount   `json:"paidAmount"`
	MerchantAmount    wire.Amount   `json:"merchantAmount"`
	PaidAddress       string        `json:"paidAddress,omitempty"`
}

// paymentPool reuses the wire form of a payment (see wirePool).
var paymentPool wirePool[wirePayment]

// UnmarshalJSON reads a payment as the API sends it: amounts may be JSON
// numbers or strings, absent status-only amounts stay invalid (not zero).
// It does not require any field; the client checks id and status itself.
func (p *Payment) UnmarshalJSON(b []byte) error { return decodeVia[Payment, wirePayment](b, p) }

// to converts the wire form. The client decodes responses straight into
// wirePayment (one pass over the body) and converts; going through
// Payment.UnmarshalJSON would scan the body twice more.
func (w *wirePayment) to(p *Payment) {
	*p = Payment{
		ID: w.ID, Status: w.Status, PayAmount: w.PayAmount.Decimal, PayAddress: w.PayAddress, PayQRCodeURI: w.PayQRCodeURI,
		Currency: w.Currency, Network: w.Network, CustomerID: w.CustomerID, CustomerIP: w.CustomerIP, OrderID: w.OrderID,
		AdditionalData: w.AdditionalData, PlatformFeeByUser: w.PlatformFeeByUser,
		CreatedAt: w.CreatedAt.Time, UpdatedAt: w.UpdatedAt.Time, ExpiredAt: w.ExpiredAt.Time, WebhookURL: w.WebhookURL,
		PaidAmount: w.PaidAmount.Null(), MerchantAmount: w.MerchantAmount.Null(), PaidAddress: w.PaidAddress,
	}
}

// answerOrderID is the orderId a create's answer was made for.
func (w *wirePayment) answerOrderID() string { return w.OrderID }

// answers reports whether w is the payment id names (a UUID: letter case
// does not matter).
func (w *wirePayment) answers(id string) bool { return w.ID == id || strings.EqualFold(w.ID, id) }

// check is Payment.check for the wire form, which also sees whether the
// required payAmount was sent.
func (w *wirePayment) check() string {
	return cmp.Or(checkIDStatus(w.ID, string(w.Status), paymentIDMissing), requiredAmount("payAmount", w.PayAmount))
}

// check reports what makes p unusable as an API answer.
func (p *Payment) check() string { return checkIDStatus(p.ID, string(p.Status), paymentIDMissing) }

// paymentIDMissing is why an answer without a paymentId is refused.
const paymentIDMissing = "paymentId missing"

// CreatePaymentParams are the fields of POST /v1/payment. The struct tags
// give each field's JSON name and the fields Validate requires.
type CreatePaymentParams struct {
	// Amount is the crypto amount requested; must be greater than 0.
	Amount decimal.Decimal `json:"-"`
	// PlatformFeeByUser: true if the customer bears the fee (it is added to
	// the amount to pay), false if the merchant does.
	PlatformFeeByUser bool `json:"platformFeeByUser"`
	// Currency is the cryptocurrency, for example "usdt"; required, in
	// canonical form (lower case, no spaces: "USDT" is refused).
	Currency string `json:"currency" cryptopay:"required,key"`
	// Network is the network, for example "erc20"; canonical when given.
	Network string `json:"network" cryptopay:"key"`
	// CustomerID identifies the customer; required, an identifier of at
	// most 128 bytes (see OrderID).
	CustomerID string `json:"customerId" cryptopay:"required,id=128"`
	// CustomerIP is the customer's IP address; required, at most 64
	// bytes, the same character rules as OrderID.
	CustomerIP string `json:"customerIp" cryptopay:"required,id=64"`
	// OrderID is the merchant's order identifier; required (the API's
	// spec marks it so, and a payment without one cannot be reconciled or
	// tracked). Make it unique per order: it is how an unknown outcome is
	// reconciled and how webhook URLs are signed (see webhook.URL). At
	// most 128 bytes, with no leading or
	// trailing white space and no control, invisible or bidi character.
	OrderID string `json:"orderId" cryptopay:"required,id=128"`
	// AdditionalData is optional free-form data, at most 64 KiB; empty is
	// not sent.
	AdditionalData string `json:"additionalData,omitempty" cryptopay:"max=65536"`
	// WebhookURL is where events for this payment go; empty is not sent.
	// Build it with webhook.URL so the handler can authenticate events.
	WebhookURL string `json:"webhookUrl,omitempty"`
}

var paymentParamRules = paramRules(reflect.TypeFor[CreatePaymentParams]())

// MarshalJSON writes the request body with the amount as a JSON number.
func (p CreatePaymentParams) MarshalJSON() ([]byte, error) {
	type fields CreatePaymentParams // without this method
	return marshalWithAmount(p.Amount, (*fields)(&p))
}

// Validate applies the API's documented limits (Amount > 0; Currency,
// CustomerID, CustomerIP and OrderID not empty), refuses any string field that is
// not valid UTF-8, and applies the SDK's rules: OrderID, CustomerID and
// CustomerIP identifiers within their length (see the fields), Currency
// and Network canonical keys, AdditionalData at most 64 KiB. A refusal is
// a *ValidationError naming the Go field.
func (p CreatePaymentParams) Validate() error {
	return checkParams(reflect.ValueOf(&p).Elem(), paymentParamRules, p.Amount, p.Currency, p.Network)
}

// CreatePayment creates a payment link: the answer says where and how much
// the customer pays.
//
// POST /v1/payment. Invalid params return a *ValidationError and nothing is
// sent. If the request may have reached the server but no answer says what
// became of it (timeout, broken connection, an answer other than 2xx or a
// 4xx other than 408), the error matches ErrOutcomeUnknown and
// the request is not resent: look the order up before creating it again.
func (c *Client) CreatePayment(ctx context.Context, params CreatePaymentParams, opts ...Option) (*Payment, error) {
	return create[Payment](ctx, c, createPayment, params, params.OrderID, opts, &paymentPool)
}

// GetPayment reads a payment's current status, including the status-only
// fields PaidAmount, MerchantAmount and PaidAddress.
//
// GET /v1/payment/{id}/status. id must be a UUID. Retried on transient
// failures; an unknown id matches ErrNotFound.
func (c *Client) GetPayment(ctx context.Context, id string, opts ...Option) (*Payment, error) {
	return getByID[Payment](ctx, c, getPayment, validatePaymentID, id, opts, &paymentPool)
}
