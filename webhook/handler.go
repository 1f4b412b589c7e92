package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/cryptopay/cryptopay-go"
)

// Handler defaults and limits.
const (
	// DefaultMaxBodyBytes is the default body limit of a
	// Handler (1 MiB); a larger body is answered 413.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxConcurrentRereads is how many events a Handler
	// re-reads through the API at once unless
	// Config.MaxConcurrentRereads says otherwise.
	DefaultMaxConcurrentRereads = 64
)

// Config configures a Handler.
type Config struct {
	// Secret is the key URL signed the orderId with; at least
	// MinSecretLen bytes, used as they are: a text secret (the output of
	// `openssl rand -base64 32`) is its text, never decoded, as the CLI
	// uses it. It is copied. Keep it out of source code
	// and logs; rotating it invalidates the URLs of open payments.
	Secret []byte

	// Client, when set, makes the handler re-read every authenticated
	// event's object through the API (GetPayment/GetPayout) and hand the
	// callback the API's version, never the posted one; an object whose
	// orderId differs from the token's is refused. It also wakes this
	// Client's WaitForPayment/WaitForPayout calls for that object.
	//
	// WITHOUT a Client the callback gets the posted body, which the token
	// authenticates only as far as it goes: it proves the URL was made by
	// you for that orderId, not that the status, the amounts or the id are
	// true. Anyone who saw the URL (the processor, a proxy log) can post
	// "paid". Never ship goods on such an event without reading the status
	// through the API. Set Client for money decisions.
	Client *cryptopay.Client

	// OnPayment is called with a payment event (a body with paymentId). A
	// non-nil error or a panic answers 500, so the sender redelivers; nil
	// answers 200. It may be nil if payments are not expected (their
	// events are then acknowledged and dropped). Make it idempotent: see
	// DedupeStore.
	OnPayment func(context.Context, *cryptopay.Payment) error
	// OnPayout is OnPayment for payout events (a body with payoutId).
	OnPayout func(context.Context, *cryptopay.Payout) error

	// MaxBodyBytes caps the request body (0: DefaultMaxBodyBytes);
	// a larger one is answered 413.
	MaxBodyBytes int64
	// BodyReadTimeout and MinBodyRate bound the time a body may take,
	// all of it before the token is checked: the body must arrive within
	// BodyReadTimeout (0: DefaultBodyReadTimeout) plus one second per
	// MinBodyRate bytes received (0: DefaultMinBodyRate bytes per
	// second); a slower one is answered 408 and its connection closed.
	// The handler sets the connection's read deadline itself, so this
	// holds behind a server with only ReadHeaderTimeout set; a server's
	// ReadTimeout still bounds the whole request. Memory grows with the
	// bytes that arrive, never with the declared length.
	BodyReadTimeout time.Duration
	MinBodyRate     int64
	// Dedupe remembers delivered events, so that each (id, status) reaches
	// the callback once. nil: a MemoryDedupeStore with the defaults, which works
	// within one process only; replicas must share a store (see
	// DedupeStore).
	Dedupe DedupeStore
	// Logger receives one line per rejected or failed event (never the
	// body, the token or the secret). nil discards.
	Logger *slog.Logger

	// MaxConcurrentRereads bounds how many events the handler re-reads
	// through the API at the same time (0: DefaultMaxConcurrentRereads).
	// An event beyond the bound is answered 503 with Retry-After: 1 at
	// once, so a burst of events is spread over the sender's retries
	// instead of piling up connections and goroutines here.
	MaxConcurrentRereads int

	// OnEvent, when set, is called once for every request the handler
	// answers, with its kind, status code and result (never its body,
	// token or ids), on the request's goroutine: keep it fast.
	// otelcryptopay.NewWebhookObserver makes one for OpenTelemetry.
	OnEvent func(ctx context.Context, ev EventInfo)
}

// EventInfo describes one request a Handler answered, without its body,
// token or ids.
type EventInfo struct {
	// Kind is "payment", "payout", or "" if the body was not read.
	Kind string
	// StatusCode is the HTTP status the handler answered.
	StatusCode int
	// Result is one word: "delivered", "duplicate", "rejected",
	// "retry_later" or "failed".
	Result string
}

// Handler receives the API's events for payments and payouts. It is
// an http.Handler, safe for concurrent use; mount it at the URL given to
// URL. Build it with NewHandler.
//
// It checks the token before it decodes anything in the body: a first pass
// over the body (linear, no allocation, no number converted) finds the
// orderId, and only an event whose orderId matches its token is decoded.
// An amount longer than 128 characters is refused unparsed.
//
// For each request it answers, with a one-word text body:
//
//	405 not POST (with Allow: POST)
//	401 token missing, or not the HMAC of the body's orderId, or the object
//	    re-read through the API belongs to another orderId
//	408 the body did not arrive within BodyReadTimeout and MinBodyRate
//	413 body over MaxBodyBytes
//	400 not a single JSON object with exactly one of paymentId or payoutId,
//	    a string orderId, a non-empty status and a valid id; a member
//	    given twice; an amount that is not a number of at most 128
//	    characters
//	404 the API does not know the id (with Client)
//	503 the API could not be read, the dedupe store failed, the same event
//	    is being processed right now, MaxConcurrentRereads re-reads are
//	    already running, or the posted status is ahead of what the API
//	    reports (the API has not caught up yet): the sender should retry
//	    later (Retry-After says when). The callback has then already seen
//	    the API's current version, if it was new.
//	500 the callback returned an error or panicked, or the API refused
//	    this Client's key (fix the configuration; the sender retries)
//	200 delivered, or a duplicate of an event already delivered
type Handler struct {
	secret    []byte
	macs      sync.Pool // of *tokenCheck, keyed with secret
	client    *cryptopay.Client
	callbacks map[*kind]func(context.Context, any) error // nil: none for that kind
	maxBody   int64
	body      bodyReader
	dedupe    DedupeStore
	log       *slog.Logger
	rereads   chan struct{} // a slot per re-read in flight
	onEvent   func(context.Context, EventInfo)
}

// NewHandler checks cfg and returns the handler. It refuses a Secret
// shorter than MinSecretLen or all zero, a negative MaxBodyBytes,
// BodyReadTimeout or MinBodyRate, and
// a config with nothing to do (no Client, OnPayment or OnPayout).
func NewHandler(cfg Config) (*Handler, error) {
	if err := checkSecret(cfg.Secret, "Secret"); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, &cryptopay.ValidationError{Field: "MaxBodyBytes", Reason: "must not be negative"}
	}
	body, err := newBodyReader(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConcurrentRereads < 0 {
		return nil, &cryptopay.ValidationError{Field: "MaxConcurrentRereads", Reason: "must not be negative"}
	}
	if cfg.Client == nil && cfg.OnPayment == nil && cfg.OnPayout == nil {
		return nil, &cryptopay.ValidationError{Field: "Config", Reason: "needs OnPayment, OnPayout or Client"}
	}
	h := &Handler{
		secret:    bytes.Clone(cfg.Secret),
		client:    cfg.Client,
		callbacks: map[*kind]func(context.Context, any) error{paymentKind: deliverTo(cfg.OnPayment), payoutKind: deliverTo(cfg.OnPayout)},
		maxBody:   cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		body:      body,
		dedupe:    cfg.Dedupe,
		log:       cfg.Logger,
		rereads:   make(chan struct{}, cmp.Or(cfg.MaxConcurrentRereads, DefaultMaxConcurrentRereads)),
		onEvent:   cfg.OnEvent,
	}
	h.macs.New = func() any { return &tokenCheck{mac: hmac.New(sha256.New, h.secret)} }
	if h.dedupe == nil {
		h.dedupe = new(MemoryDedupeStore)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

// event is a webhook body once authenticated: its kind, id, orderId and
// status, and its object (the posted one, or the API's after a re-read).
type event struct {
	kind    *kind // nil until the body is scanned
	id      string
	orderID string
	// status is the API's once re-read, else the posted one; postedStatus
	// keeps the body's.
	status, postedStatus string
	obj                  any // *cryptopay.Payment or *cryptopay.Payout
}

var (
	errAmbiguous = errors.New("a member is given twice")
	errOrderID   = errors.New("orderId is not a string")
	errDecode    = errors.New("body does not decode as its object")
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
	close      bool // answer with Connection: close (see closing)
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

// rejected refuses the request; reason goes to the log line, never the body.
func rejected(code int, body, reason string) outcome {
	return outcome{code: code, body: body + "\n", result: resultRejected, reason: reason}
}

// retryLater asks the sender to come back (503 with Retry-After).
func retryLater(body string) outcome {
	return outcome{code: http.StatusServiceUnavailable, body: body + "\n", result: resultRetryLater, retryAfter: "5"}
}

// failed is a 500: the sender retries, but the fault is on this side.
func failed(body string) outcome {
	return outcome{code: http.StatusInternalServerError, body: body + "\n", result: resultFailed}
}

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

// checkRequest refuses what can be refused before reading the body: a
// method other than POST, a missing or repeated token, a declared length
// over the limit. It returns the token.
func (h *Handler) checkRequest(r *http.Request) (string, outcome, bool) {
	if r.Method != http.MethodPost {
		return "", rejected(http.StatusMethodNotAllowed, "method not allowed", "method not allowed"), false
	}
	token, ok := queryToken(r.URL.RawQuery)
	if !ok {
		return "", rejected(http.StatusUnauthorized, "unauthorized", "token missing or repeated"), false
	}
	if r.ContentLength > h.maxBody {
		return "", rejected(http.StatusRequestEntityTooLarge, "too large", "body too large"), false
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
			return nil, rejected(http.StatusRequestEntityTooLarge, "too large", "body too large"), false
		case errors.Is(err, errBodyTooSlow):
			return nil, rejected(http.StatusRequestTimeout, "request timeout", "body too slow"), false
		}
		return nil, rejected(http.StatusBadRequest, "bad request", "body not readable"), false
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
		return rejected(http.StatusBadRequest, "bad request", err.Error()), false
	}
	ev.kind = f.kind() // for the Observer, even if the token is refused
	order, ok := rawString(f.orderID)
	if !ok && present(f.orderID) {
		s, isString := jsonString(f.orderID)
		if !isString {
			return rejected(http.StatusBadRequest, "bad request", errOrderID.Error()), false
		}
		order = []byte(s)
	}
	if !h.validToken(token, order) {
		return rejected(http.StatusUnauthorized, "unauthorized", "token does not match orderId: a wrong token, or one signed with another secret"), false
	}
	if err := ev.identify(&f); err != nil {
		return rejected(http.StatusBadRequest, "bad request", err.Error()), false
	}
	ev.orderID = string(order)
	return outcome{}, true
}

// identify reads the event's kind, id and status from an authenticated
// body's members.
func (ev *event) identify(f *eventFields) error {
	if f.ambiguous {
		return errAmbiguous
	}
	if ev.kind == nil {
		return errBadEvent
	}
	id, ok := jsonString(f.id())
	if !ok || ev.kind.badID(id) != "" {
		return errBadEvent
	}
	status, ok := jsonString(f.status)
	// A status is a short word; a long one would bloat the dedupe store.
	if !ok || status == "" || len(status) > maxStatusLen {
		return errBadEvent
	}
	ev.id, ev.status = id, status
	return nil
}

// decodePosted decodes the authenticated body into its object, for a
// handler without a Client. The object must carry the id, orderId and
// status the scan found (it always does; this guards the two readings
// against ever drifting apart).
func decodePosted(body []byte, ev *event) (outcome, bool) {
	obj, ok := ev.kind.decode(body)
	if !ok {
		return rejected(http.StatusBadRequest, "bad request", errDecode.Error()), false
	}
	if obj.id != ev.id || obj.orderID != ev.orderID || obj.status != ev.status {
		return rejected(http.StatusBadRequest, "bad request", errAmbiguous.Error()), false
	}
	ev.obj = obj.v
	return outcome{}, true
}

// answer writes out and logs a refusal.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, out outcome) {
	if out.reason != "" && h.log.Enabled(r.Context(), slog.LevelInfo) {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "cryptopay webhook: rejected",
			slog.Int("status", out.code), slog.String("reason", out.reason), slog.String("remote", r.RemoteAddr))
	}
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
}

// logEvent logs a line about an authenticated event, with its kind, id and
// orderId (never the body).
func (h *Handler) logEvent(ctx context.Context, level slog.Level, ev *event, msg string, attrs ...slog.Attr) {
	if !h.log.Enabled(ctx, level) {
		return
	}
	all := append([]slog.Attr{slog.String("kind", ev.kind.name), slog.String("id", ev.id),
		slog.String("orderId", clip(ev.orderID, 128))}, attrs...)
	for i := range all { // statuses and errors are server text
		if all[i].Value.Kind() == slog.KindString {
			all[i].Value = slog.StringValue(h.redact(all[i].Value.String()))
		}
	}
	h.log.LogAttrs(ctx, level, msg, all...)
}

// redact replaces the Client's API key in server text (nothing to find
// without a Client).
func (h *Handler) redact(s string) string {
	if h.client == nil {
		return s
	}
	return h.client.Redact(s)
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
		return outcome{code: http.StatusUnauthorized, body: "unauthorized\n", result: resultRejected}, false
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
		return outcome{code: http.StatusNotFound, body: "not found\n", result: resultRejected}
	case errors.Is(err, cryptopay.ErrInvalidParams):
		return outcome{code: http.StatusBadRequest, body: "bad request\n", result: resultRejected}
	case errors.Is(err, cryptopay.ErrUnauthorized):
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: the API refused the client's key; cannot verify events", slog.String("error", err.Error()))
		return failed("cannot verify")
	default:
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: re-reading the object failed; asking the sender to retry", slog.String("error", err.Error()))
		return retryLater("retry later")
	}
}

// ahead reports whether the posted status is further along than the API's,
// so the API is probably lagging behind the event: the API's status can
// still move to the posted one by the SDK's lifecycle table (late moves
// included). Unknown statuses are never ahead.
func (ev *event) ahead() bool { return ev.kind.ahead(ev.postedStatus, ev.status) }

// clip cuts s to at most n bytes on a rune boundary, for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// flatten puts s on one line: runs of spaces and control characters become
// one space.
func flatten(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}
