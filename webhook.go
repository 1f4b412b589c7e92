package cryptopay

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
)

// Webhook defaults and limits.
const (
	// MinWebhookSecretLen is the shortest secret WebhookURL and
	// NewWebhookHandler accept. Use 32 random bytes (crypto/rand).
	MinWebhookSecretLen = 16
	// DefaultWebhookMaxBodyBytes is the default body limit of a
	// WebhookHandler (1 MiB); a larger body is answered 413.
	DefaultWebhookMaxBodyBytes = 1 << 20
)

// webhookTokenContext separates webhook tokens from any other use of the
// secret: token = HMAC-SHA256(secret, webhookTokenContext + orderID).
const webhookTokenContext = "cryptopay-go webhook v1\x00"

// webhookToken is the token WebhookURL puts in the URL for orderID:
// base64url without padding (RFC 4648 §5) of
// HMAC-SHA256(secret, "cryptopay-go webhook v1" + 0x00 + orderID).
func webhookToken(secret []byte, orderID string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(webhookTokenContext))
	m.Write([]byte(orderID))
	return m.Sum(nil)
}

func checkSecret(secret []byte, field string) error {
	if len(secret) < MinWebhookSecretLen {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("must be at least %d bytes (use 32 random bytes)", MinWebhookSecretLen)}
	}
	if len(bytes.Trim(secret, "\x00")) == 0 {
		return &ValidationError{Field: field, Reason: "is all zero bytes; fill it from crypto/rand"}
	}
	return nil
}

// WebhookURL returns the URL to pass as the webhookUrl of a payment or
// payout for order orderID: base with a token query parameter added, where
// token is base64url (no padding) of HMAC-SHA256(secret, "cryptopay-go
// webhook v1" + 0x00 + orderID). A WebhookHandler with the same secret
// accepts an event only if its orderId matches the token in its URL.
//
// base must be an absolute http or https URL without a fragment and without
// a token parameter; its other query parameters are kept. secret must be at
// least MinWebhookSecretLen bytes and not all zero; orderID must not be
// empty. Use https: anyone who learns the URL can post events for this
// order (which a handler with a Client then checks against the API).
func WebhookURL(base string, secret []byte, orderID string) (string, error) {
	if err := checkSecret(secret, "secret"); err != nil {
		return "", err
	}
	if orderID == "" {
		return "", &ValidationError{Field: "orderID", Reason: "must not be empty: the token signs it"}
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", &ValidationError{Field: "base", Reason: "not a URL"}
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", &ValidationError{Field: "base", Reason: "scheme must be https (or http)"}
	case u.Host == "" || u.Hostname() == "":
		return "", &ValidationError{Field: "base", Reason: "has no host"}
	case u.Fragment != "" || strings.Contains(base, "#"):
		return "", &ValidationError{Field: "base", Reason: "must not have a fragment"}
	case u.Query().Has("token"):
		return "", &ValidationError{Field: "base", Reason: "already has a token parameter"}
	}
	tok := "token=" + base64.RawURLEncoding.EncodeToString(webhookToken(secret, orderID))
	if u.RawQuery == "" {
		u.RawQuery = tok
	} else {
		u.RawQuery += "&" + tok
	}
	u.ForceQuery = false
	return u.String(), nil
}

// WebhookConfig configures a WebhookHandler.
type WebhookConfig struct {
	// Secret is the key WebhookURL signed the orderId with; at least
	// MinWebhookSecretLen bytes. It is copied. Keep it out of source code
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
	Client *Client

	// OnPayment is called with a payment event (a body with paymentId). A
	// non-nil error or a panic answers 500, so the sender redelivers; nil
	// answers 200. It may be nil if payments are not expected (their
	// events are then acknowledged and dropped). Make it idempotent: see
	// DedupeStore.
	OnPayment func(context.Context, *Payment) error
	// OnPayout is OnPayment for payout events (a body with payoutId).
	OnPayout func(context.Context, *Payout) error

	// MaxBodyBytes caps the request body (0: DefaultWebhookMaxBodyBytes);
	// a larger one is answered 413.
	MaxBodyBytes int64
	// Dedupe remembers delivered events, so that each (id, status) reaches
	// the callback once. nil: NewMemoryDedupeStore(0, 0), which works
	// within one process only; replicas must share a store (see
	// DedupeStore).
	Dedupe DedupeStore
	// Logger receives one line per rejected or failed event (never the
	// body, the token or the secret). nil discards.
	Logger *slog.Logger
}

// WebhookHandler receives the API's events for payments and payouts. It is
// an http.Handler, safe for concurrent use; mount it at the URL given to
// WebhookURL. Build it with NewWebhookHandler.
//
// For each request it answers, with a one-word text body:
//
//	405 not POST (with Allow: POST)
//	401 token missing, or not the HMAC of the body's orderId, or the object
//	    re-read through the API belongs to another orderId
//	413 body over MaxBodyBytes
//	400 not a JSON object with exactly one of paymentId or payoutId, a
//	    non-empty orderId and status, and a valid id
//	404 the API does not know the id (with Client)
//	503 the API could not be read, the dedupe store failed, the same event
//	    is being processed right now, or the posted status is ahead of
//	    what the API reports (the API has not caught up yet): the sender
//	    should retry later. The callback has then already seen the API's
//	    current version, if it was new.
//	500 the callback returned an error or panicked, or the API refused
//	    this Client's key (fix the configuration; the sender retries)
//	200 delivered, or a duplicate of an event already delivered
type WebhookHandler struct {
	secret    []byte
	client    *Client
	onPayment func(context.Context, *Payment) error
	onPayout  func(context.Context, *Payout) error
	maxBody   int64
	dedupe    DedupeStore
	log       *slog.Logger
}

// NewWebhookHandler checks cfg and returns the handler. It refuses a Secret
// shorter than MinWebhookSecretLen or all zero, a negative MaxBodyBytes, and
// a config with nothing to do (no Client, OnPayment or OnPayout).
func NewWebhookHandler(cfg WebhookConfig) (*WebhookHandler, error) {
	if err := checkSecret(cfg.Secret, "Secret"); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, &ValidationError{Field: "MaxBodyBytes", Reason: "must not be negative"}
	}
	if cfg.Client == nil && cfg.OnPayment == nil && cfg.OnPayout == nil {
		return nil, &ValidationError{Field: "WebhookConfig", Reason: "needs OnPayment, OnPayout or Client"}
	}
	h := &WebhookHandler{
		secret:    bytes.Clone(cfg.Secret),
		client:    cfg.Client,
		onPayment: cfg.OnPayment,
		onPayout:  cfg.OnPayout,
		maxBody:   cfg.MaxBodyBytes,
		dedupe:    cfg.Dedupe,
		log:       cfg.Logger,
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultWebhookMaxBodyBytes
	}
	if h.dedupe == nil {
		h.dedupe = NewMemoryDedupeStore(0, 0)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

// event is a webhook body: parsed, then authenticated, then (with a Client)
// replaced by the API's version of its object.
type event struct {
	kind    objKind
	id      string
	orderID string
	// status is the API's once re-read, else the posted one; postedStatus
	// keeps the body's.
	status, postedStatus string
	payment              *Payment
	payout               *Payout
}

var errBadEvent = errors.New("not a payment or payout event")

// maxStatusLen bounds the status a body may carry.
const maxStatusLen = 64

// parseEvent reads a body as a payment or a payout. The body is decoded
// once, into the object, and the id, orderId and status are taken from
// that object, so what the token is checked against is what the callback
// would see.
func parseEvent(body []byte) (*event, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, errBadEvent
	}
	var probe struct {
		PaymentID json.RawMessage `json:"paymentId"`
		PayoutID  json.RawMessage `json:"payoutId"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, errBadEvent
	}
	present := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	ev := new(event)
	switch {
	case present(probe.PaymentID) && !present(probe.PayoutID):
		p := new(Payment)
		if err := json.Unmarshal(body, p); err != nil {
			return nil, errBadEvent
		}
		if validatePaymentID(p.ID) != nil {
			return nil, errBadEvent
		}
		ev.kind, ev.id, ev.orderID, ev.status, ev.payment = kindPayment, p.ID, p.OrderID, string(p.Status), p
	case present(probe.PayoutID) && !present(probe.PaymentID):
		p := new(Payout)
		if err := json.Unmarshal(body, p); err != nil {
			return nil, errBadEvent
		}
		if validatePayoutID(p.ID) != nil {
			return nil, errBadEvent
		}
		ev.kind, ev.id, ev.orderID, ev.status, ev.payout = kindPayout, p.ID, p.OrderID, string(p.Status), p
	default:
		return nil, errBadEvent
	}
	// A status is a short word; a long one would bloat the dedupe store.
	if ev.status == "" || len(ev.status) > maxStatusLen {
		return nil, errBadEvent
	}
	return ev, nil
}

// validToken checks the token against orderID in constant time.
func (h *WebhookHandler) validToken(token, orderID string) bool {
	if orderID == "" || len(token) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return false
	}
	return hmac.Equal(got, webhookToken(h.secret, orderID))
}

// outcome is how the handler answers a request: the status code and
// one-word body, the Observer's result word, and for a refusal the reason
// logged.
type outcome struct {
	code   int
	msg    string
	result string
	reason string
}

// The Observer's result words (WebhookEventInfo.Result).
const (
	resultDelivered  = "delivered"
	resultDuplicate  = "duplicate"
	resultRejected   = "rejected"
	resultRetryLater = "retry_later"
	resultFailed     = "failed"
)

var (
	delivered = outcome{code: http.StatusOK, msg: "ok", result: resultDelivered}
	duplicate = outcome{code: http.StatusOK, msg: "ok", result: resultDuplicate}
)

// rejected refuses the request; reason goes to the log line, never msg.
func rejected(code int, msg, reason string) outcome {
	return outcome{code: code, msg: msg, result: resultRejected, reason: reason}
}

// retryLater asks the sender to come back (503 with Retry-After).
func retryLater(msg string) outcome {
	return outcome{code: http.StatusServiceUnavailable, msg: msg, result: resultRetryLater}
}

// failed is a 500: the sender retries, but the fault is on this side.
func failed(msg string) outcome {
	return outcome{code: http.StatusInternalServerError, msg: msg, result: resultFailed}
}

// ServeHTTP authenticates the event, re-reads its object through the API
// (with a Client), wakes waits, and delivers each new (id, status) to the
// callback once. See WebhookHandler for the answers.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out := h.handle(w, r)
	h.answer(w, r, out)
}

// handle runs the steps of one request and says how to answer it.
func (h *WebhookHandler) handle(w http.ResponseWriter, r *http.Request) outcome {
	token, out, ok := h.checkRequest(r)
	if !ok {
		return out
	}
	body, out, ok := h.readBody(w, r)
	if !ok {
		return out
	}
	ev, out, ok := h.authenticate(token, body)
	if !ok {
		return out
	}
	// Authenticated for ev.orderID from here on.
	ctx := r.Context()
	if h.client != nil {
		if out, ok := h.reread(ctx, ev); !ok {
			return out
		}
	}
	if out := h.deliverOnce(ctx, ev); out.code != http.StatusOK {
		return out
	}
	if h.client != nil && ahead(ev.kind, ev.postedStatus, ev.status) {
		h.logEvent(ctx, slog.LevelInfo, ev, "cryptopay webhook: posted status is ahead of the API; asking the sender to retry",
			slog.String("posted", truncate(ev.postedStatus, 32)), slog.String("api", ev.status))
		return retryLater("api behind event")
	}
	return delivered
}

// checkRequest refuses what can be refused before reading the body: a
// method other than POST, a missing or repeated token, a declared length
// over the limit. It returns the token.
func (h *WebhookHandler) checkRequest(r *http.Request) (string, outcome, bool) {
	if r.Method != http.MethodPost {
		return "", rejected(http.StatusMethodNotAllowed, "method not allowed", "method not allowed"), false
	}
	tokens := r.URL.Query()["token"]
	if len(tokens) != 1 || tokens[0] == "" {
		return "", rejected(http.StatusUnauthorized, "unauthorized", "token missing or repeated"), false
	}
	if r.ContentLength > h.maxBody {
		return "", rejected(http.StatusRequestEntityTooLarge, "too large", "body too large"), false
	}
	return tokens[0], outcome{}, true
}

// readBody reads the body under the size limit.
func (h *WebhookHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, outcome, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, rejected(http.StatusRequestEntityTooLarge, "too large", "body too large"), false
		}
		return nil, rejected(http.StatusBadRequest, "bad request", "body not readable"), false
	}
	return body, outcome{}, true
}

// authenticate parses the body and checks the token against its orderId.
func (h *WebhookHandler) authenticate(token string, body []byte) (*event, outcome, bool) {
	ev, err := parseEvent(body)
	if err != nil {
		return nil, rejected(http.StatusBadRequest, "bad request", err.Error()), false
	}
	if !h.validToken(token, ev.orderID) {
		return nil, rejected(http.StatusUnauthorized, "unauthorized", "token does not match orderId"), false
	}
	return ev, outcome{}, true
}

// answer writes out and logs a refusal.
func (h *WebhookHandler) answer(w http.ResponseWriter, r *http.Request, out outcome) {
	if out.reason != "" {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "cryptopay webhook: rejected",
			slog.Int("status", out.code), slog.String("reason", out.reason), slog.String("remote", r.RemoteAddr))
	}
	hd := w.Header()
	if out.code == http.StatusMethodNotAllowed {
		hd.Set("Allow", http.MethodPost)
	}
	if out.code == http.StatusServiceUnavailable {
		hd.Set("Retry-After", "5")
	}
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(out.code)
	_, _ = io.WriteString(w, out.msg+"\n")
}

// logEvent logs a line about an authenticated event, with its kind, id and
// orderId (never the body).
func (h *WebhookHandler) logEvent(ctx context.Context, level slog.Level, ev *event, msg string, attrs ...slog.Attr) {
	if !h.log.Enabled(ctx, level) {
		return
	}
	all := append([]slog.Attr{slog.String("kind", ev.kind.String()), slog.String("id", ev.id),
		slog.String("orderId", truncate(ev.orderID, 128))}, attrs...)
	h.log.LogAttrs(ctx, level, msg, all...)
}

// reread replaces the posted object by the API's and wakes waits.
func (h *WebhookHandler) reread(ctx context.Context, ev *event) (outcome, bool) {
	var (
		err             error
		orderID, id, st string
		wakeObj         func() any
	)
	if ev.kind == kindPayment {
		var p *Payment
		if p, err = h.client.GetPayment(ctx, ev.id); err == nil {
			orderID, id, st = p.OrderID, p.ID, string(p.Status)
			wakeObj = func() any { cp := *p; return &cp }
			ev.payment = p
		}
	} else {
		var p *Payout
		if p, err = h.client.GetPayout(ctx, ev.id); err == nil {
			orderID, id, st = p.OrderID, p.ID, string(p.Status)
			wakeObj = func() any { cp := *p; return &cp }
			ev.payout = p
		}
	}
	if err != nil {
		return h.rereadFailed(ctx, ev, err), false
	}
	if orderID != ev.orderID {
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the object belongs to another orderId than the token; refused")
		return outcome{code: http.StatusUnauthorized, msg: "unauthorized", result: resultRejected}, false
	}
	if objectID(ev.kind, id) != objectID(ev.kind, ev.id) {
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the API answered with another object's id")
		return retryLater("retry later"), false
	}
	h.client.waiters.notify(ev.kind, ev.id, wakeObj)
	ev.postedStatus, ev.status = ev.status, st
	return outcome{}, true
}

// rereadFailed maps a failed re-read to the answer.
func (h *WebhookHandler) rereadFailed(ctx context.Context, ev *event, err error) outcome {
	switch {
	case errors.Is(err, ErrNotFound):
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: the API does not know this id")
		return outcome{code: http.StatusNotFound, msg: "not found", result: resultRejected}
	case errors.Is(err, ErrInvalidParams):
		return outcome{code: http.StatusBadRequest, msg: "bad request", result: resultRejected}
	case errors.Is(err, ErrUnauthorized):
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: the API refused the client's key; cannot verify events", slog.String("error", err.Error()))
		return failed("cannot verify")
	default:
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: re-reading the object failed; asking the sender to retry", slog.String("error", err.Error()))
		return retryLater("retry later")
	}
}

// deliverOnce hands the event to its callback unless the store says this
// (id, status) was delivered or is being delivered. Without a callback for
// its kind the event is acknowledged.
func (h *WebhookHandler) deliverOnce(ctx context.Context, ev *event) outcome {
	var deliver func() error
	switch {
	case ev.kind == kindPayment && h.onPayment != nil:
		deliver = func() error { return h.onPayment(ctx, ev.payment) }
	case ev.kind == kindPayout && h.onPayout != nil:
		deliver = func() error { return h.onPayout(ctx, ev.payout) }
	default:
		return delivered
	}
	key := objectKey(ev.kind, ev.id) + "/" + ev.status
	if out, ok := h.claim(ctx, ev, key); !ok {
		return out
	}
	// The claim must be settled even if the sender hung up.
	settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := callSafely(deliver); err != nil {
		if rerr := h.dedupe.Release(settle, key); rerr != nil {
			h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: releasing the dedupe claim failed", slog.String("error", rerr.Error()))
		}
		attrs := []slog.Attr{slog.String("status", ev.status), slog.String("error", err.Error())}
		var p *callbackPanic
		if errors.As(err, &p) {
			attrs = append(attrs, slog.String("stack", string(p.stack)))
		}
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: callback failed; the sender should redeliver", attrs...)
		return failed("callback failed")
	}
	if err := h.dedupe.Complete(settle, key); err != nil {
		// Delivered: answer 200 all the same. A redelivery may call the
		// callback again, which must be idempotent anyway.
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: recording the delivery failed", slog.String("error", err.Error()))
	}
	return delivered
}

// claim asks the dedupe store for key; ok means the caller holds it.
func (h *WebhookHandler) claim(ctx context.Context, ev *event, key string) (outcome, bool) {
	claim, err := h.dedupe.Claim(ctx, key)
	if err != nil {
		h.logEvent(ctx, slog.LevelWarn, ev, "cryptopay webhook: dedupe store failed; asking the sender to retry", slog.String("error", err.Error()))
		return retryLater("retry later"), false
	}
	switch claim {
	case DedupeClaimed:
		return outcome{}, true
	case DedupeSeen:
		h.logEvent(ctx, slog.LevelDebug, ev, "cryptopay webhook: duplicate, already delivered", slog.String("status", ev.status))
		return duplicate, false
	case DedupeInProgress:
		h.logEvent(ctx, slog.LevelDebug, ev, "cryptopay webhook: same event in progress; asking the sender to retry", slog.String("status", ev.status))
		return retryLater("in progress"), false
	}
	h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: dedupe store answered an unknown claim", slog.Int("claim", int(claim)))
	return retryLater("retry later"), false
}

type callbackPanic struct {
	value any
	stack []byte
}

func (p *callbackPanic) Error() string {
	return truncate(oneLine(fmt.Sprintf("callback panicked: %v", p.value)), 512)
}

func callSafely(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &callbackPanic{value: v, stack: debug.Stack()}
		}
	}()
	return fn()
}

// ahead reports whether the posted status is further along than the API's,
// so the API is probably lagging behind the event: a heuristic over the
// usual order of statuses. Unknown statuses are never ahead.
func ahead(kind objKind, posted, api string) bool {
	var p, a int
	if kind == kindPayment {
		p, a = PaymentStatus(posted).rank(), PaymentStatus(api).rank()
	} else {
		p, a = PayoutStatus(posted).rank(), PayoutStatus(api).rank()
	}
	return p != 0 && a != 0 && p > a
}
