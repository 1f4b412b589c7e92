package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func (a *app) payoutGet(args []string) error {
	return show(a, command{"payout get", "ID", "Show a payout's current status and amounts."}, args, 1,
		func(c *cryptopay.Client, pos []string) (*cryptopay.Payout, error) { return c.GetPayout(a.ctx, pos[0]) },
		func(p *cryptopay.Payout) error { return a.printRows(payoutRows(p)) })
}

func (a *app) payoutCreate(args []string) error {
	fs := a.newFlagSet(command{"payout create", "", "Send crypto to a wallet. Shows the payout and asks for confirmation on the terminal\n" +
		"unless --yes is given; refuses (exit 5) when stdin is not a terminal and --yes is absent.\n" +
		"A payout is never resent: on an unknown outcome (exit 4) run 'cryptopay payout find'."})
	var o objectFlags
	o.register(fs.FlagSet, "the end user bears the network fee", true)
	wallet := fs.String("wallet", "", "destination wallet `address` (required; checked offline against --network: format, checksum, the right network; an unknown network is not checked, and a wrong address loses the funds)")
	yes := fs.Bool("yes", false, "create the payout without asking")
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	params := cryptopay.CreatePayoutParams{
		WalletAddress: *wallet, NetworkFeeByUser: o.feeByUser, Amount: o.amount, Currency: o.currency, Network: o.network,
		CustomerID: o.customerID, CustomerIP: o.customerIP, OrderID: o.orderID,
		AdditionalData: o.additionalData, WebhookURL: o.webhookURL,
	}
	if err := params.Validate(); err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	if !*yes {
		if err := a.confirmPayout(params); err != nil {
			return err
		}
	}
	attempted := a.now()
	p, err := c.CreatePayout(a.ctx, params)
	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
		return &exitError{exitOutcomeUnknown, fmt.Errorf("%w; do NOT resend: run 'cryptopay payout find --order-id %s --attempted-at %s'",
			err, shellQuote(params.OrderID), attempted.UTC().Format(time.RFC3339))}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(p)
	}
	return a.printRows(payoutRows(p))
}

// confirmPayout shows the payout on stderr and reads "yes" from stdin.
func (a *app) confirmPayout(p cryptopay.CreatePayoutParams) error {
	if !a.isTerminal(a.stdin) {
		return &exitError{exitNotConfirmed, errors.New("payout create: stdin is not a terminal, so nobody can confirm; pass --yes to create the payout without asking")}
	}
	feeBy := "you"
	if p.NetworkFeeByUser {
		feeBy = "the user"
	}
	fmt.Fprintf(a.stderr, "About to send %s %s on %s\n  to wallet   %s\n  order       %s\n  customer    %s (%s)\n  network fee paid by %s\n",
		money(p.Amount), a.cell(p.Currency), a.cell(p.Network), a.cell(p.WalletAddress), a.cell(p.OrderID), a.cell(p.CustomerID), a.cell(p.CustomerIP), feeBy)
	fmt.Fprint(a.stderr, "Type yes to create this payout: ")
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case <-a.ctx.Done():
		fmt.Fprintln(a.stderr)
		return a.ctx.Err()
	case line := <-answer:
		if strings.EqualFold(strings.TrimSpace(line), "yes") {
			return nil
		}
	}
	return &exitError{exitNotConfirmed, errors.New("payout create: not confirmed; nothing was sent")}
}

// findOutput is payout find's JSON answer.
type findOutput struct {
	Verdict  string    `json:"verdict"`
	OrderID  string    `json:"orderId"`
	Reason   string    `json:"reason"`
	Requests int       `json:"requests"`
	Payout   *listItem `json:"payout,omitempty"`
}

func (a *app) payoutFind(args []string) error {
	fs := a.newFlagSet(command{"payout find", "", "Decide whether a payout whose creation had an unknown outcome exists, by its order id.\n" +
		"Verdicts: exists (exit 0: do not create it again), not_created (exit 1: creating it\n" +
		"again is safe), still_unknown (exit 2: do not resend; look again later)."})
	orderID := fs.String("order-id", "", "the order `id` the payout was created with (required)")
	attemptedAt := fs.String("attempted-at", "", "when the create was sent: RFC 3339 `time`, or a duration ago such as 15m\n(default: unknown, the whole list is searched)")
	a.writes(fs, outJSON, outTable, outCSV)
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	if *orderID == "" {
		return usageErr("payout find: --order-id is required")
	}
	at, err := a.parseAttemptedAt(*attemptedAt)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	res, rerr := c.ReconcilePayout(a.ctx, cryptopay.ReconcileParams{OrderID: *orderID, AttemptedAt: at})
	if rerr != nil && (res == nil || a.ctx.Err() != nil) {
		return rerr
	}
	out := findOutput{Verdict: res.Verdict.String(), OrderID: *orderID, Reason: a.safeText(res.Reason), Requests: res.Requests}
	if *attemptedAt == "" && res.Verdict == cryptopay.PayoutNotCreated {
		out.Reason = "no payout with this orderId is in the list (the whole list was read); without --attempted-at, " +
			"a payout created in the last " + cryptopay.DefaultReconcileSettleTime.String() + " may not be listed yet"
	}
	if res.Payout != nil {
		it := newListItem(*res.Payout)
		out.Payout = &it
	}
	if asJSON {
		err = a.printJSON(out)
	} else {
		err = a.printFind(out)
	}
	if err != nil {
		return err
	}
	if rerr != nil { // the list could not be read as evidence: still unknown
		return &exitError{exitNotYet, fmt.Errorf("payout find: still_unknown: %w", rerr)}
	}
	switch res.Verdict {
	case cryptopay.PayoutExists:
		return nil
	case cryptopay.PayoutNotCreated:
		return quietExit(exitNo)
	}
	return quietExit(exitNotYet)
}

func (a *app) printFind(out findOutput) error {
	advice := map[string]string{
		"exists":        "the payout exists: do NOT create it again",
		"not_created":   "no payout was created: creating it again is safe",
		"still_unknown": "the evidence does not decide: do NOT resend; look again later or ask the processor",
	}[out.Verdict]
	rows := [][2]string{{"Verdict", out.Verdict + " (" + advice + ")"}, {"Order ID", out.OrderID}, {"Reason", out.Reason}}
	if p := out.Payout; p != nil {
		rows = append(rows, [][2]string{
			{"Status", p.Status}, {"Amount", p.Amount + " " + p.Currency + " on " + p.Network},
			{"Wallet address", p.WalletAddress}, {"Created", p.CreatedAt},
		}...)
	}
	return a.printRows(rows)
}

// parseAttemptedAt reads an RFC 3339 time or a duration before now; ""
// means unknown: the zero time, so the search covers the whole list.
func (a *app) parseAttemptedAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return a.now().Add(-d), nil
	}
	return time.Time{}, usageErr("payout find: --attempted-at %q: want an RFC 3339 time (2025-01-02T15:04:05Z) or a duration ago (15m)", s)
}
