// Command cryptopay-fakeserver runs the cryptopaytest fake of the cryptopay
// API as a standalone process on a loopback address, for trying the API with
// curl or testing an application written in any language. Next to the API
// it serves the control API under /_control/ to pay payments, move payouts
// along, advance the clock and inject faults (see
// cryptopaytest.Server.ControlHandler).
//
// Usage:
//
//	cryptopay-fakeserver [flags]
//
// Flags:
//
//	-addr string              listen address, loopback only (default "127.0.0.1:8080")
//	-api-key string           API key to accept (default cryptopaytest.DefaultAPIKey)
//	-fee-percent decimal      payment fee in percent (default 1)
//	-network-fee-percent dec  payout network fee in percent (default 0.5)
//	-payment-ttl duration     time before an unpaid payment expires (default 30m)
//	-balance cur/net=amount   starting balance, repeatable (default 1000 per pair)
//	-unpaid-fields mode       status-only fields before payment: zero, null or omit (default zero)
//	-webhook-attempts n       delivery attempts per webhook (default 6)
//	-webhook-backoff duration wait before the first retry, doubling (default 1s)
//	-webhook-any-host         send webhooks to any host, not only loopback
//	-v                        log every request to stderr
//
// It prints the URL and the key, and stops cleanly on SIGINT or SIGTERM.
// The fake holds everything in memory and handles no real money.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "cryptopay-fakeserver:", err)
		os.Exit(2)
	}
}

// run parses args, serves until ctx ends, then closes the server.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	srv, err := cryptopaytest.StartServer(opts...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cryptopay-fakeserver listening on %s\n", srv.URL)
	fmt.Fprintf(stdout, "  API key:     %s\n", srv.APIKey)
	fmt.Fprintf(stdout, "  control API: %s/_control/\n", srv.URL)
	fmt.Fprintf(stdout, "  try:         curl -H 'x-api-key: %s' %s/v1/currencies\n", srv.APIKey, srv.URL)
	<-ctx.Done()
	fmt.Fprintln(stdout, "cryptopay-fakeserver: shutting down")
	srv.Close()
	return nil
}

// balanceFlag collects -balance currency/network=amount.
type balanceFlag []cryptopaytest.ServerOption

func (b *balanceFlag) String() string { return "" }

func (b *balanceFlag) Set(v string) error {
	pairPart, amount, ok := strings.Cut(v, "=")
	cur, net, ok2 := strings.Cut(pairPart, "/")
	if !ok || !ok2 || cur == "" || net == "" {
		return errors.New("want currency/network=amount, for example usdt/tron=1000")
	}
	d, err := decimal.NewFromString(amount)
	if err != nil || d.IsNegative() {
		return errors.New("amount must be a non-negative decimal")
	}
	*b = append(*b, cryptopaytest.WithBalance(cur, net, d))
	return nil
}

// decimalFlag is a decimal flag value.
type decimalFlag struct{ d *decimal.Decimal }

func (f decimalFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f decimalFlag) Set(v string) error {
	d, err := decimal.NewFromString(v)
	if err != nil {
		return errors.New("not a decimal number")
	}
	*f.d = d
	return nil
}

// parseFlags turns the command line into server options.
func parseFlags(args []string, stderr io.Writer) ([]cryptopaytest.ServerOption, error) {
	fs := flag.NewFlagSet("cryptopay-fakeserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr           = fs.String("addr", "127.0.0.1:8080", "listen `address`; loopback only (127.0.0.1, ::1, localhost)")
		apiKey         = fs.String("api-key", cryptopaytest.DefaultAPIKey, "API `key` the server accepts in x-api-key")
		fee            = decimal.NewFromInt(1)
		networkFee     = decimal.New(5, -1)
		ttl            = fs.Duration("payment-ttl", cryptopaytest.DefaultPaymentTTL, "`duration` before an unpaid payment expires")
		unpaid         = fs.String("unpaid-fields", "zero", "status-only fields before payment: zero (schema-valid), null or omit")
		attempts       = fs.Int("webhook-attempts", 6, "delivery attempts per webhook event")
		backoff        = fs.Duration("webhook-backoff", time.Second, "wait before the first webhook retry; doubles each time")
		anyHost        = fs.Bool("webhook-any-host", false, "send webhooks to any host, not only loopback")
		verbose        = fs.Bool("v", false, "log every request to stderr")
		balances       balanceFlag
		feeFlag        = decimalFlag{&fee}
		networkFeeFlag = decimalFlag{&networkFee}
	)
	fs.Var(feeFlag, "fee-percent", "payment fee in `percent`")
	fs.Var(networkFeeFlag, "network-fee-percent", "payout network fee in `percent`")
	fs.Var(&balances, "balance", "starting balance as `currency/network=amount`; repeatable")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	mode, err := cryptopaytest.ParseUnpaidFields(*unpaid)
	if err != nil {
		return nil, err
	}
	opts := []cryptopaytest.ServerOption{
		cryptopaytest.WithAddr(*addr),
		cryptopaytest.WithAPIKey(*apiKey),
		cryptopaytest.WithFeePercent(fee),
		cryptopaytest.WithNetworkFeePercent(networkFee),
		cryptopaytest.WithPaymentTTL(*ttl),
		cryptopaytest.WithUnpaidFields(mode),
		cryptopaytest.WithWebhookRetry(*attempts, *backoff),
		cryptopaytest.WithControlAPI(),
	}
	if *anyHost {
		opts = append(opts, cryptopaytest.WithWebhookAnyHost())
	}
	if *verbose {
		opts = append(opts, cryptopaytest.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	return append(opts, balances...), nil
}
