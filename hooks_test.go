package cryptopay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestObserverSeesNoSecrets: what an Observer receives (route, results,
// errors) never holds the key, an id or a query, even when the server
// echoes the key and the call fails in transport.
func TestObserverSeesNoSecrets(t *testing.T) {
	var mu sync.Mutex
	var all strings.Builder
	dump := func(v ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range v {
			fmt.Fprintf(&all, "%+v\n", x)
			if e, ok := x.(error); ok && e != nil {
				all.WriteString(e.Error() + "\n")
			}
		}
	}
	obs := Observer{
		OnCallStart:    func(ctx context.Context, ci CallInfo) context.Context { dump(ci); return ctx },
		OnAttemptStart: func(ctx context.Context, ci CallInfo, _ int) context.Context { dump(ci); return ctx },
		OnAttemptEnd:   func(_ context.Context, ci CallInfo, r AttemptResult) { dump(ci, r, r.Err) },
		OnCallEnd:      func(_ context.Context, ci CallInfo, r CallResult) { dump(ci, r, r.Err) },
	}
	c, mux := setup(t, WithObserver(obs))
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("X-Api-Key"))
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"code":"nf","message":"` + r.Header.Get("X-Api-Key") + `"}`))
	})
	mux.HandleFunc("GET /v1/payout/{id}/status", resetAfterReading)
	ctx := context.Background()
	_, _ = c.GetPayment(ctx, paymentID)
	_, _ = c.GetPayout(ctx, "po_secret_77")
	_, _ = c.ListPayouts(ctx, ListPayoutsParams{Limit: 5, Offset: 10})
	_, _ = refusedClient(t, WithObserver(obs)).CreatePayout(ctx, validPayoutParams())

	out := all.String()
	require.NotEmpty(t, out)
	for _, secret := range []string{testKey, paymentID, "po_secret_77", "limit=", "offset="} {
		assert.NotContains(t, out, secret)
	}
}

// TestObserverPanicKeepsResult: an Observer that panics in any hook, after
// the server created the payout, changes nothing: the caller gets the
// payout, the panic is logged (without the key).
func TestObserverPanicKeepsResult(t *testing.T) {
	boom := func() { panic("observer bug, key " + testKey) }
	hooks := map[string]Observer{
		"OnCallStart":    {OnCallStart: func(context.Context, CallInfo) context.Context { boom(); return nil }},
		"OnAttemptStart": {OnAttemptStart: func(context.Context, CallInfo, int) context.Context { boom(); return nil }},
		"OnAttemptEnd":   {OnAttemptEnd: func(context.Context, CallInfo, AttemptResult) { boom() }},
		"OnCallEnd":      {OnCallEnd: func(context.Context, CallInfo, CallResult) { boom() }},
	}
	for name, obs := range hooks {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			var hits atomic.Int32
			c, mux := setup(t, WithObserver(obs), WithLogger(debugLogger(&logs)))
			mux.HandleFunc("POST /v1/payout", serveJSON(200, payoutBody, nil, &hits))
			p, err := c.CreatePayout(context.Background(), validPayoutParams())
			require.NoError(t, err)
			assert.Equal(t, "po_77", p.ID)
			assert.Equal(t, int32(1), hits.Load())
			assert.Contains(t, logs.String(), "panicked")
			assert.Contains(t, logs.String(), name)
			assert.NotContains(t, logs.String(), testKey)
		})
	}
}
