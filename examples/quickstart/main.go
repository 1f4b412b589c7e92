// Command quickstart takes a crypto payment end to end: it creates a payment
// link, has the customer pay (simulated on the bundled fake server), waits
// for the final status and prints it.
//
//	go run ./examples/quickstart
//
// It talks to the in-process fake server unless CRYPTOPAY_BASE_URL and
// CRYPTOPAY_API_KEY are set; against a real API it waits for a real payment.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/examples/internal/demo"
)

func main() { demo.Main("quickstart", run) }

func run(ctx context.Context, out io.Writer) error {
	env, err := demo.Connect()
	if err != nil {
		return err
	}
	defer env.Close()
	client := env.Client

	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount:            decimal.RequireFromString("49.99"),
		PlatformFeeByUser: true, // the customer pays the fee on top
		Currency:          "usdt",
		Network:           "tron",
		CustomerID:        "customer-42",
		CustomerIP:        "203.0.113.7",
		OrderID:           demo.OrderID("order"),
	})
	if err != nil {
		return fmt.Errorf("create payment: %w", err)
	}
	fmt.Fprintf(out, "Created payment %s for order %s\n", payment.ID, payment.OrderID)
	fmt.Fprintf(out, "  pay %s %s on %s to %s\n", payment.PayAmount, payment.Currency, payment.Network, payment.PayAddress)
	fmt.Fprintf(out, "  QR code URI: %s\n", payment.PayQRCodeURI)
	fmt.Fprintf(out, "  expires at:  %s\n", payment.ExpiredAt.Format("2006-01-02 15:04:05 MST"))

	if env.Fake != nil {
		fmt.Fprintln(out, "Simulating the customer paying the full amount ...")
		if err := env.Fake.Pay(payment.ID, payment.PayAmount); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "Waiting for the customer to pay (Ctrl-C to stop) ...")
	}

	final, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: payment.ID, PollInterval: env.PollInterval, OnStatusChange: func(p *cryptopay.Payment) {
		fmt.Fprintf(out, "  status: %s\n", p.Status)
	}})
	if err != nil {
		return fmt.Errorf("wait for payment: %w", err)
	}
	paid := "nothing"
	if final.PaidAmount.Valid {
		paid = final.PaidAmount.Decimal.String() + " " + final.Currency
	}
	fmt.Fprintf(out, "Final status: %s (paid %s)\n", final.Status, paid)
	switch {
	case final.Status.IsSuccess() && !final.Status.NeedsAction():
		fmt.Fprintln(out, "Order can be fulfilled.")
	case final.Status.NeedsAction():
		fmt.Fprintln(out, "A person should look at this payment before fulfilling the order.")
	default:
		fmt.Fprintln(out, "Payment did not complete; do not fulfil the order.")
	}
	return nil
}
