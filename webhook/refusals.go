package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// RefusalReason is one word saying why a Handler refused a delivery (answered
// 4xx). A sender keeps retrying a refused delivery and then gives up, so a
// refusal that continues means events are being lost: a wrong or rotated
// Secret is the common cause (RefusedToken).
type RefusalReason string

// The reasons a Handler refuses a delivery, with the status it answers.
const (
	// RefusedMethod: not POST (405).
	RefusedMethod RefusalReason = "method"
	// RefusedTokenMissing: the URL carries no token, or two (401).
	RefusedTokenMissing RefusalReason = "token_missing"
	// RefusedToken: the token is not the HMAC of the body's orderId: a
	// wrong token, or one signed with another Secret (a rotated or
	// mistyped one) (401).
	RefusedToken RefusalReason = "token"
	// RefusedOtherOrder: the object re-read through the API belongs to
	// another orderId than the token's (401).
	RefusedOtherOrder RefusalReason = "other_order"
	// RefusedTooLarge: the body is over MaxBodyBytes (413).
	RefusedTooLarge RefusalReason = "too_large"
	// RefusedTooSlow: the body did not arrive within BodyReadTimeout and
	// MinBodyRate (408).
	RefusedTooSlow RefusalReason = "too_slow"
	// RefusedBadJSON: the body is unreadable, or not one JSON object, or
	// its orderId is not a string (400).
	RefusedBadJSON RefusalReason = "bad_json"
	// RefusedUnknownKind: an authenticated body with neither a paymentId
	// nor a payoutId (400).
	RefusedUnknownKind RefusalReason = "unknown_kind"
	// RefusedBadEvent: an authenticated body that is not a valid event: a
	// member given twice, a missing or invalid id or status, an amount
	// that does not decode (400).
	RefusedBadEvent RefusalReason = "bad_event"
	// RefusedUnknownID: the API does not know the event's id (404).
	RefusedUnknownID RefusalReason = "unknown_id"
)

// Refusal is one delivery a Handler refused, as Config.OnRefused is told
// (never the body, the token or the secret).
type Refusal struct {
	// Reason says why.
	Reason RefusalReason
	// StatusCode is the status answered (4xx).
	StatusCode int
	// At is when it was answered.
	At time.Time
}

// RefusalStats counts refused deliveries (Handler.Refusals; pgstore keeps
// the same counts in its database, across processes).
type RefusalStats struct {
	// Count is how many deliveries were refused since Since.
	Count int64
	// Since is when the count started: when the Handler was built (pgstore:
	// the first refusal it recorded).
	Since time.Time
	// Last is the latest refusal's reason ("" if none), LastStatus its
	// status code and LastAt its time.
	Last       RefusalReason
	LastStatus int
	LastAt     time.Time
	// ByReason counts them by reason (nil if none).
	ByReason map[RefusalReason]int64
}

// String is the one-line summary, e.g. "webhooks refused: 3 since
// 2026-11-28T14:00:00Z, last reason token (401) at 2026-11-28T14:05:00Z";
// "webhooks refused: none since ..." when the count is 0.
func (s RefusalStats) String() string {
	since := s.Since.UTC().Format(time.RFC3339)
	if s.Count == 0 {
		return "webhooks refused: none since " + since
	}
	return fmt.Sprintf("webhooks refused: %d since %s, last reason %s (%d) at %s", s.Count, since, s.Last, s.LastStatus,
		s.LastAt.UTC().Format(time.RFC3339))
}

// refusals is what a Handler keeps of its refusals: the counts, and the
// gate that logs each reason at most once per window.
type refusals struct {
	mu    sync.Mutex
	stats RefusalStats
	gate  map[RefusalReason]*logWindow
}

// Log windows of refusals: the first refusal of a reason is logged at once,
// the next after refusalLogEvery, then after windows doubling up to
// refusalLogEveryMax; each line says how many were not logged since.
const (
	refusalLogEvery    = time.Minute
	refusalLogEveryMax = time.Hour
)

// logWindow is one reason's log gate.
type logWindow struct {
	next  time.Time
	every time.Duration
	held  int
}

// add counts r and reports whether to log it now and how many refusals of
// its reason were not logged since the last line.
func (rs *refusals) add(r Refusal) (held int, log bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	s := &rs.stats
	s.Count++
	s.Last, s.LastStatus, s.LastAt = r.Reason, r.StatusCode, r.At
	if s.ByReason == nil {
		s.ByReason = make(map[RefusalReason]int64)
		rs.gate = make(map[RefusalReason]*logWindow)
	}
	s.ByReason[r.Reason]++
	w := rs.gate[r.Reason]
	switch {
	case w == nil:
		rs.gate[r.Reason] = &logWindow{next: r.At.Add(refusalLogEvery), every: refusalLogEvery}
		return 0, true
	case r.At.Before(w.next):
		w.held++
		return 0, false
	}
	held, w.held = w.held, 0
	w.every = min(2*w.every, refusalLogEveryMax)
	w.next = r.At.Add(w.every)
	return held, true
}

// warnOnly passes the records of Warn and above to the handler it wraps:
// the Handler's logger when Config.Logger is nil (slog.Default()'s, so a
// refusal is never silent).
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnOnly{w.Handler.WithAttrs(attrs)}
}

func (w warnOnly) WithGroup(name string) slog.Handler { return warnOnly{w.Handler.WithGroup(name)} }
