package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func (a *app) paymentGet(args []string) error {
	return show(a, command{"payment get", "ID", "Show a payment's current status and amounts."}, args, 1,
		func(c *cryptopay.Client, pos []string) (*cryptopay.Payment, error) {
			return c.GetPayment(a.ctx, pos[0])
		},
		func(p *cryptopay.Payment) error { return a.printRows(paymentRows(p)) })
}

func (a *app) paymentWait(args []string) error {
	fs := a.newFlagSet(command{"payment wait", "ID", "Follow a payment's status live until it is terminal. Exit 0 on paid or paid_over,\n" +
		"1 on another terminal status (paid_partial, expired, failed, rejected), 2 on timeout.\n" +
		"Terminal is not final: paid_partial (the rest may follow) and expired (a late transfer)\n" +
		"can still move to paid; the last line says so. Follow such a payment with webhooks or\n" +
		"pgstore's payment tracker ('cryptopay payment tracked').\n" +
		"Table output prints a line per status change; JSON output prints the payment as\n" +
		"one JSON line per status change, the last line being the final state."})
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after `duration` (exit 2)")
	interval := fs.Duration("interval", 2*time.Second, "first wait between two reads; grows up to --max-interval")
	maxInterval := fs.Duration("max-interval", 30*time.Second, "longest wait between two reads")
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *timeout <= 0 || *interval <= 0 || *maxInterval <= 0 {
		return usageErr("payment wait: --timeout, --interval and --max-interval must be positive")
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(a.ctx, *timeout)
	defer cancel()
	enc := json.NewEncoder(jsonWriter{w: a.stdout, secrets: a.secrets})
	onChange := func(p *cryptopay.Payment) {
		if asJSON {
			_ = enc.Encode(p)
			return
		}
		a.printLine("%s  %-12s paid %s of %s %s", a.now().UTC().Format(time.TimeOnly), p.Status,
			orZero(p.PaidAmount), money(p.PayAmount), p.Currency)
	}
	p, err := c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: pos[0], OnStatusChange: onChange, PollInterval: *interval, MaxPollInterval: *maxInterval})
	switch {
	case err != nil && a.ctx.Err() == nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return &exitError{exitNotYet, fmt.Errorf("payment %s: no terminal status after %s (last seen: %s)", pos[0], *timeout, lastStatus(p))}
	case err != nil:
		return err
	case !p.Status.IsSuccess():
		if !asJSON {
			a.printLine("payment %s ended %s (%s)%s", p.ID, p.Status, paymentClass(p.Status), notFinal(p.Status))
		}
		return quietExit(exitNo)
	}
	if !asJSON {
		a.printLine("payment %s is %s (%s)%s", p.ID, p.Status, paymentClass(p.Status), notFinal(p.Status))
	}
	return nil
}

// notFinal says, for a terminal payment status that can still move (the
// lifecycle table's late moves), where it can go: a wait ends there, the
// payment may not.
func notFinal(s cryptopay.PaymentStatus) string {
	switch {
	case s.IsFinal() || !s.IsTerminal():
		return ""
	case s == cryptopay.PaymentPaidPartial:
		return "; not final: the customer can still send the rest (then paid or paid_over)"
	case s == cryptopay.PaymentExpired:
		return "; not final: a late transfer can still make it paid, paid_partial or paid_over"
	}
	return "; not final: a further transfer makes it paid_over"
}

func orZero(d decimal.NullDecimal) string {
	if !d.Valid {
		return "0"
	}
	return d.Decimal.String()
}

func lastStatus(p *cryptopay.Payment) string {
	if p == nil {
		return "nothing read"
	}
	return string(p.Status)
}

func (a *app) paymentCreate(args []string) error {
	fs := a.newFlagSet(command{"payment create", "", "Create a payment link: the answer says where and how much the customer pays."})
	var o objectFlags
	o.register(fs.FlagSet, "the customer bears the platform fee (it is added to the amount to pay)", false)
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	p, err := c.CreatePayment(a.ctx, cryptopay.CreatePaymentParams{
		Amount: o.amount, PlatformFeeByUser: o.feeByUser, Currency: o.currency, Network: o.network,
		CustomerID: o.customerID, CustomerIP: o.customerIP, OrderID: o.orderID,
		AdditionalData: o.additionalData, WebhookURL: o.webhookURL,
	})
	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
		return &exitError{exitOutcomeUnknown, fmt.Errorf("%w; a payment for order %s may exist (the API cannot look one up by order id): "+
			"if you create another, let the customer pay only one of them", err, shellQuote(o.orderID))}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(p)
	}
	return a.printRows(paymentRows(p))
}
