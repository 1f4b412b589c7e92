// Command payout sends a payout, waits for its final status, and then shows
// the safe way out of an unknown outcome, twice: the connection drops after
// the server created a second payout (ReconcilePayout says it exists: it is
// not sent again), then the connection drops before a third one was
// processed (ReconcilePayout says it was not created: sending it again is
// safe). Either way the account holds each payout once.
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
	"os"
	"os/signal"
	"sync"
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
		fmt.Fprintln(os.Stderr, "payout:", err)
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

	params := cryptopay.CreatePayoutParams{
		WalletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE",
		Amount:        decimal.RequireFromString("25.5"),
		Currency:      "usdt",
		Network:       "tron",
		CustomerID:    "customer-42",
		CustomerIP:    "203.0.113.7",
		OrderID:       newOrderID("withdrawal"),
	}
	payout, err := sendOnce(ctx, env.client, params, 0, out)
	if err != nil || payout == nil {
		return err
	}

	var processor sync.WaitGroup
	if env.fake != nil {
		// Play the processor: move the payout along as a real one would.
		processor.Go(func() {
			for _, s := range []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutConfirming, cryptopay.PayoutPaid} {
				time.Sleep(3 * env.poll)
				if err := env.fake.SetPayoutStatus(payout.ID, s); err != nil {
					fmt.Fprintln(out, "processor:", err)
					return
				}
			}
		})
	}
	final, err := env.client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{ID: payout.ID, PollInterval: env.poll, OnStatusChange: func(p *cryptopay.Payout) { fmt.Fprintf(out, "  status: %s\n", p.Status) }})
	processor.Wait()
	if err != nil {
		return fmt.Errorf("wait for payout: %w", err)
	}
	fmt.Fprintf(out, "Final status: %s (paid %s %s)\n", final.Status, final.PaidAmount.Decimal, final.Currency)

	if env.fake == nil {
		return nil
	}
	return dropConnections(ctx, env, params, out)
}

// dropConnections shows both ways a create can end in an unknown outcome,
// on the fake: the connection drops after the payout was created, then
// before it was processed. ReconcilePayout tells them apart.
func dropConnections(ctx context.Context, env *apiEnv, params cryptopay.CreatePayoutParams, out io.Writer) error {
	// The fake lists a payout at once, so a short settle time suffices;
	// against the real API leave SettleTime zero (the default).
	settle := 10 * env.poll
	for _, drop := range []struct {
		what  string
		fault cryptopaytest.Fault
	}{
		{"after the server created the next payout", cryptopaytest.Fault{Process: true, Drop: true}},
		{"before the server processed the next payout", cryptopaytest.Fault{Drop: true}},
	} {
		fmt.Fprintf(out, "\nNow the connection drops %s:\n", drop.what)
		env.fake.InjectFault(cryptopaytest.RouteCreatePayout, drop.fault)
		next := params
		next.OrderID = newOrderID("withdrawal")
		if _, err := sendOnce(ctx, env.client, next, settle, out); err != nil {
			return err
		}
		fmt.Fprintf(out, "The server holds %d payout(s) for order %s: paid once, not twice.\n",
			env.fake.PayoutsWithOrderID(next.OrderID), next.OrderID)
	}
	return nil
}

// sendOnce creates a payout and never sends it twice: on an unknown outcome
// it reconciles by orderId (settle 0: DefaultReconcileSettleTime). It
// returns nil without error when the payout exists but its outcome had to
// be reconciled (it is then followed up by orderId).
func sendOnce(ctx context.Context, client *cryptopay.Client, params cryptopay.CreatePayoutParams, settle time.Duration, out io.Writer) (*cryptopay.Payout, error) {
	attempted := time.Now() // before sending: the reconcile searches back to it
	payout, err := client.CreatePayout(ctx, params)
	switch {
	case err == nil:
		fmt.Fprintf(out, "Created payout %s: %s %s to %s (status %s)\n", payout.ID, payout.Amount, payout.Currency, payout.WalletAddress, payout.Status)
		return payout, nil
	case !errors.Is(err, cryptopay.ErrOutcomeUnknown):
		return nil, fmt.Errorf("create payout (refused, nothing was sent): %w", err)
	}
	fmt.Fprintf(out, "Outcome unknown for order %s; the SDK did not resend it. Reconciling ...\n", params.OrderID)
	res, err := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{
		OrderID: params.OrderID, AttemptedAt: attempted, SettleTime: settle,
	})
	if err != nil {
		return nil, fmt.Errorf("still unknown, look again later and do NOT resend: %w", err)
	}
	fmt.Fprintf(out, "  verdict %s after %d list request(s): %s\n", res.Verdict, res.Requests, res.Reason)
	switch res.Verdict {
	case cryptopay.PayoutExists:
		fmt.Fprintf(out, "  order %s exists with status %s; not sending it again.\n", res.Payout.OrderID, res.Payout.Status)
		return nil, nil
	case cryptopay.PayoutNotCreated:
		fmt.Fprintln(out, "  it was never created; sending it again is safe.")
		return sendOnce(ctx, client, params, settle, out)
	default:
		return nil, fmt.Errorf("order %s: still unknown (%s); look again later and do NOT resend", params.OrderID, res.Reason)
	}
}
