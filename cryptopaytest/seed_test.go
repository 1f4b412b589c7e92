package cryptopaytest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// A test that needs a large account seeds it instead of creating 100,000
// payouts over HTTP; reconciling the newest still costs a few requests.
func ExampleServer_SeedPayouts() {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	if err := srv.SeedPayouts(100_000, "old-", time.Second); err != nil {
		log.Fatal(err)
	}
	client := srv.Client()
	ctx := context.Background()
	attempted := time.Now()
	_, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("25"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "withdrawal-43",
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: "withdrawal-43", AttemptedAt: attempted})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.PayoutCount(), res.Verdict, res.Requests <= 3)
	// Output:
	// 100001 exists true
}
