// Command payout sends a payout, waits for its final status, and then shows
// the safe way out of an unknown outcome: the connection drops after the
// server created a second payout, the SDK does not resend it, and the
// program reconciles by orderId instead of paying twice.
//
//	go run ./examples/payout
//
// It talks to the in-process fake server unless CRYPTOPAY_BASE_URL and
// CRYPTOPAY_API_KEY are set; the dropped connection is only simulated on the
// fake.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/examples/internal/demo"
)

func main() { demo.Main("payout", run) }

func run(ctx context.Context, out io.Writer) error {
	env, err := demo.Connect()
	if err != nil {
		return err
	}
	defer env.Close()

	params := cryptopay.CreatePayoutParams{
		WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE",
		Amount:        decimal.RequireFromString("25.5"),
		Currency:      "usdt",
		Network:       "tron",
		CustomerID:    "customer-42",
		CustomerIP:    "203.0.113.7",
		OrderID:       demo.OrderID("withdrawal"),
	}
	payout, err := sendOnce(ctx, env.Client, params, out)
	if err != nil || payout == nil {
		return err
	}

	var processor sync.WaitGroup
	if env.Fake != nil {
		// Play the processor: move the payout along as a real one would.
		processor.Go(func() {
			for _, s := range []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutConfirming, cryptopay.PayoutPaid} {
				time.Sleep(3 * env.PollInterval)
				if err := env.Fake.SetPayoutStatus(payout.ID, s); err != nil {
					fmt.Fprintln(out, "processor:", err)
					return
				}
			}
		})
	}
	final, err := env.Client.WaitForPayout(ctx, payout.ID,
		cryptopay.WithPollInterval(env.PollInterval),
		cryptopay.OnStatusChange(func(p *cryptopay.Payout) { fmt.Fprintf(out, "  status: %s\n", p.Status) }),
	)
	processor.Wait()
	if err != nil {
		return fmt.Errorf("wait for payout: %w", err)
	}
	fmt.Fprintf(out, "Final status: %s (paid %s %s)\n", final.Status, final.PaidAmount.Decimal, final.Currency)

	if env.Fake == nil {
		return nil
	}
	fmt.Fprintln(out, "\nNow the connection drops after the server created the next payout:")
	env.Fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Drop: true})
	second := params
	second.OrderID = demo.OrderID("withdrawal")
	if _, err := sendOnce(ctx, env.Client, second, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "The server holds %d payout(s) for order %s: paid once, not twice.\n",
		env.Fake.PayoutsWithOrderID(second.OrderID), second.OrderID)
	return nil
}

// sendOnce creates a payout and never sends it twice: on an unknown outcome
// it looks the order up. It returns nil without error when the payout exists
// but its outcome had to be reconciled (it is then followed up by orderId).
func sendOnce(ctx context.Context, client *cryptopay.Client, params cryptopay.CreatePayoutParams, out io.Writer) (*cryptopay.Payout, error) {
	payout, err := client.CreatePayout(ctx, params)
	switch {
	case err == nil:
		fmt.Fprintf(out, "Created payout %s: %s %s to %s (status %s)\n", payout.ID, payout.Amount, payout.Currency, payout.WalletAddress, payout.Status)
		return payout, nil
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		fmt.Fprintf(out, "Outcome unknown for order %s; the SDK did not resend it. Reconciling ...\n", params.OrderID)
		item, found, ferr := client.FindPayoutByOrderID(ctx, params.OrderID)
		switch {
		case ferr != nil:
			return nil, fmt.Errorf("still unknown, look again later and do NOT resend: %w", ferr)
		case found:
			fmt.Fprintf(out, "  found: order %s exists with status %s; not sending it again.\n", item.OrderID, item.Status)
			return nil, nil
		default:
			fmt.Fprintln(out, "  not found: it was never created; sending it again is safe.")
			return sendOnce(ctx, client, params, out)
		}
	default:
		return nil, fmt.Errorf("create payout (refused, nothing was sent): %w", err)
	}
}
