package cryptopay_test

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

func ExampleNewClient() {
	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"),
		cryptopay.WithTimeout(20*time.Second),
		cryptopay.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		cryptopay.WithHeader("User-Agent", "myshop/1.0"),
	)
	if err != nil {
		log.Fatal(err) // an empty key, a bad URL, or http:// to a remote host
	}
	_ = client
}

func ExampleAPIError() {
	err := error(&cryptopay.APIError{StatusCode: 404, Code: "not_found", Message: "payment not found"})

	var apiErr *cryptopay.APIError // note the & below: errors.As needs a pointer to it
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	fmt.Println(errors.Is(err, cryptopay.ErrNotFound))
	// Output:
	// 404 not_found
	// true
}

func ExampleCreatePaymentParams_MarshalJSON() {
	body, _ := cryptopay.CreatePaymentParams{
		Amount:     decimal.RequireFromString("0.1"),
		Currency:   "usdt",
		Network:    "tron",
		CustomerID: "cus_1",
		CustomerIP: "203.0.113.7",
		OrderID:    "order-1",
	}.MarshalJSON()
	fmt.Println(string(body))
	// Output:
	// {"amount":0.1,"platformFeeByUser":false,"currency":"usdt","network":"tron","customerId":"cus_1","customerIp":"203.0.113.7","orderId":"order-1"}
}

func ExampleWithLogger() {
	client, err := cryptopay.NewClient("https://api.example.com", "key",
		cryptopay.WithLogger(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}
