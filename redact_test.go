package cryptopay

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// debugLogger returns a JSON logger at debug level writing to buf.
func debugLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestKeyEchoedInHeadersScrubbed: a server that echoes the API key in
// X-Request-Id gets it into no error, no log line (debug and the warning
// of an unknown outcome), no Response and no Observer.
func TestKeyEchoedInHeadersScrubbed(t *testing.T) {
	var logs bytes.Buffer
	var seen []string
	obs := Observer{
		OnAttemptEnd: func(_ context.Context, _ CallInfo, r AttemptResult) { seen = append(seen, fmt.Sprint(r)) },
		OnCallEnd:    func(_ context.Context, _ CallInfo, r CallResult) { seen = append(seen, fmt.Sprint(r)) },
	}
	c, mux := setup(t, WithLogger(debugLogger(&logs)), WithObserver(obs))
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", "req-"+r.Header.Get("X-Api-Key"))
			w.Header().Set("X-Echo", r.Header.Get("X-Api-Key"))
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"code":"echo","message":"no"}`))
		}
	}
	mux.HandleFunc("GET /v1/balance", echo(404))
	mux.HandleFunc("POST /v1/payout", echo(502))

	var resp Response
	_, err := c.GetBalances(context.Background(), WithResponseInto(&resp))
	require.ErrorIs(t, err, ErrNotFound)
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), "req-[REDACTED]", "the request id stays useful")
	assert.NotContains(t, fmt.Sprint(resp), testKey)
	assert.Equal(t, "[REDACTED]", resp.Header.Get("X-Echo"))

	_, err = c.CreatePayout(context.Background(), validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.NotContains(t, err.Error(), testKey)
	assert.NotContains(t, fmt.Sprintf("%+v", err), testKey)

	assert.Contains(t, logs.String(), "outcome unknown")
	assert.NotContains(t, logs.String(), testKey, "neither the debug lines nor the warning")
	assert.NotContains(t, strings.Join(seen, "\n"), testKey)
}

// TestKeyEchoedInDecodeErrorScrubbed: a 2xx whose amount field echoes the
// key makes a decode error that quotes the field; the key is scrubbed from
// the error and the warning line.
func TestKeyEchoedInDecodeErrorScrubbed(t *testing.T) {
	var logs bytes.Buffer
	c, mux := setup(t, WithLogger(debugLogger(&logs)))
	mux.HandleFunc("GET /v1/balance", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `[{"currency":"usdt","network":"tron","amount":%q}]`, r.Header.Get("X-Api-Key"))
	})
	mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Replace(payoutBody, `"amount": 0.00000001`, `"amount": "`+r.Header.Get("X-Api-Key")+`"`, 1)))
	})

	_, err := c.GetBalances(context.Background())
	require.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), "[REDACTED]", "the decoder's message is kept, scrubbed")

	_, err = c.CreatePayout(context.Background(), validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	require.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, logs.String(), "outcome unknown")
	assert.NotContains(t, logs.String(), testKey)
}

func TestTransportErrorScrubbed(t *testing.T) {
	// A mock transport: no real one puts the key into its error text.
	c, mt := setupMock(t, WithRetryPolicy(RetryPolicy{MaxRetries: 1, MinWait: time.Millisecond, MaxWait: time.Millisecond}))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", httpmock.NewErrorResponder(fmt.Errorf("proxy said: bad header x-api-key=%s", testKey)))
	_, err := c.GetBalances(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), "[REDACTED]")
}
