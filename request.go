package cryptopay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// request is one API operation.
type request struct {
	method, path string // path: "/v1/..." with escaped ids, and the query
	route        string // "GET /v1/payment/{id}/status": no id, no query
	body         []byte // the JSON of a create request; nil for a read
	orderID      string // carried into OutcomeUnknownError
	id           string // a read by id: the id its answer must name
	opts         []Option
}

// call follows one call through its attempts.
type call struct {
	c       *Client
	r       *request
	ctx     context.Context // the caller's, as OnCallStart returned it
	opts    config
	policy  RetryPolicy
	timeout time.Duration // per attempt; 0: none
	info    CallInfo
	path    string // reqPath's, once it is asked for
	url     *url.URL
	header  http.Header
	start   time.Time

	// The attempt under way, or the last one.
	n        int
	actx     context.Context // its context (OnAttemptStart's, with the timeout)
	aStart   time.Time
	trace    httptrace.ClientTrace // POST: the hooks that set traced and wrote
	traced   atomic.Bool           // POST: the transport reported connection events
	wrote    atomic.Bool           // POST: request headers were written to a connection
	resp     *http.Response
	err      error // the transport error, when no whole response was read
	buf      *bytes.Buffer
	body     io.LimitedReader // the response body as readBody reads it (in the call: no allocation)
	tooLarge bool
	lastFail string // what the last retried attempt saw, for a ctx error
}

// reqPath is the escaped path requested, base prefix included, no query:
// it names the request in errors and logs. An id in it may be server text
// handed back (a payout id), so it is scrubbed. Made when first needed: a
// call that succeeds without a log line never makes it.
func (cl *call) reqPath() string {
	if cl.path == "" {
		cl.path = cl.c.scrubString(cl.c.basePath + pathOnly(cl.r.path))
	}
	return cl.path
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do is the one request path: it sends r, retries per policy, and decodes
// a 2xx body into out (if not nil) or turns anything else into an error.
//
// Each attempt runs these steps in this order, top to bottom:
//
//  1. build: a new *http.Request; a POST body cannot be rewound
//     (GetBody is nil), so no transport layer can replay it by itself;
//  2. send: one RoundTrip on the Client's transport (never an
//     http.Client: no redirect, no cookie jar);
//  3. classify: read the whole body (the one place a body is read) or
//     keep the transport error;
//  4. decide: shouldRetry, the one retry decision, with its reason;
//     then the attempt is logged and OnAttemptEnd runs;
//  5. wait: the backoff, cut short by ctx;
//  6. decode: after the last attempt, the result or the error.
//
// Observer hooks: OnCallStart before the first attempt, OnAttemptStart
// before each build, OnAttemptEnd after each decide, OnCallEnd after decode.
func (c *Client) do(ctx context.Context, r request, out any) (err error) {
	cl, err := c.startCall(ctx, &r)
	if err != nil {
		return err
	}
	defer func() { cl.finish(err) }()
	for {
		cancel := cl.startAttempt()
		resp, sendErr := cl.send(cl.build())
		cl.classify(resp, sendErr)
		retry, ra := cl.decide()
		cancel()
		if !retry {
			break
		}
		if werr := cl.wait(ra); werr != nil {
			return cl.transportError(werr)
		}
	}
	if cl.err != nil {
		return cl.transportError(cl.err)
	}
	return cl.decode(out)
}

// startCall checks ctx, applies the call's options and runs OnCallStart.
func (c *Client) startCall(ctx context.Context, r *request) (*call, error) {
	if ctx == nil {
		return nil, &ValidationError{Field: "ctx", Reason: "is nil"}
	}
	cl := &call{c: c, r: r, start: time.Now(), policy: c.cfg.retry, timeout: c.timeout}
	if err := cl.applyOptions(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		if cl.opts.resp != nil {
			*cl.opts.resp = Response{} // no attempt was made
		}
		return nil, fmt.Errorf("cryptopay: %s %s: %w", r.method, cl.reqPath(), err)
	}
	u, err := c.newURL(r.path)
	if err != nil {
		return nil, &ValidationError{Field: "request", Reason: "cannot build the URL of " + r.route}
	}
	cl.url = u
	if r.body != nil {
		cl.trace = httptrace.ClientTrace{
			GetConn:      func(string) { cl.traced.Store(true) },
			GotConn:      func(httptrace.GotConnInfo) { cl.traced.Store(true) },
			WroteHeaders: func() { cl.wrote.Store(true) },
		}
		ctx = httptrace.WithClientTrace(ctx, &cl.trace)
	}
	cl.info = CallInfo{Method: r.method, Route: r.route}
	if len(c.cfg.observers) > 0 {
		ctx = c.observeStart(ctx, cl.info, 0)
	}
	cl.ctx = ctx
	return cl, nil
}

// applyOptions applies the call's Options to a config of its own; the
// Client is never changed.
func (cl *call) applyOptions() error {
	c := cl.c
	cl.header = c.cfg.headers.get
	if cl.r.body != nil {
		cl.header = c.cfg.headers.post
	}
	if len(cl.r.opts) == 0 {
		return nil
	}
	cl.opts.perCall = true
	for _, o := range cl.r.opts {
		if o == nil {
			continue
		}
		if err := o(&cl.opts); err != nil {
			return err
		}
	}
	if cl.opts.timeoutSet {
		cl.timeout = cl.opts.timeout
	}
	if cl.opts.retrySet {
		cl.policy = cl.opts.retry.withDefaults()
	}
	if len(cl.opts.header) > 0 {
		h := cl.header.Clone()
		for k, v := range cl.opts.header {
			h[k] = v
		}
		cl.header = h
	}
	return nil
}

// startAttempt numbers the attempt, runs OnAttemptStart and sets the
// attempt's timeout. The returned func releases the attempt's context.
func (cl *call) startAttempt() context.CancelFunc {
	cl.n++
	cl.traced.Store(false)
	cl.wrote.Store(false)
	cl.resp, cl.err, cl.tooLarge = nil, nil, false
	ctx := cl.ctx
	if len(cl.c.cfg.observers) > 0 {
		ctx = cl.c.observeStart(ctx, cl.info, cl.n)
	}
	cl.aStart = time.Now()
	if cl.timeout <= 0 {
		cl.actx = ctx
		return func() {}
	}
	ctx, cancel := context.WithTimeout(ctx, cl.timeout)
	cl.actx = ctx
	return cancel
}

// build makes the attempt's request. A POST body is wrapped so that
// GetBody stays nil: Go's HTTP/2 client replays a request whose GetBody is
// set, whatever its method, after RST_STREAM PROTOCOL_ERROR or REFUSED_STREAM
// or a GOAWAY, and HTTP/1.1 replays one on a reused connection; the SDK
// retries a POST itself, and only on proof that nothing was sent.
func (cl *call) build() *http.Request {
	req := &http.Request{
		Method: cl.r.method, URL: cl.url, Host: cl.c.reqHost,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: cl.header,
	}
	if !cl.c.shareHeaders {
		req.Header = cl.header.Clone()
	}
	if cl.r.body != nil {
		// io.NopCloser of a *bytes.Reader: net/http knows it is in memory
		// and writes headers and body together (a body type of its own
		// would make it flush the headers first, a packet of their own
		// that a server can answer before the body arrives).
		req.Body = io.NopCloser(bytes.NewReader(cl.r.body))
		req.ContentLength = int64(len(cl.r.body))
	}
	return req.WithContext(cl.actx)
}

// send makes one round trip.
func (cl *call) send(req *http.Request) (*http.Response, error) {
	resp, err := cl.c.rt.RoundTrip(req)
	switch {
	case err != nil:
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // a wrapping RoundTripper's URL may hold an id or a query
		}
		return nil, err
	case resp == nil:
		return nil, errors.New("the transport returned neither a response nor an error")
	}
	return resp, nil
}

// classify records the attempt's outcome: the response with its whole body
// read (capped), or the transport error. A body cut short is a transport
// error (a GET retries it), not a decode error.
func (cl *call) classify(resp *http.Response, err error) {
	if err == nil {
		cl.resp = resp
		err = cl.readBody(resp)
	}
	if err == nil {
		return
	}
	if cl.ctx.Err() == nil && errors.Is(cl.actx.Err(), context.DeadlineExceeded) {
		err = &attemptTimeoutError{d: cl.timeout, err: err}
	}
	cl.err = cl.c.scrubErr(err)
}

type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading response body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// readBody reads resp's body whole into the call's buffer and closes it:
// up to the response cap for a 2xx; for any other status, up to 8 KiB and
// the scrubber's slack past it, so that a key across the 8 KiB mark is
// scrubbed whole before newAPIError cuts the body. A 1xx final answer (101)
// has no body to read.
func (cl *call) readBody(resp *http.Response) error {
	defer resp.Body.Close()
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	limit := cl.c.cfg.maxResponseBytes
	if !ok {
		limit = maxErrorBody + cl.c.cfg.scrub.slack()
	}
	if cl.buf == nil {
		cl.buf = bufPool.Get().(*bytes.Buffer)
	}
	cl.buf.Reset()
	if resp.StatusCode < 200 {
		return nil
	}
	if n := resp.ContentLength; n > 0 && n <= limit {
		cl.buf.Grow(int(n))
	}
	cl.body = io.LimitedReader{R: resp.Body, N: limit + 1}
	_, err := cl.buf.ReadFrom(&cl.body)
	cl.body = io.LimitedReader{}
	if err != nil {
		return &bodyReadError{err}
	}
	if int64(cl.buf.Len()) <= limit {
		return nil
	}
	// Drain a little more so a slightly oversized body leaves the
	// connection reusable; a huge one is cut off by Close.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if !ok {
		return nil // an error body is kept to be scrubbed and cut, not parsed whole
	}
	cl.tooLarge = true
	return nil
}

// decide takes the retry decision on the attempt just made, logs it and
// reports it to the observers. It returns the Retry-After to honour.
func (cl *call) decide() (bool, time.Duration) {
	o := attemptOutcome{
		post:    cl.r.method != http.MethodGet,
		attempt: cl.n,
		ctxDone: cl.ctx.Err() != nil,
		err:     cl.err,
		notSent: cl.traced.Load() && !cl.wrote.Load(),
	}
	status := 0
	if cl.resp != nil {
		status = cl.resp.StatusCode
	}
	if cl.resp != nil && cl.err == nil {
		o.status = cl.resp.StatusCode
		if retryableStatus(o.status) { // only these are named or waited on
			o.statusText = statusReason(o.status)
			o.retryAfter, o.hasRA = parseRetryAfter(cl.resp.Header.Get("Retry-After"), time.Now())
		}
	}
	retry, reason := shouldRetry(&o, cl.policy)
	if retry {
		cl.lastFail = o.statusText
		if cl.err != nil {
			cl.lastFail = cl.err.Error()
		}
	}
	cl.endAttempt(status, retry, reason)
	return retry, o.retryAfter
}

// endAttempt logs the attempt and runs OnAttemptEnd.
func (cl *call) endAttempt(status int, retry bool, reason string) {
	d := time.Since(cl.aStart)
	if cl.c.logger.Enabled(cl.ctx, slog.LevelDebug) {
		cl.logAttempt(status, d, retry, reason)
	}
	if len(cl.c.cfg.observers) > 0 {
		res := AttemptResult{Attempt: cl.n, StatusCode: status, Err: cl.err, Retry: retry, Reason: reason, Duration: d}
		cl.c.observeAttemptEnd(cl.actx, cl.info, res)
	}
}

func (cl *call) logAttempt(status int, d time.Duration, retry bool, reason string) {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("method", cl.r.method),
		slog.String("path", cl.reqPath()),
		slog.Int("attempt", cl.n),
		slog.Duration("duration", d),
	)
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
		if id := requestID(cl.c.cfg.scrub, cl.resp.Header); id != "" {
			attrs = append(attrs, slog.String("requestId", id))
		}
	}
	if cl.err != nil {
		attrs = append(attrs, slog.String("error", cl.err.Error()))
	}
	attrs = append(attrs, slog.Bool("retry", retry))
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	cl.c.logger.LogAttrs(cl.ctx, slog.LevelDebug, "cryptopay request", attrs...)
}

// wait sleeps the backoff before the next attempt; it returns ctx's error
// if ctx ends first.
func (cl *call) wait(retryAfter time.Duration) error {
	t := time.NewTimer(backoff(cl.policy, cl.n-1, retryAfter))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-cl.ctx.Done():
		return cl.ctx.Err()
	}
}

// decode turns the last response into the result or an error.
func (cl *call) decode(out any) error {
	c, r, resp := cl.c, cl.r, cl.resp
	body := cl.buf.Bytes()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := newAPIError(c.cfg.scrub, r.method, cl.reqPath(), resp.StatusCode, resp.Header, body)
		if r.method != http.MethodGet && createOutcomeUnknown(resp.StatusCode, nil, false) {
			return cl.answeredUnknown(apiErr, resp.StatusCode, nil)
		}
		return apiErr
	}
	rerr := cl.decodeBody(body, out)
	if rerr == nil {
		return nil
	}
	rerr.StatusCode, rerr.Method, rerr.Path = resp.StatusCode, r.method, cl.reqPath()
	rerr.Reason = c.scrubString(rerr.Reason)
	rerr.Err = c.scrubErr(rerr.Err)
	if r.method != http.MethodGet && createOutcomeUnknown(resp.StatusCode, nil, false) {
		// The server said yes; we only failed to read what it created, or
		// it named another order (or none).
		return cl.answeredUnknown(rerr, resp.StatusCode, body)
	}
	return rerr
}

// decodeBody reads a 2xx body into out.
func (cl *call) decodeBody(body []byte, out any) *ResponseError {
	switch {
	case cl.tooLarge:
		return &ResponseError{Reason: fmt.Sprintf("body larger than %d bytes", cl.c.cfg.maxResponseBytes)}
	case out == nil:
		return nil
	case len(bytes.TrimSpace(body)) == 0:
		return &ResponseError{Reason: "empty body"}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &ResponseError{Reason: "not the documented JSON shape", Err: err}
	}
	if ch, ok := out.(interface{ check() string }); ok {
		if why := ch.check(); why != "" {
			return &ResponseError{Reason: why}
		}
	}
	// An answer names the object it is about: a create's its orderId, a
	// read's its id. One naming another (a cache or gateway answering with
	// another request's response) is not this request's object; for a
	// create, the request's own outcome is unknown. A create's answer
	// without an orderId is not matched to the request either (a caching
	// gateway replaying another request's answer with it removed).
	if o, ok := out.(answerNamer); ok {
		switch got := o.answerOrderID(); {
		case cl.r.orderID != "" && got == "":
			return &ResponseError{Reason: "the answer names no orderId, so it cannot be matched to the request"}
		case cl.r.orderID != "" && got != cl.r.orderID:
			return &ResponseError{Reason: "the answer is for another orderId than the request's"}
		case cl.r.id != "" && !o.answers(cl.r.id):
			return &ResponseError{Reason: "the answer is for another id than the request's"}
		}
	}
	return nil
}

// answerNamer is an answer that names its object (wirePayment, wirePayout).
type answerNamer interface {
	answerOrderID() string  // the orderId it was made for
	answers(id string) bool // whether it is the object with this id
}

// transportError turns an error from sending, reading or waiting into the
// call's error. A POST that may have reached the server is an unknown
// outcome, whatever else the error is.
func (cl *call) transportError(err error) error {
	r := cl.r
	notSent := cl.traced.Load() && !cl.wrote.Load()
	if r.method != http.MethodGet && createOutcomeUnknown(0, err, notSent) {
		// A 2xx whose body broke off is still an answer: the server acted.
		// (A response with an error is one whose body could not be read.)
		if cl.resp != nil && cl.err != nil && cl.resp.StatusCode >= 200 && cl.resp.StatusCode <= 299 {
			return cl.answeredUnknown(err, cl.resp.StatusCode, nil)
		}
		return cl.outcomeUnknown(err)
	}
	if cl.ctx.Err() != nil && cl.lastFail != "" {
		return fmt.Errorf("cryptopay: %s %s: %w (after %d attempt(s), last: %s)", r.method, cl.reqPath(), cl.ctx.Err(), cl.n, cl.lastFail)
	}
	return fmt.Errorf("cryptopay: %s %s: %w", r.method, cl.reqPath(), err)
}

func (cl *call) outcomeUnknown(cause error) error {
	return cl.logUnknown(&OutcomeUnknownError{Method: cl.r.method, Path: cl.reqPath(), OrderID: cl.r.orderID, Err: cause})
}

// answeredUnknown is outcomeUnknown for an answer that was read: its
// status, and for a 2xx body the ids it names (scrubbed and cut, as server
// text), go into the error so a caller can tell "the server acted" from
// "no answer".
func (cl *call) answeredUnknown(cause error, status int, body []byte) error {
	e := &OutcomeUnknownError{Method: cl.r.method, Path: cl.reqPath(), OrderID: cl.r.orderID, Err: cause, StatusCode: status}
	if status >= 200 && status <= 299 && !cl.tooLarge {
		var named struct {
			PayoutID  any `json:"payoutId"`
			PaymentID any `json:"paymentId"`
			OrderID   any `json:"orderId"`
		}
		if json.Unmarshal(body, &named) == nil {
			sc := cl.c.cfg.scrub
			id := namedText(named.PayoutID)
			if id == "" {
				id = namedText(named.PaymentID)
			}
			e.AnswerID = sc.cut(oneLine(id), 128)
			e.AnswerOrderID = sc.cut(oneLine(namedText(named.OrderID)), 128)
		}
	}
	return cl.logUnknown(e)
}

// namedText is an id a JSON answer named: a string as it is, a number as
// its text, anything else "".
func namedText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func (cl *call) logUnknown(e *OutcomeUnknownError) error {
	r, cause := cl.r, e.Err
	cl.c.logger.LogAttrs(cl.ctx, slog.LevelWarn, "cryptopay: outcome unknown; reconcile by orderId",
		slog.String("method", r.method), slog.String("path", e.Path), slog.String("orderId", r.orderID),
		slog.String("cause", cl.c.scrubString(cause.Error())))
	return e
}

// finish fills WithResponseInto's Response, runs OnCallEnd and returns the
// buffer to the pool.
func (cl *call) finish(err error) {
	d := time.Since(cl.start)
	status := 0
	if cl.resp != nil {
		status = cl.resp.StatusCode
	}
	if rp := cl.opts.resp; rp != nil {
		*rp = Response{StatusCode: status, Attempts: cl.n, Duration: d}
		if cl.resp != nil {
			rp.Header = cl.c.scrubHeader(cl.resp.Header)
			rp.RequestID = requestID(cl.c.cfg.scrub, cl.resp.Header)
			rp.Proto = cl.resp.Proto
			if cl.buf != nil && !cl.tooLarge {
				rp.RawJSON = cl.c.scrubString(cl.buf.String())
			}
		}
	}
	if len(cl.c.cfg.observers) > 0 {
		cl.c.observeCallEnd(cl.ctx, cl.info, CallResult{Attempts: cl.n, StatusCode: status, Err: err, Duration: d})
	}
	if cl.buf != nil && cl.buf.Cap() <= 1<<20 {
		cl.buf.Reset()
		bufPool.Put(cl.buf)
	}
	cl.buf = nil
}

// attemptTimeoutError reports an attempt cut off by the per-attempt timeout
// (WithTimeout, on the Client or the call) while the call's context was alive. It
// is a net.Error whose Timeout is true, and it matches
// context.DeadlineExceeded.
type attemptTimeoutError struct {
	d   time.Duration
	err error
}

func (e *attemptTimeoutError) Error() string {
	return "attempt timed out after " + e.d.String() + ": " + e.err.Error()
}
func (e *attemptTimeoutError) Unwrap() error   { return e.err }
func (e *attemptTimeoutError) Timeout() bool   { return true }
func (e *attemptTimeoutError) Temporary() bool { return true }

// newURL builds the URL of path from the base parsed once in NewClient,
// instead of formatting and parsing c.base+path on every call. It is the
// URL url.Parse would give: the same scheme, host, query and escaped path,
// so the same bytes on the wire.
func (c *Client) newURL(path string) (*url.URL, error) {
	p, q, _ := strings.Cut(path, "?")
	if c.basePath != "" {
		p = c.basePath + p
	}
	u := &url.URL{Scheme: c.scheme, Host: c.host, Path: p, RawQuery: q}
	if strings.IndexByte(p, '%') >= 0 {
		// p is escaped (url.PathEscape); Path is its unescaped form and
		// RawPath keeps p, so EscapedPath (what is sent) is p itself.
		unescaped, err := url.PathUnescape(p)
		if err != nil {
			return nil, err
		}
		u.Path, u.RawPath = unescaped, p
	}
	return u, nil
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}
