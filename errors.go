package cryptopay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors. Match them with errors.Is; the concrete types below carry
// the details.
var (
	// ErrUnauthorized matches an APIError with status 401 or 403.
	ErrUnauthorized = errors.New("cryptopay: unauthorized")
	// ErrNotFound matches an APIError with status 404.
	ErrNotFound = errors.New("cryptopay: not found")
	// ErrInvalidRequest matches an APIError with status 400 or 422.
	ErrInvalidRequest = errors.New("cryptopay: invalid request")
	// ErrRateLimited matches an APIError with status 429.
	ErrRateLimited = errors.New("cryptopay: rate limited")
	// ErrServer matches an APIError with a 5xx status.
	ErrServer = errors.New("cryptopay: server error")
	// ErrInvalidParams matches a ValidationError: the call was refused before
	// anything was sent.
	ErrInvalidParams = errors.New("cryptopay: invalid parameters")
	// ErrOutcomeUnknown matches an OutcomeUnknownError: a create request may
	// have been processed by the server, but no answer was read. Do not
	// resend it blindly; look the payout up by orderId first (see ReconcilePayout).
	ErrOutcomeUnknown = errors.New("cryptopay: outcome unknown")
	// ErrUnexpectedResponse matches a ResponseError: a 2xx answer whose body
	// could not be read as the documented shape.
	ErrUnexpectedResponse = errors.New("cryptopay: unexpected response")
)

// maxErrorBody caps how much of an error body is read and kept.
const maxErrorBody = 8 << 10

// APIError is a non-2xx answer from the API. It matches ErrUnauthorized,
// ErrNotFound, ErrInvalidRequest, ErrRateLimited or ErrServer by status.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the error body's code, when it had one.
	Code string
	// Message is the error body's message, or a readable summary of a body
	// that was not the documented {code, message} shape.
	Message string
	// RequestID is the X-Request-Id response header, when present.
	RequestID string
	// RetryAfter is the Retry-After header as a duration, when present.
	RetryAfter time.Duration
	// Method and Path name the request (no query string, no host).
	Method, Path string
	// Body is the raw error body, capped at 8 KiB.
	Body []byte
}

// Error returns a one-line description without secrets.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("cryptopay: ")
	if e.Method != "" {
		b.WriteString(e.Method + " " + e.Path + ": ")
	}
	b.WriteString(strconv.Itoa(e.StatusCode))
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request id " + e.RequestID + ")")
	}
	return b.String()
}

// Is matches the sentinel for the error's status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusUnprocessableEntity
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrServer:
		return e.StatusCode >= 500 && e.StatusCode <= 599
	}
	return false
}

// Temporary reports whether the same request may succeed later (429, 5xx).
func (e *APIError) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// newAPIError builds an APIError from a status, headers and the error body
// as read (up to maxErrorBody plus sc's slack). Every server text in it is
// scrubbed by sc before it is cut: the body to maxErrorBody, the code and
// the request id to 128 bytes, the message to 512. It never fails: a body
// of any shape yields a readable message.
func newAPIError(sc scrubber, method, path string, status int, h http.Header, body []byte) *APIError {
	e := &APIError{
		StatusCode: status,
		Method:     method,
		Path:       path,
		RequestID:  requestID(sc, h),
		Body:       sc.cutBytes(bytes.Clone(body), maxErrorBody),
	}
	e.RetryAfter, _ = parseRetryAfter(h.Get("Retry-After"), time.Now())
	e.Code, e.Message = parseErrorBody(sc, e.Body)
	if e.Message == "" && e.Code == "" {
		e.Message = http.StatusText(status)
		if e.Message == "" {
			e.Message = "unexpected status"
		}
	}
	return e
}

// requestID is the server's request id: the first of X-Request-Id,
// Request-Id and X-Correlation-Id that is set, scrubbed by sc and then cut
// to 128 bytes.
func requestID(sc scrubber, h http.Header) string {
	for _, n := range [...]string{"X-Request-Id", "Request-Id", "X-Correlation-Id"} {
		if v := h.Get(n); v != "" {
			return sc.cut(v, 128)
		}
	}
	return ""
}

// parseErrorBody reads code and message from the documented {code,message}
// shape, from problem+json ({title, detail}), from {error: "..."} and
// {error: {code, message}}, and otherwise summarises the body as text. What
// it returns is scrubbed by sc (again: decoding JSON may reveal an escaped
// key), then cut.
func parseErrorBody(sc scrubber, body []byte) (code, message string) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return "", ""
	}
	if trimmed[0] == '{' {
		var v struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
			Title   string          `json:"title"`
			Detail  string          `json:"detail"`
			Error   json.RawMessage `json:"error"`
		}
		if json.Unmarshal(trimmed, &v) == nil {
			code = rawScalar(v.Code)
			message = v.Message
			if message == "" && len(v.Error) > 0 {
				var inner struct {
					Code    json.RawMessage `json:"code"`
					Message string          `json:"message"`
				}
				if json.Unmarshal(v.Error, &inner) == nil {
					message = inner.Message
					if code == "" {
						code = rawScalar(inner.Code)
					}
				} else {
					message = rawScalar(v.Error)
				}
			}
			if message == "" {
				message = strings.TrimSpace(strings.TrimSuffix(v.Title+": "+v.Detail, ": "))
				message = strings.TrimPrefix(message, ": ")
			}
			if code != "" || message != "" {
				return sc.cut(code, 128), sc.cut(oneLine(message), 512)
			}
		}
	}
	return "", sc.cut(oneLine(stripTags(string(trimmed))), 200)
}

// rawScalar renders a JSON string or number as text.
func rawScalar(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if raw[0] != '{' && raw[0] != '[' {
		return string(raw)
	}
	return ""
}

// stripTags removes HTML markup so a proxy's error page reads as its text.
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '<':
			depth++
		case r == '>' && depth > 0:
			depth--
			b.WriteByte(' ')
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine folds whitespace runs and drops control characters.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r < 0x20 || r == 0x7f || r == utf8.RuneError
	}), " ")
}

// ValidationError reports a parameter refused before any network call. It
// matches ErrInvalidParams.
type ValidationError struct {
	// Field is the Go field or argument name, for example "Amount" or "id".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *ValidationError) Error() string {
	return "cryptopay: invalid " + e.Field + ": " + e.Reason
}

// Is matches ErrInvalidParams.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidParams }

// OutcomeUnknownError reports a create request (POST) that may have been
// processed by the server although no answer says so: the connection broke
// after the request may have been written, the attempt timed out, the server
// answered anything but 2xx or a refusing 4xx (see createOutcomeUnknown: a
// 3xx, 1xx, 408 or 5xx), or a 2xx body could not be read or named another
// orderId than the request's or none. The SDK never
// resends such a request. It matches ErrOutcomeUnknown and, through Unwrap,
// the cause (for an answer, the *APIError, and ErrServer for a 5xx).
type OutcomeUnknownError struct {
	// Method and Path name the request, for example POST /v1/payout.
	Method, Path string
	// OrderID is the orderId the request carried: reconcile with it.
	OrderID string
	// Err is the cause.
	Err error
	// StatusCode is the status of the answer that was read; 0 if none was
	// (no answer, a broken connection, a timeout). A 2xx means the server
	// acted on the request even though its answer could not be matched to
	// it (unreadable, its body cut off, naming another orderId, or none):
	// something was
	// created, perhaps under an altered orderId that a search of the
	// payout list by this orderId will never find. Do not resend after a
	// 2xx on a list search's "not created"; have a person look.
	StatusCode int
	// AnswerID and AnswerOrderID are the id (payoutId or paymentId) and the
	// orderId a 2xx answer named, scrubbed and cut to 128 bytes ("" when
	// absent or unreadable). Server text, not matched to the request: they
	// may name another order's object. Record them for the person who
	// looks; never bind the request to them.
	AnswerID, AnswerOrderID string
}

// ServerActed reports whether a 2xx answer was read: the server acted on
// the request (see StatusCode).
func (e *OutcomeUnknownError) ServerActed() bool { return e.StatusCode >= 200 && e.StatusCode <= 299 }

// Error names the request, the orderId and the cause.
func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("cryptopay: %s %s for orderId %q: outcome unknown, the server may have processed it; reconcile by orderId before retrying: %v",
		e.Method, e.Path, e.OrderID, e.Err)
}

// createOutcomeUnknown is the one rule that tells, for a create request
// (POST /v1/payout, POST /v1/payment) that did not succeed, "refused"
// (nothing was created; the caller may fix and send again) from "outcome
// unknown" (the server may have acted; reconcile by orderId, never resend
// blindly). status is the answer's status code (0: none was read), err the
// transport error, notSent the transport's proof that no header was
// written.
//
//   - Only a 4xx answer refuses, and 408 Request Timeout is no refusal.
//   - Every other answer leaves the outcome unknown: a 2xx whose body
//     cannot be read, 1xx as a final answer (101 included), every 3xx
//     (303 See Other is the usual answer after a POST was processed; the
//     client follows no redirect, so x-api-key never follows one), 408,
//     5xx, and any code outside 100..599.
//   - A transport error leaves it unknown unless nothing can have been
//     sent: a dial error, or no request header written.
func createOutcomeUnknown(status int, err error, notSent bool) bool {
	switch {
	case err != nil:
		return !notSent && !isDialError(err)
	case status >= 400 && status <= 499:
		return status == http.StatusRequestTimeout
	}
	return true
}

// Is matches ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap returns the cause.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// ResponseError reports a 2xx answer whose body was not the documented shape
// (not JSON, truncated, the wrong type, a required field missing, larger
// than the response cap, or naming another object than the request's: a
// create's answer another orderId, a read's another id). It matches
// ErrUnexpectedResponse.
type ResponseError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Method and Path name the request.
	Method, Path string
	// Reason says what was wrong.
	Reason string
	// Err is the decoder's error, if any.
	Err error
}

// Error implements error.
func (e *ResponseError) Error() string {
	s := fmt.Sprintf("cryptopay: %s %s: %d response not readable: %s", e.Method, e.Path, e.StatusCode, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches ErrUnexpectedResponse.
func (e *ResponseError) Is(target error) bool { return target == ErrUnexpectedResponse }

// Unwrap returns the decoder's error.
func (e *ResponseError) Unwrap() error { return e.Err }
