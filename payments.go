package cryptopay

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
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

// wirePayment is the payment as read from the wire: amounts as numbers or
// strings, lenient timestamps.
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
	AdditionalData    string        `json:"additionalData"`
	PlatformFeeByUser bool          `json:"platformFeeByUser"`
	CreatedAt         wire.Time     `json:"createdAt"`
	UpdatedAt         wire.Time     `json:"updatedAt"`
	ExpiredAt         wire.Time     `json:"expiredAt"`
	WebhookURL        string        `json:"webhookUrl"`
	PaidAmount        wire.Amount   `json:"paidAmount"`
	MerchantAmount    wire.Amount   `json:"merchantAmount"`
	PaidAddress       string        `json:"paidAddress"`
}

// UnmarshalJSON reads a payment as the API sends it: amounts may be JSON
// numbers or strings, absent status-only amounts stay invalid (not zero).
// It does not require any field; the client checks id and status itself.
func (p *Payment) UnmarshalJSON(b []byte) error {
	var w wirePayment
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = w.payment()
	return nil
}

// payment converts the wire form. The client decodes responses straight
// into wirePayment (one pass over the body) and converts; going through
// Payment.UnmarshalJSON would scan the body twice more.
func (w *wirePayment) payment() Payment {
	return Payment{
		ID:                w.ID,
		Status:            w.Status,
		PayAmount:         w.PayAmount.Decimal,
		PayAddress:        w.PayAddress,
		PayQRCodeURI:      w.PayQRCodeURI,
		Currency:          w.Currency,
		Network:           w.Network,
		CustomerID:        w.CustomerID,
		CustomerIP:        w.CustomerIP,
		OrderID:           w.OrderID,
		AdditionalData:    w.AdditionalData,
		PlatformFeeByUser: w.PlatformFeeByUser,
		CreatedAt:         w.CreatedAt.Time,
		UpdatedAt:         w.UpdatedAt.Time,
		ExpiredAt:         w.ExpiredAt.Time,
		WebhookURL:        w.WebhookURL,
		PaidAmount:        w.PaidAmount.Null(),
		MerchantAmount:    w.MerchantAmount.Null(),
		PaidAddress:       w.PaidAddress,
	}
}

// check is Payment.check for the wire form.
func (w *wirePayment) check() string {
	return checkIDStatus(w.ID, string(w.Status), "paymentId missing")
}

// check reports what makes p unusable as an API answer.
func (p *Payment) check() string { return checkIDStatus(p.ID, string(p.Status), "paymentId missing") }

func checkIDStatus(id, status, noID string) string {
	switch {
	case id == "":
		return noID
	case status == "":
		return "status missing"
	}
	return ""
}

// CreatePaymentParams are the fields of POST /v1/payment.
type CreatePaymentParams struct {
	// Amount is the crypto amount requested; must be greater than 0.
	Amount decimal.Decimal
	// PlatformFeeByUser: true if the customer bears the fee (it is added to
	// the amount to pay), false if the merchant does.
	PlatformFeeByUser bool
	// Currency is the cryptocurrency, for example "usdt"; required.
	Currency string
	// Network is the network, for example "erc20".
	Network string
	// CustomerID identifies the customer; required.
	CustomerID string
	// CustomerIP is the customer's IP address; required.
	CustomerIP string
	// OrderID is the merchant's order identifier. Make it unique per order:
	// it is how an unknown outcome is reconciled and how webhook URLs are
	// signed (see WebhookURL).
	OrderID string
	// AdditionalData is optional free-form data; empty is not sent.
	AdditionalData string
	// WebhookURL is where events for this payment go; empty is not sent.
	// Build it with WebhookURL so the handler can authenticate events.
	WebhookURL string
}

type wireCreatePayment struct {
	Amount            wire.Number `json:"amount"`
	PlatformFeeByUser bool        `json:"platformFeeByUser"`
	Currency          string      `json:"currency"`
	Network           string      `json:"network"`
	CustomerID        string      `json:"customerId"`
	CustomerIP        string      `json:"customerIp"`
	OrderID           string      `json:"orderId"`
	AdditionalData    string      `json:"additionalData,omitempty"`
	WebhookURL        string      `json:"webhookUrl,omitempty"`
}

// MarshalJSON writes the request body with the amount as a JSON number.
func (p CreatePaymentParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireCreatePayment{
		Amount:            wire.Number(p.Amount),
		PlatformFeeByUser: p.PlatformFeeByUser,
		Currency:          p.Currency,
		Network:           p.Network,
		CustomerID:        p.CustomerID,
		CustomerIP:        p.CustomerIP,
		OrderID:           p.OrderID,
		AdditionalData:    p.AdditionalData,
		WebhookURL:        p.WebhookURL,
	})
}

// Validate applies the API's documented limits: Amount > 0; Currency,
// CustomerID and CustomerIP not empty.
func (p CreatePaymentParams) Validate() error {
	if err := positiveAmount(p.Amount); err != nil {
		return err
	}
	return firstMissing(
		field{"Currency", p.Currency},
		field{"CustomerID", p.CustomerID},
		field{"CustomerIP", p.CustomerIP},
	)
}

// CreatePayment creates a payment link: the answer says where and how much
// the customer pays.
//
// POST /v1/payment. Invalid params return a *ValidationError and nothing is
// sent. If the request may have reached the server but no answer was read
// (timeout, broken connection, 5xx), the error matches ErrOutcomeUnknown and
// the request is not resent: look the order up before creating it again.
func (c *Client) CreatePayment(ctx context.Context, params CreatePaymentParams, opts ...RequestOption) (*Payment, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	w := getWirePayment()
	defer putWirePayment(w)
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/payment", route: "POST /v1/payment", body: body, orderID: params.OrderID, opts: opts}, w); err != nil {
		return nil, err
	}
	p := w.payment()
	return &p, nil
}

// GetPayment reads a payment's current status, including the status-only
// fields PaidAmount, MerchantAmount and PaidAddress.
//
// GET /v1/payment/{id}/status. id must be a UUID. Retried on transient
// failures; an unknown id matches ErrNotFound.
func (c *Client) GetPayment(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	if err := validatePaymentID(id); err != nil {
		return nil, err
	}
	w := getWirePayment()
	defer putWirePayment(w)
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/payment/" + id + "/status", route: "GET /v1/payment/{id}/status", opts: opts}, w); err != nil {
		return nil, err
	}
	p := w.payment()
	return &p, nil
}

// validatePaymentID accepts only the canonical 36-character UUID form, so
// nothing else can reach the path.
func validatePaymentID(id string) error {
	if id == "" {
		return &ValidationError{Field: "id", Reason: "payment id is empty"}
	}
	if len(id) != 36 {
		return &ValidationError{Field: "id", Reason: "payment id is not a UUID"}
	}
	if _, err := uuid.Parse(id); err != nil {
		return &ValidationError{Field: "id", Reason: "payment id is not a UUID"}
	}
	return nil
}

type field struct{ name, value string }

func firstMissing(fields ...field) error {
	for _, f := range fields {
		if f.value == "" {
			return &ValidationError{Field: f.name, Reason: "must not be empty"}
		}
	}
	return nil
}

func positiveAmount(d decimal.Decimal) error {
	if !d.IsPositive() {
		return &ValidationError{Field: "Amount", Reason: "must be greater than 0, got " + d.String()}
	}
	return nil
}

// The wire structs responses are decoded into are reused: each call then
// allocates only the Payment or Payout it returns. A struct goes back
// zeroed, so no field of one response can show through in the next (json
// leaves absent fields as they were) and nothing it pointed to is kept.
var (
	wirePaymentPool = sync.Pool{New: func() any { return new(wirePayment) }}
	wirePayoutPool  = sync.Pool{New: func() any { return new(wirePayout) }}
)

func getWirePayment() *wirePayment { return wirePaymentPool.Get().(*wirePayment) }

func putWirePayment(w *wirePayment) {
	*w = wirePayment{}
	wirePaymentPool.Put(w)
}

func getWirePayout() *wirePayout { return wirePayoutPool.Get().(*wirePayout) }

func putWirePayout(w *wirePayout) {
	*w = wirePayout{}
	wirePayoutPool.Put(w)
}
