package oapibench_test

// The floor: the hand-written client of the root module's benchmarks
// (bench_test.go there, unexported), written again here to the same rules:
// plain net/http and encoding/json, the same headers as the SDK, the body
// read whole under a cap, decoded into a struct of the SDK's fields with
// exact amounts (decimal) and time.Time timestamps.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

type floorClient struct {
	hc   *http.Client
	base string
}

func (f *floorClient) call(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "floor/0.1.0 (go)")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %d", errStatus, resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// floorPayment has the SDK's Payment fields, by their wire names.
type floorPayment struct {
	ID                string              `json:"paymentId"`
	Status            string              `json:"status"`
	PayAmount         decimal.Decimal     `json:"payAmount"`
	PayAddress        string              `json:"payAddress"`
	PayQRCodeURI      string              `json:"payQrCodeUri"`
	Currency          string              `json:"currency"`
	Network           string              `json:"network"`
	CustomerID        string              `json:"customerId"`
	CustomerIP        string              `json:"customerIp"`
	OrderID           string              `json:"orderId"`
	AdditionalData    string              `json:"additionalData"`
	PlatformFeeByUser bool                `json:"platformFeeByUser"`
	CreatedAt         time.Time           `json:"createdAt"`
	UpdatedAt         time.Time           `json:"updatedAt"`
	ExpiredAt         time.Time           `json:"expiredAt"`
	WebhookURL        string              `json:"webhookUrl"`
	PaidAmount        decimal.NullDecimal `json:"paidAmount"`
	MerchantAmount    decimal.NullDecimal `json:"merchantAmount"`
	PaidAddress       string              `json:"paidAddress"`
}

// floorNumber writes a decimal as a bare JSON number, as the SDK does.
type floorNumber decimal.Decimal

func (n floorNumber) MarshalJSON() ([]byte, error) { return []byte(decimal.Decimal(n).String()), nil }

type floorCreatePayment struct {
	Amount            floorNumber `json:"amount"`
	PlatformFeeByUser bool        `json:"platformFeeByUser"`
	Currency          string      `json:"currency"`
	Network           string      `json:"network"`
	CustomerID        string      `json:"customerId"`
	CustomerIP        string      `json:"customerIp"`
	OrderID           string      `json:"orderId"`
	AdditionalData    string      `json:"additionalData,omitempty"`
	WebhookURL        string      `json:"webhookUrl,omitempty"`
}

func floorCreate(p cryptopay.CreatePaymentParams) floorCreatePayment {
	return floorCreatePayment{
		Amount: floorNumber(p.Amount), PlatformFeeByUser: p.PlatformFeeByUser, Currency: p.Currency,
		Network: p.Network, CustomerID: p.CustomerID, CustomerIP: p.CustomerIP, OrderID: p.OrderID,
		AdditionalData: p.AdditionalData, WebhookURL: p.WebhookURL,
	}
}

// floorCreatePaymentCall and floorGetPayment marshal the body per call and
// decode the answer, as the root's floor does.
func floorCreatePaymentCall(ctx context.Context, f *floorClient, p cryptopay.CreatePaymentParams) (*floorPayment, error) {
	body, err := json.Marshal(floorCreate(p))
	if err != nil {
		return nil, err
	}
	out := new(floorPayment)
	return out, f.call(ctx, http.MethodPost, "/v1/payment", body, out)
}

func floorGetPayment(ctx context.Context, f *floorClient, id string) (*floorPayment, error) {
	out := new(floorPayment)
	return out, f.call(ctx, http.MethodGet, "/v1/payment/"+id+"/status", nil, out)
}
