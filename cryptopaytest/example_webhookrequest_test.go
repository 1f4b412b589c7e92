package cryptopaytest_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// A unit test of a merchant's webhook handler: build the event the API
// would send for a paid payment and hand it to the handler, with no server
// and no delivery loop.
func ExampleNewWebhookRequest() {
	secret := []byte("test-secret-0123456789abcdef0123") // in a test; production secrets come from a vault
	handler, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			fmt.Println("order", p.OrderID, "is", p.Status, "paid", p.PaidAmount.Decimal)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	payment := &cryptopay.Payment{
		ID:         "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e",
		OrderID:    "order-42",
		PayAmount:  decimal.RequireFromString("10.1"),
		PaidAmount: decimal.NewNullDecimal(decimal.RequireFromString("10.1")),
		Currency:   "usdt",
		Network:    "tron",
		CreatedAt:  time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
	}
	req, err := cryptopaytest.NewWebhookRequest("https://shop.example/webhooks", secret, payment, cryptopay.PaymentPaid)
	if err != nil {
		log.Fatal(err)
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println("handler answered", rec.Code)

	// The same event tokened with another secret is refused.
	forged, _ := cryptopaytest.NewWebhookRequest("https://shop.example/webhooks", []byte("not-the-shop-secret-000000000000"), payment, cryptopay.PaymentPaid)
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, forged)
	fmt.Println("forged event answered", rec.Code)
	// Output:
	// order order-42 is paid paid 10.1
	// handler answered 200
	// forged event answered 401
}
