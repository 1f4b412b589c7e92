package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/cryptopay/cryptopay-go"
)

var (
	errOrderID = errors.New("orderId is not a string")
	errDecode  = errors.New("body does not decode as its object")
)

// ServeHTTP authenticates the event, re-reads its object through the API
// (with a Client), wakes waits, and delivers each new (id, status) to the
// callback once. See Handler for the answers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev event
	out := h.handle(w, r, &ev)
	h.answer(w, r, out)
	h.observe(r.Context(), &ev, out)
}

// observe tells the observers how the request was answered.
func (h *Handler) observe(ctx context.Context, ev *event, out outcome) {
	if h.onEvent == nil {
		return
	}
	info := EventInfo{StatusCode: out.code, Result: out.result}
	if ev.kind != nil {
		info.Kind = ev.kind.name
	}
	defer func() { // a panicking hook changes no answer
		if v := recover(); v != nil {
			h.log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: the OnEvent hook panicked; the panic is ignored",
				slog.String("hook", "OnEvent"), slog.String("panic", h.redact(clip(flatten(fmt.Sprint(v)), 512))))
		}
	}()
	h.onEvent(ctx, info)
}

// handle runs the steps of one request and says how to answer it.
func (h *Handler) handle(w http.ResponseWriter, r *http.Request, ev *event) outcome {
	token, out, ok := h.checkRequest(r)
	if !ok {
		return closing(w, r, out)
	}
	body, out, ok := h.readBody(w, r)
	if !ok {
		return closing(w, r, out)
	}
	if out, ok := h.authenticate(token, body, ev); !ok {
		return out
	}
	// Authenticated for ev.orderID from here on.
	ctx := r.Context()
	if h.client != nil {
		out, ok = h.reread(ctx, ev)
	} else {
		out, ok = decodePosted(body, ev)
	}
	if !ok {
		return out
	}
	if out = h.deliverOnce(ctx, ev); out.code != http.StatusOK {
		return out
	}
	if h.client != nil && ev.ahead() {
		h.logEvent(ctx, slog.LevelInfo, ev, "cryptopay webhook: posted status is ahead of the API; asking the sender to retry",
			slog.String("posted", h.redact(clip(ev.postedStatus, 32))), slog.String("api", ev.status))
		return retryLater("api behind event")
	}
	return out // delivered, or a duplicate
}

// checkRequest refuses what can be refused before reading the body: a
// method other than POST, a missing or repeated token, a declared length
// over the limit. It returns the token.
func (h *Handler) checkRequest(r *http.Request) (string, outcome, bool) {
	if r.Method != http.MethodPost {
		return "", rejected(http.StatusMethodNotAllowed, RefusedMethod, "method not allowed", "method not allowed"), false
	}
	token, ok := queryToken(r.URL.RawQuery)
	if !ok {
		return "", rejected(http.StatusUnauthorized, RefusedTokenMissing, "unauthorized", "token missing or repeated"), false
	}
	if r.ContentLength > h.maxBody {
		return "", rejected(http.StatusRequestEntityTooLarge, RefusedTooLarge, "too large", "body too large"), false
	}
	return token, outcome{}, true
}

// readBody reads the body under the size limit, the deadline and the
// minimum rate (see bodyReader), in one allocation when its declared
// length is small (the usual case).
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, outcome, bool) {
	body, err := h.body.read(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return nil, rejected(http.StatusRequestEntityTooLarge, RefusedTooLarge, "too large", "body too large"), false
		case errors.Is(err, errBodyTooSlow):
			return nil, rejected(http.StatusRequestTimeout, RefusedTooSlow, "request timeout", "body too slow"), false
		}
		return nil, rejected(http.StatusBadRequest, RefusedBadJSON, "bad request", "body not readable"), false
	}
	return body, outcome{}, true
}

// validToken checks token against orderID in constant time.
func (h *Handler) validToken(token string, orderID []byte) bool {
	if len(orderID) == 0 || len(token) != encodedMACLen {
		return false
	}
	t := h.macs.Get().(*tokenCheck)
	defer h.macs.Put(t)
	copy(t.src[:], token)
	n, err := base64.RawURLEncoding.Decode(t.got[:], t.src[:])
	t.mac.Reset()
	t.mac.Write(webhookTokenContextBytes)
	t.mac.Write(orderID)
	sum := t.mac.Sum(t.want[:0])
	return err == nil && n == sha256.Size && hmac.Equal(t.got[:], sum)
}

// authenticate checks the token against the body's orderId, found by a
// scan that decodes nothing, and only then reads the kind, id and status.
func (h *Handler) authenticate(token string, body []byte, ev *event) (outcome, bool) {
	f, err := scanEvent(body)
	if err != nil {
		return rejected(http.StatusBadRequest, RefusedBadJSON, "bad request", err.Error()), false
	}
	ev.kind = f.kind() // for the Observer, even if the token is refused
	order, ok := rawString(f.orderID)
	if !ok && present(f.orderID) {
		s, isString := jsonString(f.orderID)
		if !isString {
			return rejected(http.StatusBadRequest, RefusedBadJSON, "bad request", errOrderID.Error()), false
		}
		order = []byte(s)
	}
	if !h.validToken(token, order) {
		return rejected(http.StatusUnauthorized, RefusedToken, "unauthorized", "token does not match orderId: a wrong token, or one signed with another secret"), false
	}
	if ev.kind == nil {
		return rejected(http.StatusBadRequest, RefusedUnknownKind, "bad request", errBadEvent.Error()), false
	}
	if err := ev.identify(&f); err != nil {
		return rejected(http.StatusBadRequest, RefusedBadEvent, "bad request", err.Error()), false
	}
	ev.orderID = string(order)
	return outcome{}, true
}

// decodePosted decodes the authenticated body into its object, for a
// handler without a Client. The object must carry the id, orderId and
// status the scan found (it always does; this guards the two readings
// against ever drifting apart).
func decodePosted(body []byte, ev *event) (outcome, bool) {
	obj, ok := ev.kind.decode(body)
	if !ok {
		return rejected(http.StatusBadRequest, RefusedBadEvent, "bad request", errDecode.Error()), false
	}
	if obj.id != ev.id || obj.orderID != ev.orderID || obj.status != ev.status {
		return rejected(http.StatusBadRequest, RefusedBadEvent, "bad request", errAmbiguous.Error()), false
	}
	ev.obj = obj.v
	return outcome{}, true
}

// reread replaces the posted object by the API's and wakes waits, unless
// MaxConcurrentRereads re-reads are running already.
func (h *Handler) reread(ctx context.Context, ev *event) (outcome, bool) {
	select {
	case h.rereads <- struct{}{}:
		defer func() { <-h.rereads }()
	default:
		h.logEvent(ctx, slog.LevelDebug, ev, "cryptopay webhook: too many re-reads at once; asking the sender to retry")
		return outcome{code: http.StatusServiceUnavailable, body: "busy\n", result: resultRetryLater, retryAfter: "1"}, false
	}
	obj, err := ev.kind.read(ctx, h.client, ev.id)
	if err != nil {
		return h.rereadFailed(ctx, ev, err), false
	}
	if obj.orderID != ev.orderID {
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the object belongs to another orderId than the token; refused")
		return outcome{code: http.StatusUnauthorized, body: "unauthorized\n", result: resultRejected, refusal: RefusedOtherOrder}, false
	}
	if ev.kind.key(obj.id) != ev.kind.key(ev.id) {
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the API answered with another object's id")
		return retryLater("retry later"), false
	}
	h.client.Notify(ctx, obj.v)
	ev.obj = obj.v
	ev.postedStatus, ev.status = ev.status, obj.status
	return outcome{}, true
}

// rereadFailed maps a failed re-read to the answer.
func (h *Handler) rereadFailed(ctx context.Context, ev *event, err error) outcome {
	switch {
	case errors.Is(err, cryptopay.ErrNotFound):
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the API does not know this id")
		return outcome{code: http.StatusNotFound, body: "not found\n", result: resultRejected, refusal: RefusedUnknownID}
	case errors.Is(err, cryptopay.ErrInvalidParams):
		return outcome{code: http.StatusBadRequest, body: "bad request\n", result: resultRejected, refusal: RefusedBadEvent}
	case errors.Is(err, cryptopay.ErrUnauthorized):
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: the API refused the client's key; cannot verify events", slog.String("error", err.Error()))
		return failed("cannot verify")
	default:
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: re-reading the object failed; asking the sender to retry", slog.String("error", err.Error()))
		return retryLater("retry later")
	}
}
