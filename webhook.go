package cryptopay

import (
	"bytes"
	"container/list"
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
	"sync"
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
	// DefaultDedupeEntries and DefaultDedupeTTL size the in-memory
	// DedupeStore a WebhookHandler uses when WebhookConfig.Dedupe is nil.
	DefaultDedupeEntries = 100_000
	DefaultDedupeTTL     = 72 * time.Hour
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

// DedupeClaim is the answer of DedupeStore.Claim.
type DedupeClaim int

const (
	// DedupeClaimed: the key is new and now claimed by the caller, which must
	// call Complete or Release.
	DedupeClaimed DedupeClaim = iota + 1
	// DedupeSeen: the key was completed before; the event is a duplicate.
	DedupeSeen
	// DedupeInProgress: another delivery holds the claim right now.
	DedupeInProgress
)

// DedupeStore remembers which events (a key per payment or payout id and
// status) a WebhookHandler has delivered, so duplicates reach the callback
// once. Implementations must be safe for concurrent use.
//
// The handler calls Claim before the callback; Complete after the callback
// returned nil; Release after it failed or panicked (so a redelivery runs it
// again). Keys are short ASCII strings such as "payment/<uuid>/paid".
//
// The default is a bounded in-memory store (NewMemoryDedupeStore), which
// only dedupes within one process. Replicas behind a load balancer must
// share one store, for example in Redis (no Redis client is bundled; a
// sketch using go-redis names):
//
//	Claim:    ok := SET prefix+key "busy" NX PX 60000 (a lease: a replica that
//	          dies mid-callback frees the key when it expires)
//	          ok → DedupeClaimed; else GET prefix+key: "done" → DedupeSeen,
//	          otherwise DedupeInProgress
//	Complete: SET prefix+key "done" PX 259200000 (72 h, at least the sender's
//	          retry window)
//	Release:  DEL prefix+key (ideally only if still "busy": a two-line Lua script)
//
// A store gives at-most-once delivery per claim, not exactly-once: a
// process that dies after the callback succeeded but before Complete gets
// the event again, and an entry evicted or expired lets a late duplicate
// through. Callbacks must therefore be idempotent (for example, "mark order
// paid" rather than "add to balance").
type DedupeStore interface {
	// Claim claims key, or reports that it is done or held by another
	// delivery. An error makes the handler answer 503 (the sender retries).
	Claim(ctx context.Context, key string) (DedupeClaim, error)
	// Complete records key as done; it is called once the callback succeeded.
	Complete(ctx context.Context, key string) error
	// Release drops the claim on key after the callback failed.
	Release(ctx context.Context, key string) error
}

// MemoryDedupeStore is the in-memory DedupeStore: it remembers up to a
// number of completed keys for a time (the oldest are forgotten first) and
// the keys being processed. It dedupes within one process only. Use
// NewMemoryDedupeStore; the zero value is not ready.
type MemoryDedupeStore struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // of *dedupeEntry, oldest first
	done  map[string]*list.Element
	busy  map[string]struct{}
}

type dedupeEntry struct {
	key string
	at  time.Time
}

// NewMemoryDedupeStore returns an in-memory DedupeStore that remembers at
// most maxEntries completed keys (0: DefaultDedupeEntries) for ttl each
// (0: DefaultDedupeTTL). About 150 bytes per entry.
func NewMemoryDedupeStore(maxEntries int, ttl time.Duration) *MemoryDedupeStore {
	if maxEntries <= 0 {
		maxEntries = DefaultDedupeEntries
	}
	if ttl <= 0 {
		ttl = DefaultDedupeTTL
	}
	return &MemoryDedupeStore{
		max:   maxEntries,
		ttl:   ttl,
		now:   time.Now,
		order: list.New(),
		done:  make(map[string]*list.Element),
		busy:  make(map[string]struct{}),
	}
}

// Claim implements DedupeStore.
func (s *MemoryDedupeStore) Claim(_ context.Context, key string) (DedupeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if _, ok := s.busy[key]; ok {
		return DedupeInProgress, nil
	}
	if _, ok := s.done[key]; ok {
		return DedupeSeen, nil
	}
	s.busy[key] = struct{}{}
	return DedupeClaimed, nil
}

// Complete implements DedupeStore.
func (s *MemoryDedupeStore) Complete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, key)
	now := s.now()
	if e, ok := s.done[key]; ok {
		e.Value.(*dedupeEntry).at = now
		s.order.MoveToBack(e)
	} else {
		s.done[key] = s.order.PushBack(&dedupeEntry{key: key, at: now})
	}
	for s.order.Len() > s.max {
		s.drop(s.order.Front())
	}
	return nil
}

// Release implements DedupeStore.
func (s *MemoryDedupeStore) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, key)
	return nil
}

// Len reports how many completed keys the store remembers.
func (s *MemoryDedupeStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	return s.order.Len()
}

func (s *MemoryDedupeStore) expire() {
	now := s.now()
	for e := s.order.Front(); e != nil && now.Sub(e.Value.(*dedupeEntry).at) >= s.ttl; e = s.order.Front() {
		s.drop(e)
	}
}

func (s *MemoryDedupeStore) drop(e *list.Element) {
	delete(s.done, e.Value.(*dedupeEntry).key)
	s.order.Remove(e)
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

// event is a parsed, not yet authenticated, webhook body.
type event struct {
	// postedStatus is the body's status, kept when the API's replaces it.
	postedStatus string
	kind         objKind
	id           string
	orderID      string
	status       string // the API's once re-read, else the posted one
	payment      *Payment
	payout       *Payout
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

func reply(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

func retryLater(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "5")
	reply(w, http.StatusServiceUnavailable, msg)
}

// ServeHTTP authenticates the event, re-reads its object through the API
// (with a Client), wakes waits, and delivers each new (id, status) to the
// callback once. See WebhookHandler for the answers.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	tokens := r.URL.Query()["token"]
	if len(tokens) != 1 || tokens[0] == "" {
		h.reject(ctx, r, http.StatusUnauthorized, "token missing or repeated")
		reply(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	if r.ContentLength > h.maxBody {
		h.reject(ctx, r, http.StatusRequestEntityTooLarge, "body too large")
		reply(w, http.StatusRequestEntityTooLarge, "too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.reject(ctx, r, http.StatusRequestEntityTooLarge, "body too large")
			reply(w, http.StatusRequestEntityTooLarge, "too large")
			return
		}
		h.reject(ctx, r, http.StatusBadRequest, "body not readable")
		reply(w, http.StatusBadRequest, "bad request")
		return
	}
	ev, err := parseEvent(body)
	if err != nil {
		h.reject(ctx, r, http.StatusBadRequest, err.Error())
		reply(w, http.StatusBadRequest, "bad request")
		return
	}
	if !h.validToken(tokens[0], ev.orderID) {
		h.reject(ctx, r, http.StatusUnauthorized, "token does not match orderId")
		reply(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	// Authenticated for ev.orderID from here on.
	log := h.log.With(slog.String("kind", ev.kind.String()), slog.String("id", ev.id), slog.String("orderId", truncate(ev.orderID, 128)))

	lagging := false
	if h.client != nil {
		code, msg := h.reread(ctx, log, ev)
		if code != 0 {
			if code == http.StatusServiceUnavailable {
				retryLater(w, msg)
			} else {
				reply(w, code, msg)
			}
			return
		}
		lagging = ahead(ev.kind, ev.postedStatus, ev.status)
	}

	var deliver func() error
	switch {
	case ev.kind == kindPayment && h.onPayment != nil:
		p := ev.payment
		deliver = func() error { return h.onPayment(ctx, p) }
	case ev.kind == kindPayout && h.onPayout != nil:
		p := ev.payout
		deliver = func() error { return h.onPayout(ctx, p) }
	}
	if deliver != nil {
		code, msg := h.deliverOnce(ctx, log, ev, deliver)
		if code != http.StatusOK {
			if code == http.StatusServiceUnavailable {
				retryLater(w, msg)
			} else {
				reply(w, code, msg)
			}
			return
		}
	}
	if lagging {
		log.LogAttrs(ctx, slog.LevelInfo, "cryptopay webhook: posted status is ahead of the API; asking the sender to retry",
			slog.String("posted", truncate(ev.postedStatus, 32)), slog.String("api", ev.status))
		retryLater(w, "api behind event")
		return
	}
	reply(w, http.StatusOK, "ok")
}

// reread replaces the posted object by the API's and wakes waits. It
// returns 0 on success, or the status code and message to answer.
func (h *WebhookHandler) reread(ctx context.Context, log *slog.Logger, ev *event) (int, string) {
	var (
		err             error
		orderID, id, st string
		payment         *Payment
		payout          *Payout
		wakeObj         func() any
		sameID          bool
	)
	if ev.kind == kindPayment {
		payment, err = h.client.GetPayment(ctx, ev.id)
		if err == nil {
			orderID, id, st = payment.OrderID, payment.ID, string(payment.Status)
			sameID = strings.EqualFold(id, ev.id)
			wakeObj = func() any { cp := *payment; return &cp }
		}
	} else {
		payout, err = h.client.GetPayout(ctx, ev.id)
		if err == nil {
			orderID, id, st = payout.OrderID, payout.ID, string(payout.Status)
			sameID = id == ev.id
			wakeObj = func() any { cp := *payout; return &cp }
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: the API does not know this id")
			return http.StatusNotFound, "not found"
		case errors.Is(err, ErrInvalidParams):
			return http.StatusBadRequest, "bad request"
		case errors.Is(err, ErrUnauthorized):
			log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: the API refused the client's key; cannot verify events", slog.String("error", err.Error()))
			return http.StatusInternalServerError, "cannot verify"
		default:
			log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: re-reading the object failed; asking the sender to retry", slog.String("error", err.Error()))
			return http.StatusServiceUnavailable, "retry later"
		}
	}
	if orderID != ev.orderID {
		log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: the object belongs to another orderId than the token; refused")
		return http.StatusUnauthorized, "unauthorized"
	}
	if !sameID {
		log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: the API answered with another object's id")
		return http.StatusServiceUnavailable, "retry later"
	}
	h.client.waiters.notify(ev.kind, ev.id, wakeObj)
	ev.postedStatus, ev.status, ev.payment, ev.payout = ev.status, st, payment, payout
	return 0, ""
}

// deliverOnce runs deliver unless the store says this (id, status) was
// delivered or is being delivered.
func (h *WebhookHandler) deliverOnce(ctx context.Context, log *slog.Logger, ev *event, deliver func() error) (int, string) {
	key := ev.kind.String() + "/" + waitKeyID(ev.kind, ev.id) + "/" + ev.status
	claim, err := h.dedupe.Claim(ctx, key)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "cryptopay webhook: dedupe store failed; asking the sender to retry", slog.String("error", err.Error()))
		return http.StatusServiceUnavailable, "retry later"
	}
	switch claim {
	case DedupeSeen:
		log.LogAttrs(ctx, slog.LevelDebug, "cryptopay webhook: duplicate, already delivered", slog.String("status", ev.status))
		return http.StatusOK, "ok"
	case DedupeInProgress:
		log.LogAttrs(ctx, slog.LevelDebug, "cryptopay webhook: same event in progress; asking the sender to retry", slog.String("status", ev.status))
		return http.StatusServiceUnavailable, "in progress"
	case DedupeClaimed:
	default:
		log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: dedupe store answered an unknown claim", slog.Int("claim", int(claim)))
		return http.StatusServiceUnavailable, "retry later"
	}
	// The claim must be settled even if the sender hung up.
	settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := callSafely(deliver); err != nil {
		if rerr := h.dedupe.Release(settle, key); rerr != nil {
			log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: releasing the dedupe claim failed", slog.String("error", rerr.Error()))
		}
		attrs := []slog.Attr{slog.String("status", ev.status), slog.String("error", err.Error())}
		var p *callbackPanic
		if errors.As(err, &p) {
			attrs = append(attrs, slog.String("stack", string(p.stack)))
		}
		log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: callback failed; the sender should redeliver", attrs...)
		return http.StatusInternalServerError, "callback failed"
	}
	if err := h.dedupe.Complete(settle, key); err != nil {
		// Delivered: answer 200 all the same. A redelivery may call the
		// callback again, which must be idempotent anyway.
		log.LogAttrs(ctx, slog.LevelError, "cryptopay webhook: recording the delivery failed", slog.String("error", err.Error()))
	}
	return http.StatusOK, "ok"
}

// waitKeyID normalises an id for map keys: payment ids are UUIDs, which
// compare case-insensitively; payout ids are opaque.
func waitKeyID(kind objKind, id string) string {
	if kind == kindPayment {
		return strings.ToLower(id)
	}
	return id
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

func (h *WebhookHandler) reject(ctx context.Context, r *http.Request, code int, reason string) {
	h.log.LogAttrs(ctx, slog.LevelInfo, "cryptopay webhook: rejected",
		slog.Int("status", code), slog.String("reason", reason), slog.String("remote", r.RemoteAddr))
}

// ahead reports whether the posted status is further along than the API's,
// so the API is probably lagging behind the event: a heuristic over the
// usual order of statuses. Unknown statuses are never ahead.
func ahead(kind objKind, posted, api string) bool {
	var rank func(string) int
	if kind == kindPayment {
		rank = func(s string) int {
			switch PaymentStatus(s) {
			case PaymentWaiting:
				return 1
			case PaymentConfirming, PaymentLocked:
				return 2
			case PaymentFailed, PaymentRejected, PaymentExpired:
				return 3
			case PaymentPaidPartial, PaymentPaid, PaymentPaidOver:
				return 4
			}
			return 0
		}
	} else {
		rank = func(s string) int {
			switch PayoutStatus(s) {
			case PayoutCreated:
				return 1
			case PayoutReview:
				return 2
			case PayoutProcessing:
				return 3
			case PayoutConfirming:
				return 4
			case PayoutFailed, PayoutCancelled:
				return 5
			case PayoutPaid:
				return 6
			}
			return 0
		}
	}
	p, a := rank(posted), rank(api)
	return p != 0 && a != 0 && p > a
}
