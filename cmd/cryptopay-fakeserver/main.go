// Command cryptopay-fakeserver runs the cryptopaytest fake of the cryptopay
// API as a standalone process on a loopback address, for trying the API with
// curl or testing an application written in any language. Next to the API
// it serves the control API under /_control/ to pay payments, move payouts
// along, advance the clock and inject faults (see
// cryptopaytest.Server.ControlHandler), and at / the sandbox dashboard, a
// web page with the same state and buttons.
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
// It exits 0 after a clean stop or -h, and 64 (EX_USAGE, as `cryptopay
// fake` does) on a bad flag, a non-loopback address or a server that
// cannot start.
// `cryptopay fake` runs the same server with the same flags.
// The fake holds everything in memory and handles no real money.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/cryptopay/cryptopay-go/cmd/internal/fakeserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitUsage is the exit code of a bad flag, a refused address or a server
// that cannot start: 64 (EX_USAGE), as `cryptopay fake` exits for the same
// command line.
const exitUsage = 64

// run serves until ctx ends and returns the exit code: 0 after a clean
// stop or -h, exitUsage on a bad flag, a non-loopback address or a server
// that cannot start.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := fakeserve.Run(ctx, "cryptopay-fakeserver", args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "cryptopay-fakeserver:", err)
		return exitUsage
	}
}
