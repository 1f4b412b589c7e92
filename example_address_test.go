package cryptopay_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// A payout to an address of another network is refused before anything
// is sent: the fake sees no request.
func ExampleCreatePayoutParams_Validate() {
	p := cryptopay.CreatePayoutParams{
		WalletAddress: "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC", // a TRON address
		Amount:        decimal.RequireFromString("25"), Currency: "usdt", Network: "erc20",
		CustomerID: "cust-7", CustomerIP: "192.0.2.7", OrderID: "withdrawal-7",
	}
	err := p.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, cryptopay.ErrInvalidParams))

	p.Network, p.Currency = "tron", "USDT"
	fmt.Println(p.Validate())
	// Output:
	// cryptopay: invalid WalletAddress: is not a valid "erc20" address: is a TRON address, not an EVM (0x) one
	// true
	// cryptopay: invalid Currency: "USDT" is not canonical: use "usdt"
}

// WithAddressChecker checks a network the SDK does not know; the same
// Checker goes to ValidateWith wherever payouts are checked outside
// CreatePayout.
func ExampleWithAddressChecker() {
	srv := cryptopaytest.NewServer(cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "sol", Network: "solana"}))
	defer srv.Close()
	checker := address.Checker{}.With("solana", func(addr string) error {
		if len(addr) < 32 || len(addr) > 44 {
			return errors.New("a Solana address has 32 to 44 base58 characters")
		}
		return nil
	})
	client := srv.Client(cryptopay.WithAddressChecker(checker))

	p := cryptopay.CreatePayoutParams{WalletAddress: "too-short", Amount: decimal.RequireFromString("1"),
		Currency: "sol", Network: "solana", CustomerID: "cust-7", CustomerIP: "192.0.2.7", OrderID: "sol-1"}
	_, err := client.CreatePayout(context.Background(), p)
	fmt.Println(err)
	fmt.Println(p.ValidateWith(checker) != nil, p.Validate() == nil) // Validate: the built-ins, solana unchecked
	fmt.Println(srv.Requests(cryptopaytest.RouteCreatePayout))
	// Output:
	// cryptopay: invalid WalletAddress: is not a valid "solana" address: a Solana address has 32 to 44 base58 characters
	// true true
	// 0
}
