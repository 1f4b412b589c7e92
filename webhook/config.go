package webhook

import (
	"context"
	"log/slog"
	"time"

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
	// Logger receives the lines about refused and failed events (never
	// the body, the token or the secret): a refusal at Warn, at most once
	// per reason and window. nil: the records of Warn and above go to
	// slog.Default(), so a refusal (a wrong Secret ...) is never silent.
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

	// OnRefused, when set, is called once for every delivery the handler
	// refuses (a 4xx; see RefusalReason), on the request's goroutine, after
	// the answer is written: keep it fast (never a blocking write; a panic
	// is logged and ignored). It never sees the body, the token or the
	// secret. pgstore's Tracker.WebhookRefused and Queue.WebhookRefused
	// record refusals in the database (rate-limited), so that their Health,
	// the console and `cryptopay tracked health` / `cryptopay queue health`
	// in any process show them.
	OnRefused func(ctx context.Context, r Refusal)
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
