package cryptopay

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says how reads (GET) are retried: on connection errors, 429,
// 500, 502, 503 and 504, with capped exponential backoff and jitter, waiting
// at least as long as a Retry-After header asks (a Retry-After above MaxWait
// ends the retries and returns the 429/503). Create requests (POST) are
// retried only when the SDK saw that nothing was sent (the connection was
// refused, or the transport reported no request bytes written); no policy
// can change that.
type RetryPolicy struct {
	// MaxRetries is how many times a request is retried after the first
	// attempt; 0 disables retries.
	MaxRetries int
	// MinWait is the first backoff (0: 500 ms); each retry doubles it.
	MinWait time.Duration
	// MaxWait caps a backoff and an honoured Retry-After (0: 10 s).
	MaxWait time.Duration
}

// DefaultRetryPolicy returns the default: 3 retries, waits from 500 ms to 10 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 3, MinWait: 500 * time.Millisecond, MaxWait: 10 * time.Second}
}

// valid reports whether no value is negative.
func (p RetryPolicy) valid() bool { return p.MaxRetries >= 0 && p.MinWait >= 0 && p.MaxWait >= 0 }

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MinWait == 0 {
		p.MinWait = d.MinWait
	}
	if p.MaxWait == 0 {
		p.MaxWait = d.MaxWait
	}
	if p.MaxWait < p.MinWait {
		p.MaxWait = p.MinWait
	}
	return p
}

// attemptOutcome is what one attempt left behind, as far as the retry
// decision is concerned.
type attemptOutcome struct {
	post    bool // a create request: resent only with proof it was not sent
	attempt int  // 1 for the first attempt
	ctxDone bool // the caller's context ended
	// err is the transport error (sending, or reading the body); nil when
	// a whole response was read.
	err error
	// notSent: the transport reported its connection events and never
	// wrote the request headers, so the server cannot have processed it.
	notSent bool
	// status, statusText and retryAfter describe the response (err == nil).
	status     int
	statusText string
	retryAfter time.Duration
	hasRA      bool
}

// shouldRetry is the one retry decision: may the attempt o be made again
// under policy p, and why (or why not). It covers every case for GET and
// POST. A POST is made again only when nothing of it can have reached the
// server: a dial error, or positive evidence that no header was written.
// Every response to a POST, and every error after its headers were written,
// is final: a second POST /v1/payout can pay twice.
func shouldRetry(o *attemptOutcome, p RetryPolicy) (bool, string) {
	var why string
	switch {
	case o.err != nil && isPermanentTransportError(o.err):
		return false, "permanent transport error"
	case o.err != nil && isDialError(o.err):
		why = "connection failed before sending"
	case o.err != nil && o.post && o.notSent:
		why = "request not sent"
	case o.err != nil && o.post:
		return false, "request may have reached the server; not resent"
	case o.err != nil:
		why = "transport error"
	case !retryableStatus(o.status):
		return false, ""
	case o.post:
		return false, "create request not resent after the server answered"
	case o.hasRA && o.retryAfter > p.MaxWait:
		return false, "Retry-After beyond the maximum wait"
	default:
		why = "status " + o.statusText
	}
	if o.ctxDone {
		return false, "context done"
	}
	if o.attempt > p.MaxRetries {
		return false, "giving up after " + strconv.Itoa(o.attempt) + " attempt(s): " + why
	}
	return true, why
}

// statusReason names a status for a retry reason, a log line or an error:
// the code and Go's text for it, never the reason phrase the server sent
// (resp.Status is server text).
func statusReason(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// isDialError reports an error that happened before a connection existed:
// nothing was sent, so any request may be retried.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// isPermanentTransportError reports errors a retry cannot fix.
func isPermanentTransportError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	return errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) ||
		errors.As(err, &invalid) || errors.As(err, &recordErr)
}

// backoff is the wait before retry n+1 (n = 0 after the first attempt):
// exponential from MinWait, capped at MaxWait, with jitter (half fixed,
// half random), and at least the Retry-After the server asked for
// (shouldRetry already refused one above MaxWait).
func backoff(p RetryPolicy, n int, retryAfter time.Duration) time.Duration {
	wait := p.MaxWait
	if n < 30 {
		if w := p.MinWait << n; w > 0 && w < p.MaxWait {
			wait = w
		}
	}
	wait = wait/2 + rand.N(wait/2+1)
	if retryAfter > wait {
		wait = min(retryAfter, p.MaxWait)
	}
	return wait
}

// maxRetryAfter caps what a Retry-After header is read as: any longer
// value (a 20-digit number of seconds, a date years ahead) is "longer than
// any wait", never an overflow read as "absent".
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads delay-seconds or an HTTP date, capped at
// maxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // too many digits for int64: longer than the cap
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now) // saturates, never wraps
		return min(max(d, 0), maxRetryAfter), true
	}
	return 0, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
