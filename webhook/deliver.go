package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// hasCallback reports whether the handler has a callback for ev's kind.
func (h *Handler) hasCallback(ev *event) bool { return h.callbacks[ev.kind] != nil }

// deliverOnce hands the event to its callback unless the store says this
// (id, status) was delivered or is being delivered. Without a callback for
// its kind the event is acknowledged.
func (h *Handler) deliverOnce(ctx context.Context, ev *event) outcome {
	if !h.hasCallback(ev) {
		return delivered
	}
	key := ev.kind.name + "/" + ev.kind.key(ev.id) + "/" + ev.status
	if out, ok := h.claim(ctx, ev, key); !ok {
		return out
	}
	if err := h.callback(ctx, ev); err != nil {
		if rerr := settle(ctx, h.dedupe.Release, key); rerr != nil {
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
	if err := settle(ctx, h.dedupe.Complete, key); err != nil {
		// Delivered: answer 200 all the same. A redelivery may call the
		// callback again, which must be idempotent anyway.
		h.logEvent(ctx, slog.LevelError, ev, "cryptopay webhook: recording the delivery failed", slog.String("error", err.Error()))
	}
	return delivered
}

// settle runs a store's Complete or Release on key. A claim must be settled
// even if the sender hung up meanwhile: if ctx has ended, op runs again
// under a context that only a 10-second bound ends.
func settle(ctx context.Context, op func(context.Context, string) error, key string) error {
	err := op(ctx, key)
	if err == nil || ctx.Err() == nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return op(sctx, key)
}

// claim asks the dedupe store for key; ok means the caller holds it.
func (h *Handler) claim(ctx context.Context, ev *event, key string) (outcome, bool) {
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
	return clip(flatten(fmt.Sprintf("callback panicked: %v", p.value)), 512)
}

// callback runs the callback for ev's kind, turning a panic into an error.
func (h *Handler) callback(ctx context.Context, ev *event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &callbackPanic{value: v, stack: debug.Stack()}
		}
	}()
	return h.callbacks[ev.kind](ctx, ev.obj)
}
