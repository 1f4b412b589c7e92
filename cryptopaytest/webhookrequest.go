package cryptopaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// webhookUserAgent is the User-Agent of the fake's own webhook deliveries,
// which NewWebhookRequest imitates.
const webhookUserAgent = "cryptopaytest-webhook/1"

// WebhookObject is the object a webhook event is about: a payment or a
// payout.
type WebhookObject interface {
	cryptopay.Payment | cryptopay.Payout
}

// WebhookStatus is the status a webhook event carries: a payment status
// for a payment, a payout status for a payout.
type WebhookStatus interface {
	cryptopay.PaymentStatus | cryptopay.PayoutStatus
}

// NewWebhookPayload returns the URL and body of the event the API sends
// when obj reaches status: the URL is webhook.URL(webhookBase,
// secret, obj's OrderID), tokened exactly as a webhook.Handler with the same
// secret expects; the body is obj in the API's status-response JSON (the
// shape the fake's own deliveries have) with its status replaced by status.
// Amounts are written as exact JSON numbers; a PaidAmount or MerchantAmount
// that is not Valid is written as null.
//
// It refuses, with an error matching ErrInvalid or cryptopay.ErrInvalidParams,
// a nil obj, an empty id, orderId or status, a status of the other kind
// (a PayoutStatus for a payment), and whatever webhook.URL refuses
// (a short or all-zero secret, a base that is not an http(s) URL).
//
// The event is test data: never point it at a production endpoint that
// acts on unverified events.
func NewWebhookPayload[T WebhookObject, S WebhookStatus](webhookBase string, secret []byte, obj *T, status S) (url string, body []byte, err error) {
	if obj == nil {
		return "", nil, fmt.Errorf("%w: webhook object is nil", ErrInvalid)
	}
	if status == "" {
		return "", nil, fmt.Errorf("%w: webhook status is empty", ErrInvalid)
	}
	var orderID string
	var wire any
	switch o := any(obj).(type) {
	case *cryptopay.Payment:
		if _, ok := any(status).(cryptopay.PaymentStatus); !ok {
			return "", nil, fmt.Errorf("%w: a payment event needs a cryptopay.PaymentStatus, not %q of a payout", ErrInvalid, status)
		}
		if o.ID == "" {
			return "", nil, fmt.Errorf("%w: payment has no ID", ErrInvalid)
		}
		orderID, wire = o.OrderID, paymentWire(o, string(status))
	case *cryptopay.Payout:
		if _, ok := any(status).(cryptopay.PayoutStatus); !ok {
			return "", nil, fmt.Errorf("%w: a payout event needs a cryptopay.PayoutStatus, not %q of a payment", ErrInvalid, status)
		}
		if o.ID == "" {
			return "", nil, fmt.Errorf("%w: payout has no ID", ErrInvalid)
		}
		orderID, wire = o.OrderID, payoutWire(o, string(status))
	}
	url, err = webhook.URL(webhookBase, secret, orderID)
	if err != nil {
		return "", nil, err
	}
	body, err = json.Marshal(wire)
	if err != nil {
		return "", nil, fmt.Errorf("cryptopaytest: encoding the webhook body: %w", err)
	}
	return url, body, nil
}

// NewWebhookRequest returns the POST the API sends to a webhookUrl when obj
// reaches status (see NewWebhookPayload for the URL and body), with the
// headers the fake's deliveries carry (Content-Type: application/json).
// Hand it to a handler's ServeHTTP with an httptest.ResponseRecorder to
// unit-test the handler without a server, or send it with an http.Client to
// a running receiver. Its context is context.Background(); use
// req.WithContext to change it.
//
//	req, err := cryptopaytest.NewWebhookRequest("https://shop.example/webhooks", secret, payment, cryptopay.PaymentPaid)
//	rec := httptest.NewRecorder()
//	handler.ServeHTTP(rec, req) // rec.Code == 200
func NewWebhookRequest[T WebhookObject, S WebhookStatus](webhookBase string, secret []byte, obj *T, status S) (*http.Request, error) {
	url, body, err := NewWebhookPayload(webhookBase, secret, obj, status)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: webhook request: %v", ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhookUserAgent)
	return req, nil
}

// paymentWire writes p as the fake writes a payment's status response.
func paymentWire(p *cryptopay.Payment, status string) paymentJSON {
	j := paymentJSON{
		PaymentID:         p.ID,
		Status:            status,
		PayAmount:         number(p.PayAmount),
		PayAddress:        p.PayAddress,
		PayQrCodeURI:      p.PayQRCodeURI,
		Currency:          p.Currency,
		Network:           p.Network,
		CustomerID:        p.CustomerID,
		CustomerIP:        p.CustomerIP,
		OrderID:           p.OrderID,
		AdditionalData:    optionalString(p.AdditionalData),
		PlatformFeeByUser: p.PlatformFeeByUser,
		CreatedAt:         wireTimeOrNow(p.CreatedAt),
		UpdatedAt:         wireTimeOrNow(p.UpdatedAt),
		ExpiredAt:         wireTimeOrNow(p.ExpiredAt),
		WebhookURL:        p.WebhookURL,
		PaidAmount:        nullableNumber(p.PaidAmount.Valid, p.PaidAmount.Decimal),
		MerchantAmount:    nullableNumber(p.MerchantAmount.Valid, p.MerchantAmount.Decimal),
		PaidAddress:       optString{state: fieldNull},
	}
	if p.PaidAddress != "" || p.PaidAmount.Valid {
		j.PaidAddress = optString{p.PaidAddress, fieldSet}
	}
	return j
}

// payoutWire writes p as the fake writes a payout's status response.
func payoutWire(p *cryptopay.Payout, status string) payoutJSON {
	return payoutJSON{
		PayoutID:         p.ID,
		Status:           status,
		Amount:           number(p.Amount),
		WalletAddress:    p.WalletAddress,
		NetworkFeeByUser: p.NetworkFeeByUser,
		Currency:         p.Currency,
		Network:          p.Network,
		CustomerID:       p.CustomerID,
		CustomerIP:       p.CustomerIP,
		OrderID:          p.OrderID,
		CreatedAt:        wireTimeOrNow(p.CreatedAt),
		UpdatedAt:        wireTimeOrNow(p.UpdatedAt),
		AdditionalData:   optionalString(p.AdditionalData),
		WebhookURL:       p.WebhookURL,
		PaidAmount:       nullableNumber(p.PaidAmount.Valid, p.PaidAmount.Decimal),
		MerchantAmount:   nullableNumber(p.MerchantAmount.Valid, p.MerchantAmount.Decimal),
	}
}

func nullableNumber(valid bool, d decimal.Decimal) optNumber {
	if !valid {
		return optNumber{state: fieldNull}
	}
	return optNumber{d, fieldSet}
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// wireTimeOrNow writes t, or the current time when t is zero (an object
// built by hand in a test), as the API would never send year 1.
func wireTimeOrNow(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return wireTime(t)
}
