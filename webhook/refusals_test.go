package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/testfix"
)

// TestRefusalsCountedLoggedAndTold: every refused delivery is counted by
// its reason, told to OnRefused, and logged at Warn, at most once per
// reason and window: a wrong secret, repeated, is one line that names the
// reason (never the token or the secret) and three counts.
func TestRefusalsCountedLoggedAndTold(t *testing.T) {
	t.Parallel()
	otherSecret := []byte(strings.Repeat("o", MinSecretLen))
	wrong, err := URL("https://shop.example/hooks/cryptopay", otherSecret, whOrder)
	require.NoError(t, err)
	token := wrong[strings.Index(wrong, "token=")+len("token="):]
	body := `{"paymentId":"00000000-0000-4000-8000-000000000001","orderId":"` + whOrder + `","status":"paid"}`
	tests := []struct {
		name           string
		method, target string
		body           string
		times          int
		want           RefusalReason
		code           int
	}{
		{"wrong secret", http.MethodPost, wrong, body, 3, RefusedToken, http.StatusUnauthorized},
		{"no token", http.MethodPost, "/hook", body, 1, RefusedTokenMissing, http.StatusUnauthorized},
		{"not POST", http.MethodGet, whURL(t, whOrder), "", 1, RefusedMethod, http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, whURL(t, whOrder), "{", 1, RefusedBadJSON, http.StatusBadRequest},
		{"no kind", http.MethodPost, whURL(t, whOrder), `{"orderId":"` + whOrder + `","status":"paid"}`, 1, RefusedUnknownKind, http.StatusBadRequest},
		{"bad event", http.MethodPost, whURL(t, whOrder), `{"paymentId":"x","orderId":"` + whOrder + `","status":"paid"}`, 1, RefusedBadEvent, http.StatusBadRequest},
		{"too large", http.MethodPost, whURL(t, whOrder), `{"pad":"` + strings.Repeat("a", 2048) + `"}`, 1, RefusedTooLarge, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			var mu sync.Mutex
			var told []Refusal
			h, err := NewHandler(Config{
				Secret:       whSecret,
				OnPayment:    func(context.Context, *cryptopay.Payment) error { return nil },
				MaxBodyBytes: 1024,
				Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
				OnRefused: func(_ context.Context, r Refusal) {
					mu.Lock()
					defer mu.Unlock()
					told = append(told, r)
				},
			})
			require.NoError(t, err)
			for range tc.times {
				r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
				require.Equal(t, tc.code, serve(h, r).Code)
			}
			s := h.Refusals()
			assert.Equal(t, int64(tc.times), s.Count)
			assert.Equal(t, map[RefusalReason]int64{tc.want: int64(tc.times)}, s.ByReason)
			assert.Equal(t, tc.want, s.Last)
			assert.Equal(t, tc.code, s.LastStatus)
			assert.False(t, s.LastAt.Before(s.Since))
			assert.Contains(t, s.String(), "webhooks refused: "+string(rune('0'+tc.times))+" since ")
			assert.Contains(t, s.String(), "last reason "+string(tc.want))

			mu.Lock()
			require.Len(t, told, tc.times)
			assert.Equal(t, tc.want, told[0].Reason)
			assert.Equal(t, tc.code, told[0].StatusCode)
			mu.Unlock()

			out := logs.String()
			assert.Equal(t, 1, strings.Count(out, "cryptopay webhook: refused a delivery"), "one line per reason and window: %s", out)
			assert.Contains(t, out, "level=WARN")
			assert.Contains(t, out, "reason="+string(tc.want))
			assert.NotContains(t, out, token, "the token is never logged")
			assert.False(t, testfix.Leaks(out, string(whSecret)), out)
			assert.NotContains(t, out, string(otherSecret))
		})
	}
}

// TestRefusalsNoneAndDelivered: a delivered event is no refusal.
func TestRefusalsNoneAndDelivered(t *testing.T) {
	t.Parallel()
	h := newTestHandler(t, nil, &recorder{}, nil)
	w := serve(h, whRequest(t, whURL(t, whOrder), `{"paymentId":"00000000-0000-4000-8000-000000000001","orderId":"`+whOrder+`","status":"paid"}`))
	require.Equal(t, http.StatusOK, w.Code)
	s := h.Refusals()
	assert.Zero(t, s.Count)
	assert.Nil(t, s.ByReason)
	assert.Contains(t, s.String(), "webhooks refused: none since ")
}

// TestRefusalLogWindow: within a window a reason is logged once; the first
// line after it says how many were held back, and the window doubles.
func TestRefusalLogWindow(t *testing.T) {
	t.Parallel()
	var rs refusals
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		why  RefusalReason
		held int
		log  bool
	}{
		{0, RefusedToken, 0, true},
		{time.Second, RefusedToken, 0, false},
		{2 * time.Second, RefusedMethod, 0, true}, // its own window
		{30 * time.Second, RefusedToken, 0, false},
		{refusalLogEvery, RefusedToken, 2, true},
		{refusalLogEvery + refusalLogEvery, RefusedToken, 0, false}, // the window doubled
		{3 * refusalLogEvery, RefusedToken, 1, true},
	}
	for i, s := range steps {
		held, log := rs.add(Refusal{Reason: s.why, StatusCode: 401, At: t0.Add(s.at)})
		assert.Equal(t, s.log, log, "step %d", i)
		assert.Equal(t, s.held, held, "step %d", i)
	}
	assert.Equal(t, int64(len(steps)), rs.stats.Count)
}

// TestRefusalHookPanic: a panicking OnRefused changes no answer and is
// logged.
func TestRefusalHookPanic(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h, err := NewHandler(Config{
		Secret:    whSecret,
		OnPayment: func(context.Context, *cryptopay.Payment) error { return nil },
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		OnRefused: func(context.Context, Refusal) { panic("hook bug") },
	})
	require.NoError(t, err)
	var w *httptest.ResponseRecorder
	require.NotPanics(t, func() { w = serve(h, httptest.NewRequest(http.MethodGet, "/hook", nil)) })
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Contains(t, logs.String(), "OnRefused hook panicked")
	assert.Equal(t, int64(1), h.Refusals().Count)
}

// Without a Logger, a refusal still reaches a log: slog.Default()'s, at
// Warn (lines below Warn do not). Before, a nil Logger discarded it, and a
// wrong secret left no trace. Not parallel: it sets the default logger.
func TestRefusalLoggedWithoutLogger(t *testing.T) {
	var logs syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h, err := NewHandler(Config{Secret: whSecret, OnPayment: func(context.Context, *cryptopay.Payment) error { return nil }})
	slog.SetDefault(prev)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, serve(h, whRequest(t, "/hook", `{}`)).Code)
	assert.Contains(t, logs.String(), "level=WARN msg=\"cryptopay webhook: refused a delivery\" reason=token_missing")
	h.log.Info("below warn")
	assert.NotContains(t, logs.String(), "below warn")
}
