package cryptopay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// The Observer hooks, as the request loop (request.go) calls them. What an
// Observer receives names the route template, never the path: no id, no
// order id, no query, no server text, no key. Every hook runs under
// runHook: a hook that panics changes nothing about the call.

// runHook runs one Observer hook. A panic in it is recovered and reported
// on log at error level (the panic's text scrubbed by sc and cut): an
// Observer never changes a call's result or a webhook's answer.
func runHook(ctx context.Context, log *slog.Logger, sc scrubber, name string, hook func()) {
	defer func() {
		if v := recover(); v != nil {
			log.LogAttrs(ctx, slog.LevelError, "cryptopay: an Observer hook panicked; the panic is ignored",
				slog.String("hook", name), slog.String("panic", sc.cut(oneLine(fmt.Sprint(v)), 512)))
		}
	}()
	hook()
}

// hook runs an Observer hook of c under runHook.
func (c *Client) hook(ctx context.Context, name string, f func()) {
	runHook(ctx, c.logger, c.cfg.scrub, name, f)
}

// observeStart runs every OnCallStart (n == 0) or every OnAttemptStart
// (attempt n); the context each returns is passed to the next, and the last
// one becomes the call's or the attempt's.
func (c *Client) observeStart(ctx context.Context, ci CallInfo, n int) context.Context {
	for _, o := range c.cfg.observers {
		switch {
		case n == 0 && o.OnCallStart != nil:
			c.hook(ctx, "OnCallStart", func() { ctx = keepCtx(ctx, o.OnCallStart(ctx, ci)) })
		case n > 0 && o.OnAttemptStart != nil:
			c.hook(ctx, "OnAttemptStart", func() { ctx = keepCtx(ctx, o.OnAttemptStart(ctx, ci, n)) })
		}
	}
	return ctx
}

// keepCtx is what a start hook returned, or the context it was given when
// it returned nil.
func keepCtx(given, returned context.Context) context.Context {
	if returned == nil {
		return given
	}
	return returned
}

// observeAttemptEnd runs every OnAttemptEnd.
func (c *Client) observeAttemptEnd(ctx context.Context, ci CallInfo, res AttemptResult) {
	if res.Err != nil {
		res.Err = &observedError{msg: res.Err.Error(), err: res.Err}
	}
	for _, o := range c.cfg.observers {
		if o.OnAttemptEnd != nil {
			c.hook(ctx, "OnAttemptEnd", func() { o.OnAttemptEnd(ctx, ci, res) })
		}
	}
}

// observeCallEnd runs every OnCallEnd, with the call's error retold.
func (c *Client) observeCallEnd(ctx context.Context, ci CallInfo, res CallResult) {
	if res.Err != nil {
		res.OutcomeUnknown = errors.Is(res.Err, ErrOutcomeUnknown)
		res.Err = &observedError{msg: "cryptopay: " + ci.Route + ": " + errorSummary(res.Err), err: res.Err}
	}
	for _, o := range c.cfg.observers {
		if o.OnCallEnd != nil {
			c.hook(ctx, "OnCallEnd", func() { o.OnCallEnd(ctx, ci, res) })
		}
	}
}

// observedError is the error an Observer gets: the call's error for
// errors.Is and errors.As, with a text that holds nothing but the route
// and the kind of failure (a transport error's own text names addresses,
// never paths).
type observedError struct {
	msg string
	err error
}

func (e *observedError) Unwrap() error { return e.err }
func (e *observedError) Error() string { return e.msg }

// errorSummary tells what kind of failure err is: the status of an API
// error or of an unreadable response, the cause of an unknown outcome, the
// field of a refused parameter, or a transport or context error's own text.
func errorSummary(err error) string {
	var ou *OutcomeUnknownError
	var api *APIError
	var re *ResponseError
	var ve *ValidationError
	switch {
	case errors.As(err, &ou):
		return "outcome unknown: " + errorSummary(ou.Err)
	case errors.As(err, &api):
		return "status " + strconv.Itoa(api.StatusCode)
	case errors.As(err, &re):
		return "status " + strconv.Itoa(re.StatusCode) + ", response not readable"
	case errors.As(err, &ve):
		return "invalid " + ve.Field
	}
	if cause := errors.Unwrap(err); cause != nil && strings.HasPrefix(err.Error(), "cryptopay: ") {
		return cause.Error() // "cryptopay: METHOD PATH: cause": the cause alone
	}
	return err.Error()
}
