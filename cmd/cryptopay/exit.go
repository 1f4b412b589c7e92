package main

import (
	"context"
	"errors"
	"fmt"

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
