package benchfloor

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// CreatePaymentParams has the SDK's CreatePaymentParams fields, in their
// order and of their types, so that a Go conversion
// (benchfloor.CreatePaymentParams(p)) takes the SDK's parameters and stops
// compiling when they change.
type CreatePaymentParams struct {
	Amount            decimal.Decimal
	PlatformFeeByUser bool
	Currency          string
	Network           string
	CustomerID        string
	CustomerIP        string
	OrderID           string
	AdditionalData    string
	WebhookURL        string
}

// CreatePayoutParams has the SDK's CreatePayoutParams fields, as
// CreatePaymentParams has the payment's.
type CreatePayoutParams struct {
	WalletAddress    string
	NetworkFeeByUser bool
	Amount           decimal.Decimal
	Currency         string
	Network          string
	CustomerID       string
	CustomerIP       string
	OrderID          string
	AdditionalData   string
	WebhookURL       string
}

// Number writes a decimal as a bare JSON number, as the SDK does.
type Number decimal.Decimal

// MarshalJSON writes n's digits, exactly.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(decimal.Decimal(n).String()), nil }

// paymentBody is the body of POST /v1/payment, by its wire names.
type paymentBody struct {
	Amount            Number `json:"amount"`
	PlatformFeeByUser bool   `json:"platformFeeByUser"`
	Currency          string `json:"currency"`
	Network           string `json:"network"`
	CustomerID        string `json:"customerId"`
	CustomerIP        string `json:"customerIp"`
	OrderID           string `json:"orderId"`
	AdditionalData    string `json:"additionalData,omitempty"`
	WebhookURL        string `json:"webhookUrl,omitempty"`
}

// PaymentBody is the body the floor sends for p: the SDK's fields by
// their wire names, the amount a bare JSON number, the empty optional
// fields left out.
func PaymentBody(p CreatePaymentParams) ([]byte, error) {
	return json.Marshal(paymentBody{
		Amount: Number(p.Amount), PlatformFeeByUser: p.PlatformFeeByUser, Currency: p.Currency,
		Network: p.Network, CustomerID: p.CustomerID, CustomerIP: p.CustomerIP, OrderID: p.OrderID,
		AdditionalData: p.AdditionalData, WebhookURL: p.WebhookURL,
	})
}

// payoutBody is the body of POST /v1/payout, by its wire names.
type payoutBody struct {
	WalletAddress    string `json:"walletAddress"`
	NetworkFeeByUser bool   `json:"networkFeeByUser"`
	Amount           Number `json:"amount"`
	Currency         string `json:"currency"`
	Network          string `json:"network"`
	CustomerID       string `json:"customerId"`
	CustomerIP       string `json:"customerIp"`
	OrderID          string `json:"orderId"`
	AdditionalData   string `json:"additionalData,omitempty"`
	WebhookURL       string `json:"webhookUrl,omitempty"`
}

// PaymentOf has the SDK's Payment fields, by their wire names, with the
// amounts of type A (and N where the answer may carry null): Payment reads
// them exactly, PaymentFloat as float64.
type PaymentOf[A, N any] struct {
	ID                string    `json:"paymentId"`
	Status            string    `json:"status"`
	PayAmount         A         `json:"payAmount"`
	PayAddress        string    `json:"payAddress"`
	PayQRCodeURI      string    `json:"payQrCodeUri"`
	Currency          string    `json:"currency"`
	Network           string    `json:"network"`
	CustomerID        string    `json:"customerId"`
	CustomerIP        string    `json:"customerIp"`
	OrderID           string    `json:"orderId"`
	AdditionalData    string    `json:"additionalData"`
	PlatformFeeByUser bool      `json:"platformFeeByUser"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
	ExpiredAt         time.Time `json:"expiredAt"`
	WebhookURL        string    `json:"webhookUrl"`
	PaidAmount        N         `json:"paidAmount"`
	MerchantAmount    N         `json:"merchantAmount"`
	PaidAddress       string    `json:"paidAddress"`
}

// Payment is a payment with exact amounts: the floor's result.
type Payment = PaymentOf[decimal.Decimal, decimal.NullDecimal]

// PaymentFloat is a payment with amounts as float64 (inexact: what
// exactness costs).
type PaymentFloat = PaymentOf[float64, *float64]

// Payout has the SDK's Payout fields, by their wire names, amounts exact.
type Payout struct {
	ID               string              `json:"payoutId"`
	Status           string              `json:"status"`
	Amount           decimal.Decimal     `json:"amount"`
	WalletAddress    string              `json:"walletAddress"`
	NetworkFeeByUser bool                `json:"networkFeeByUser"`
	Currency         string              `json:"currency"`
	Network          string              `json:"network"`
	CustomerID       string              `json:"customerId"`
	CustomerIP       string              `json:"customerIp"`
	OrderID          string              `json:"orderId"`
	CreatedAt        time.Time           `json:"createdAt"`
	UpdatedAt        time.Time           `json:"updatedAt"`
	AdditionalData   string              `json:"additionalData"`
	WebhookURL       string              `json:"webhookUrl"`
	PaidAmount       decimal.NullDecimal `json:"paidAmount"`
	MerchantAmount   decimal.NullDecimal `json:"merchantAmount"`
}

// Name is a {"name": ...} object of a payout list item.
type Name struct {
	Name string `json:"name"`
}

// Wallet is a payout list item's payoutWallet.
type Wallet struct {
	Label   string `json:"label"`
	Address string `json:"address"`
}

// ListItemOf is one item of a payout list page, with the amounts of
// type A (and N where the answer may carry null), as PaymentOf.
type ListItemOf[A, N any] struct {
	Status         string    `json:"status"`
	Amount         A         `json:"amount"`
	MerchantAmount N         `json:"merchantAmount"`
	PaidAddress    string    `json:"paidAddress"`
	OrderID        string    `json:"orderId"`
	CustomerID     string    `json:"customerId"`
	PayCurrency    Name      `json:"payCurrency"`
	PayNetwork     Name      `json:"payNetwork"`
	CreatedAt      time.Time `json:"createdAt"`
	PayoutWallet   Wallet    `json:"payoutWallet"`
}

// PageOf is a page of GET /v1/payout/list.
type PageOf[A, N any] struct {
	Payout []ListItemOf[A, N] `json:"payout"`
	Count  int                `json:"count"`
}

// Page is a payout list page with exact amounts.
type Page = PageOf[decimal.Decimal, decimal.NullDecimal]

// PageFloat is a payout list page with amounts as float64.
type PageFloat = PageOf[float64, *float64]
