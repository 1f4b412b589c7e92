package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

func (a *app) webhookURL(args []string) error {
	fs := a.newFlagSet(command{"webhook url", "", "Print the webhookUrl to give a payment or payout for an order: --base with a token\n" +
		"(an HMAC of the order id under the webhook secret) that a webhook.Handler checks.\n" +
		"Prints the bare URL, for $(...), unless --output json."})
	orderID := fs.String("order-id", "", "the order `id` (required)")
	base := fs.String("base", "", "your webhook endpoint `URL`, for example https://shop.example/webhooks (required)")
	secretFile := fs.String("secret-file", "", "read the webhook secret from `path` (default $"+envWebhookSecret+")")
	a.writes(fs, outTable, outJSON) // the bare URL by default, for $(...)
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *orderID == "" || *base == "" {
		return usageErr("webhook url: --order-id and --base are required")
	}
	secret, err := a.secret(*secretFile, envWebhookSecret, "webhook secret", "--secret-file")
	if err != nil {
		return err
	}
	u, err := webhook.URL(*base, secret, *orderID)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if a.format == outJSON {
		return a.printJSON(map[string]string{"orderId": *orderID, "url": u})
	}
	_, err = fmt.Fprintln(a.stdout, u)
	return err
}

// sendOutput is webhook send's JSON answer. URL is --to, without the token.
type sendOutput struct {
	Kind       string `json:"kind"`
	ID         string `json:"id"`
	Status     string `json:"status"`
	URL        string `json:"url"`
	StatusCode int    `json:"statusCode"`
	Response   string `json:"response"`
}

func (a *app) webhookSend(args []string) error {
	fs := a.newFlagSet(command{"webhook send", "", "Read a payment or payout through the API and post the event the API would send\n" +
		"for it to --to, tokened with the webhook secret, like a real delivery. Exit 0 when\n" +
		"the receiver answers 2xx, 1 when it answers anything else."})
	to := fs.String("to", "", "your webhook endpoint `URL` without a token (required; loopback unless --allow-remote)")
	paymentID := fs.String("payment", "", "send an event for this payment `id`")
	payoutID := fs.String("payout", "", "send an event for this payout `id`")
	status := fs.String("status", "", "the `status` the event carries (default: the object's current status)")
	secretFile := fs.String("secret-file", "", "read the webhook secret from `path` (default $"+envWebhookSecret+")")
	allowRemote := fs.Bool("allow-remote", false, "allow a --to host that is not loopback")
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	if (*paymentID == "") == (*payoutID == "") {
		return usageErr("webhook send: give exactly one of --payment ID and --payout ID")
	}
	if err := checkReceiver(*to, *allowRemote); err != nil {
		return err
	}
	secret, err := a.secret(*secretFile, envWebhookSecret, "webhook secret", "--secret-file")
	if err != nil {
		return err
	}
	req, out, err := a.buildEvent(*to, secret, *paymentID, *payoutID, *status)
	if err != nil {
		return err
	}
	if err := a.post(req, &out); err != nil {
		return err
	}
	if asJSON {
		err = a.printJSON(out)
	} else {
		err = a.printRows([][2]string{{"Event", out.Kind + " " + out.ID + " " + out.Status}, {"Sent to", out.URL},
			{"Answer", fmt.Sprintf("%d %s", out.StatusCode, http.StatusText(out.StatusCode))}, {"Body", out.Response}})
	}
	if err != nil {
		return err
	}
	if out.StatusCode < 200 || out.StatusCode > 299 {
		return quietExit(exitNo)
	}
	return nil
}

// buildEvent reads the object through the API and builds its event.
func (a *app) buildEvent(to string, secret []byte, paymentID, payoutID, status string) (*http.Request, sendOutput, error) {
	c, err := a.client()
	if err != nil {
		return nil, sendOutput{}, err
	}
	out := sendOutput{URL: to}
	var (
		req      *http.Request
		buildErr error
	)
	if paymentID != "" {
		p, err := c.GetPayment(a.ctx, paymentID)
		if err != nil {
			return nil, out, err
		}
		st := p.Status
		if status != "" {
			st = cryptopay.PaymentStatus(status)
		}
		out.Kind, out.ID, out.Status = "payment", p.ID, string(st)
		req, buildErr = cryptopaytest.NewWebhookRequest(to, secret, p, st)
	} else {
		p, err := c.GetPayout(a.ctx, payoutID)
		if err != nil {
			return nil, out, err
		}
		st := p.Status
		if status != "" {
			st = cryptopay.PayoutStatus(status)
		}
		out.Kind, out.ID, out.Status = "payout", p.ID, string(st)
		req, buildErr = cryptopaytest.NewWebhookRequest(to, secret, p, st)
	}
	if buildErr != nil {
		return nil, out, toFlagError(buildErr)
	}
	return req.WithContext(a.ctx), out, nil
}

// toFlagError says a refused --to as the flag the user gave: the SDK names
// the URL's parameter "base" (webhook.URL's), which send calls --to.
func toFlagError(err error) error {
	var ve *cryptopay.ValidationError
	if errors.As(err, &ve) && ve.Field == "base" {
		err = errors.New("--to: " + ve.Reason)
	}
	return &exitError{exitUsage, fmt.Errorf("webhook send: %w", err)}
}

// post sends req without following redirects and records the answer.
func (a *app) post(req *http.Request, out *sendOutput) error {
	hc := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries the token; do not print it
		}
		return fmt.Errorf("webhook send: posting to %s: %w", out.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	out.StatusCode, out.Response = resp.StatusCode, strings.TrimSpace(string(body))
	return nil
}

// checkReceiver refuses a --to that is not an http(s) URL, or that is not
// on loopback unless allowRemote.
func checkReceiver(to string, allowRemote bool) error {
	if to == "" {
		return usageErr("webhook send: --to is required")
	}
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return usageErr("webhook send: --to %q: want an http or https URL", to)
	}
	host := u.Hostname()
	if !allowRemote && !isLoopback(host) {
		return usageErr("webhook send: --to host %q is not loopback; pass --allow-remote to send test events elsewhere", host)
	}
	return nil
}
