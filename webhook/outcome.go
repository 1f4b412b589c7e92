package webhook

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// outcome is how the handler answers a request: the status code and body,
// the Observer's result word, Retry-After for a 503, and for a refusal the
// reason logged.
type outcome struct {
	code       int
	body       string
	result     string
	retryAfter string
	reason     string
	refusal    RefusalReason // a refusal (4xx): why, in one word
	close      bool          // answer with Connection: close (see closing)
}

// The Observer's result words (EventInfo.Result).
const (
	resultDelivered  = "delivered"
	resultDuplicate  = "duplicate"
	resultRejected   = "rejected"
	resultRetryLater = "retry_later"
	resultFailed     = "failed"
)

var (
	delivered = outcome{code: http.StatusOK, body: "ok\n", result: resultDelivered}
	duplicate = outcome{code: http.StatusOK, body: "ok\n", result: resultDuplicate}
)

// rejected refuses the request for why; reason (the detail) goes to the log
// line, never the body.
func rejected(code int, why RefusalReason, body, reason string) outcome {
	return outcome{code: code, body: body + "\n", result: resultRejected, reason: reason, refusal: why}
}

// retryLater asks the sender to come back (503 with Retry-After).
func retryLater(body string) outcome {
	return outcome{code: http.StatusServiceUnavailable, body: body + "\n", result: resultRetryLater, retryAfter: "5"}
}

// failed is a 500: the sender retries, but the fault is on this side.
func failed(body string) outcome {
	return outcome{code: http.StatusInternalServerError, body: body + "\n", result: resultFailed}
}

// closing ends the reading of a refused HTTP/1 request whose body was
// not read to its end: its connection is closed after the answer, and its
// read deadline is set to now. Otherwise net/http reads what is left of
// the body (up to 256 KiB, or a chunked one) before and after it sends the
// answer, to reuse the connection, under no deadline but the server's
// ReadTimeout: a sender that declares a body and never sends it would hold
// the handler's goroutine and connection, unauthenticated, for as long as
// it likes. (HTTP/2 resets the stream instead.) Where the writer cannot
// set a deadline (it wraps the server's without Unwrap), only the answer
// is sure to leave; the server's ReadTimeout bounds the rest.
func closing(w http.ResponseWriter, r *http.Request, out outcome) outcome {
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		out.close = true
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	return out
}

// answer writes out, and counts and logs a refusal.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, out outcome) {
	hd := w.Header()
	if out.code == http.StatusMethodNotAllowed {
		hd.Set("Allow", http.MethodPost)
	}
	if out.retryAfter != "" {
		hd.Set("Retry-After", out.retryAfter)
	}
	if out.close {
		hd.Set("Connection", "close")
	}
	// One backing array for the three values (they are never appended to).
	v := []string{"text/plain; charset=utf-8", "nosniff", "no-store"}
	hd["Content-Type"], hd["X-Content-Type-Options"], hd["Cache-Control"] = v[0:1:1], v[1:2:2], v[2:3:3]
	w.WriteHeader(out.code)
	_, _ = io.WriteString(w, out.body)
	if out.refusal != "" {
		h.refuse(r, out)
	}
}

// refuse counts a refusal, logs it (at most once per reason and window,
// never the token or the secret) and tells Config.OnRefused.
func (h *Handler) refuse(r *http.Request, out outcome) {
	ctx := r.Context()
	ref := Refusal{Reason: out.refusal, StatusCode: out.code, At: time.Now()}
	if held, ok := h.refused.add(ref); ok && h.log.Enabled(ctx, slog.LevelWarn) {
		attrs := []slog.Attr{slog.String("reason", string(out.refusal)), slog.Int("status", out.code),
			slog.String("detail", out.reason), slog.String("remote", r.RemoteAddr)}
		if held > 0 {
			attrs = append(attrs, slog.Int("similar_not_logged", held))
		}
		h.log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: refused a delivery", attrs...)
	}
	if h.onRefused == nil {
		return
	}
	defer func() { // a panicking hook changes no answer
		if v := recover(); v != nil {
			h.log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: the OnRefused hook panicked; the panic is ignored",
				slog.String("hook", "OnRefused"), slog.String("panic", h.redact(clip(flatten(fmt.Sprint(v)), 512))))
		}
	}()
	h.onRefused(ctx, ref)
}
