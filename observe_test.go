package cryptopay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
