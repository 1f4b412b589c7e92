// Command cryptopay is the operator CLI for the cryptopay API: read and
// wait for payments, create and reconcile payouts, export the payout list,
// read balances, build and send test webhooks, run the fake server, and
// work pgstore's payout queue (list, approve, reject, retry; enqueue a CSV
// file of payouts) on the database named by CRYPTOPAY_DATABASE_URL.
//
// Usage:
//
//	cryptopay [global flags] <command> [flags] [args]
//
// Run `cryptopay help` for the commands, the environment variables and the
// exit codes. The API key is read from CRYPTOPAY_API_KEY or from the file
// named by --api-key-file, never from a flag value (which ps would show).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. getenv
// reads the environment (os.Getenv in main; a map in tests).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{
		ctx:        ctx,
		stdin:      stdin,
		stdout:     stdout,
		stderr:     stderr,
		getenv:     getenv,
		isTerminal: isTerminal,
		now:        time.Now,
		login:      osLogin,
	}
	return a.main(args)
}

func (a *app) main(args []string) int {
	err := userError(a.dispatch(args))
	if err == nil {
		return exitOK
	}
	var q quietExit
	if errors.As(err, &q) {
		return int(q)
	}
	code := exitCode(a.ctx, err)
	if code == exitInterrupted {
		fmt.Fprintln(a.stderr, "cryptopay: interrupted")
		return code
	}
	fmt.Fprintln(a.stderr, "cryptopay: "+a.safeText(errorLine(err)))
	return code
}

// errorLine is err on one line, with the API's request id when there is
// one and the message does not carry it yet. It carries server text (an
// API error's code and message, a request id): print it through safeText.
func errorLine(err error) string {
	msg := strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "cryptopay: ")
	var apiErr *cryptopay.APIError
	if errors.As(err, &apiErr) && apiErr.RequestID != "" && !strings.Contains(msg, apiErr.RequestID) {
		msg += " (request id " + apiErr.RequestID + ")"
	}
	return msg
}
