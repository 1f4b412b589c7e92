package webhook

import (
	"context"
	"log/slog"
	"strings"
	"unicode"
)

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
