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

// Exit codes. 1 and 2 are a command's negative and "not yet" answers; the
// others mean the same for every command.
const (
	exitOK             = 0   // success
	exitNo             = 1   // a negative answer: wait ended on a non-success status, payout not created, receiver refused
	exitNotYet         = 2   // no answer yet: wait timed out, reconcile still unknown
	exitFailed         = 3   // the request failed: API error, network, unreadable answer
	exitOutcomeUnknown = 4   // a create request may have taken effect: reconcile before retrying
	exitNotConfirmed   = 5   // payout create was not confirmed
	exitUsage          = 64  // bad command, flag, argument or configuration
	exitInterrupted    = 130 // stopped by SIGINT/SIGTERM
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
	}
	return a.main(args)
}

// app is one invocation: its streams, environment and global settings.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	isTerminal     func(any) bool
	now            func() time.Time
	clientOpts     []cryptopay.Option // added to the Client's options (tests: a fast retry policy)
	secrets        []string           // the API key and webhook secret once read: never printed
	dbSecrets      []string           // the database connection string and its password: never printed

	global globalFlags
}

// safeText is server or database text (an answer's fields, an error built
// from one) made safe to print: no part of a secret the CLI read, no
// database password, no control character. Every table cell, status line
// and error line goes through it.
func (a *app) safeText(s string) string {
	return termSafe(redactSecrets(dbErrorText(s, a.dbSecrets), a.secrets...))
}

// exitError carries an exit code other than exitFailed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a usage error (exit 64).
func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// quietExit ends a command with a code after it has said everything itself.
type quietExit int

func (q quietExit) Error() string { return fmt.Sprintf("exit %d", int(q)) }

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

// exitCode maps an error to the documented exit codes.
func exitCode(ctx context.Context, err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exitInterrupted
	case errors.Is(err, cryptopay.ErrOutcomeUnknown):
		return exitOutcomeUnknown
	case errors.Is(err, cryptopay.ErrInvalidParams):
		return exitUsage
	}
	return exitFailed
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

// keyOnArgv refuses an API key or webhook secret given as a flag value:
// ps and shell history would show it. The value is never echoed.
func keyOnArgv(args []string) string {
	for _, arg := range args {
		if arg == "--" {
			return ""
		}
		name := strings.TrimLeft(arg, "-")
		if name == arg {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		switch name {
		case "api-key", "apikey", "key":
			return "the API key is not accepted on the command line (ps shows it); set CRYPTOPAY_API_KEY or use --api-key-file"
		case "secret", "webhook-secret":
			return "the webhook secret is not accepted on the command line (ps shows it); set CRYPTOPAY_WEBHOOK_SECRET or use --secret-file"
		}
	}
	return ""
}
