package cryptopay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// obsRecorder records every Observer call as a line of text.
type obsRecorder struct {
	mu    sync.Mutex
	lines []string
}

type obsKey struct{}

func (o *obsRecorder) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, fmt.Sprintf(format, args...))
}

func (o *obsRecorder) observer() Observer {
	return Observer{
		OnCallStart: func(ctx context.Context, ci CallInfo) context.Context {
			o.add("call %s", ci.Route)
			return context.WithValue(ctx, obsKey{}, "call")
		},
		OnAttemptStart: func(ctx context.Context, ci CallInfo, n int) context.Context {
			o.add("attempt %d %s parent=%v", n, ci.Route, ctx.Value(obsKey{}))
			return context.WithValue(ctx, obsKey{}, fmt.Sprintf("attempt-%d", n))
		},
		OnAttemptEnd: func(ctx context.Context, ci CallInfo, r AttemptResult) {
			o.add("end %d %s ctx=%v status=%d err=%v retry=%v reason=%q", r.Attempt, ci.Route, ctx.Value(obsKey{}), r.StatusCode, r.Err != nil, r.Retry, r.Reason)
		},
		OnCallEnd: func(ctx context.Context, ci CallInfo, r CallResult) {
			o.add("done %s ctx=%v attempts=%d status=%d err=%v unknown=%v", ci.Route, ctx.Value(obsKey{}), r.Attempts, r.StatusCode, r.Err != nil, r.OutcomeUnknown)
		},
	}
}

// TestObserver: every call and attempt is reported with the route
// template, the attempt number, the retry decision and its reason, the
// status, and whether the outcome is unknown; contexts flow from call to
// attempt; no key, id or query reaches the observer.
func TestObserver(t *testing.T) {
	rec := &obsRecorder{}
	c, mux := setup(t, WithObserver(rec.observer()))
	var n atomic.Int64
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(paymentStatus))
	})
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("GET /v1/payout/list", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"payout":[],"count":0}`))
	})
	ctx := context.Background()
	_, err := c.GetPayment(ctx, paymentID)
	require.NoError(t, err)
	_, err = c.CreatePayout(ctx, validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	_, err = c.ListPayouts(ctx, ListPayoutsParams{Limit: 5, Offset: 10})
	require.NoError(t, err)

	assert.Equal(t, []string{
		"call GET /v1/payment/{id}/status",
		"attempt 1 GET /v1/payment/{id}/status parent=call",
		`end 1 GET /v1/payment/{id}/status ctx=attempt-1 status=503 err=false retry=true reason="status 503 Service Unavailable"`,
		"attempt 2 GET /v1/payment/{id}/status parent=call",
		`end 2 GET /v1/payment/{id}/status ctx=attempt-2 status=200 err=false retry=false reason=""`,
		"done GET /v1/payment/{id}/status ctx=call attempts=2 status=200 err=false unknown=false",
		"call POST /v1/payout",
		"attempt 1 POST /v1/payout parent=call",
		`end 1 POST /v1/payout ctx=attempt-1 status=500 err=false retry=false reason="create request not resent after the server answered"`,
		"done POST /v1/payout ctx=call attempts=1 status=500 err=true unknown=true",
		"call GET /v1/payout/list",
		"attempt 1 GET /v1/payout/list parent=call",
		`end 1 GET /v1/payout/list ctx=attempt-1 status=200 err=false retry=false reason=""`,
		"done GET /v1/payout/list ctx=call attempts=1 status=200 err=false unknown=false",
	}, rec.lines)
}

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

// TestResponseRawJSON: a field the SDK does not decode yet is one
// json.Unmarshal away through Response.RawJSON, on success and on error,
// and the API key a server echoes is scrubbed from it.
func TestResponseRawJSON(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `[{"currency":"usdt","network":"tron","amount":"1.5","riskScore":7,"echo":"`+testKey+`"}]`)
	})
	mux.HandleFunc("GET /v1/currencies", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"code":"bad","message":"no","retryHint":"tomorrow"}`, http.StatusBadRequest)
	})
	var resp Response
	_, err := c.GetBalances(context.Background(), WithResponseInto(&resp))
	require.NoError(t, err)
	var future []struct {
		RiskScore int    `json:"riskScore"`
		Echo      string `json:"echo"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.RawJSON), &future))
	require.Len(t, future, 1)
	assert.Equal(t, 7, future[0].RiskScore, "an unknown future field is reachable")
	assert.Equal(t, "[REDACTED]", future[0].Echo)
	assert.NotContains(t, resp.RawJSON, testKey)

	_, err = c.ListCurrencies(context.Background(), WithResponseInto(&resp))
	require.Error(t, err)
	assert.Contains(t, resp.RawJSON, `"retryHint":"tomorrow"`, "an error body is reachable too")
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
