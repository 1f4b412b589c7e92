package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

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
//
// Every 4xx is a refusal: counted by reason (Refusals, RefusalReason),
// logged at Warn at most once per reason and minute (the window doubling
// to an hour while it goes on; never the token or the secret), and told
// to Config.OnRefused.
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
	onRefused func(context.Context, Refusal)
	refused   refusals
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
		onRefused: cfg.OnRefused,
	}
	h.refused.stats.Since = time.Now()
	h.macs.New = func() any { return &tokenCheck{mac: hmac.New(sha256.New, h.secret)} }
	if h.dedupe == nil {
		h.dedupe = new(MemoryDedupeStore)
	}
	if h.log == nil {
		h.log = slog.New(warnOnly{slog.Default().Handler()})
	}
	return h, nil
}

// deliverTo is a typed callback (Config.OnPayment or OnPayout) as a func of
// the event's object, the form the handler's table of callbacks holds; nil
// stays nil (no callback for that kind).
func deliverTo[T any](fn func(context.Context, *T) error) func(context.Context, any) error {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, v any) error { return fn(ctx, v.(*T)) }
}

// Refusals returns the counts of the deliveries this Handler refused (4xx)
// since it was built, by reason, with the latest. They live in this
// process only; to see them from another one (a health check, the CLI),
// record them with Config.OnRefused (pgstore's Tracker and Queue do, in
// the database: WebhookRefused).
func (h *Handler) Refusals() RefusalStats {
	h.refused.mu.Lock()
	defer h.refused.mu.Unlock()
	s := h.refused.stats
	s.ByReason = maps.Clone(s.ByReason)
	return s
}
