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
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// apiEnv is what this program runs against: the real API when
// CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY are set, otherwise a fresh fake
// server from cryptopaytest, so it runs with no account.
type apiEnv struct {
	client *cryptopay.Client
	fake   *cryptopaytest.Server // nil against a real API: it plays the customer and the processor
	poll   time.Duration         // short on the fake, the default on a real API
}

func connect() (*apiEnv, error) {
	base, key := os.Getenv("CRYPTOPAY_BASE_URL"), os.Getenv("CRYPTOPAY_API_KEY")
	if base == "" && key == "" {
		fake := cryptopaytest.NewServer()
		return &apiEnv{client: fake.Client(), fake: fake, poll: 20 * time.Millisecond}, nil
	}
	if base == "" || key == "" {
		return nil, errors.New("set both CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY, or neither to use the fake server")
	}
	c, err := cryptopay.NewClient(base, key, cryptopay.WithHeader("User-Agent", "cryptopay-examples"))
	if err != nil {
		return nil, err
	}
	return &apiEnv{client: c, poll: cryptopay.DefaultPollInterval}, nil
}

// close stops the fake server, if any.
func (e *apiEnv) close() {
	if e.fake != nil {
		e.fake.Close()
	}
}

// newOrderID returns a fresh order id: unique per order, as reconciling a
// payout and signing a webhook URL require.
func newOrderID(prefix string) string { return prefix + "-" + uuid.NewString()[:8] }

func run(ctx context.Context, out io.Writer) error {
	env, err := connect()
	if err != nil {
		return err
	}
	defer env.close()
	client := env.client

	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount:            decimal.RequireFromString("49.99"),
		PlatformFeeByUser: true, // the customer pays the fee on top
		Currency:          "usdt",
		Network:           "tron",
		CustomerID:        "customer-42",
		CustomerIP:        "203.0.113.7",
		OrderID:           newOrderID("order"),
	})
	if err != nil {
		return fmt.Errorf("create payment: %w", err)
	}
	fmt.Fprintf(out, "Created payment %s for order %s\n", payment.ID, payment.OrderID)
	fmt.Fprintf(out, "  pay %s %s on %s to %s\n", payment.PayAmount, payment.Currency, payment.Network, payment.PayAddress)
	fmt.Fprintf(out, "  QR code URI: %s\n", payment.PayQRCodeURI)
	fmt.Fprintf(out, "  expires at:  %s\n", payment.ExpiredAt.Format("2006-01-02 15:04:05 MST"))

	if env.fake != nil {
		fmt.Fprintln(out, "Simulating the customer paying the full amount ...")
		if err := env.fake.Pay(payment.ID, payment.PayAmount); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "Waiting for the customer to pay (Ctrl-C to stop) ...")
	}

	final, err := client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: payment.ID, PollInterval: env.poll, OnStatusChange: func(p *cryptopay.Payment) {
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
