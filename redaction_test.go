package cryptopay

import (
	"bytes"
	"context"
	"encoding/json"
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

func TestClientPrintsNoKey(t *testing.T) {
	c, err := NewClient(testBase, testKey)
	require.NoError(t, err)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("client", "c", c)
	for _, out := range []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c),
		fmt.Sprintf("%v", *c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), fmt.Sprint(c), c.String(),
		logs.String(),
	} {
		assert.NotContains(t, out, testKey)
	}
	assert.Contains(t, c.String(), "[REDACTED]")
	assert.Contains(t, fmt.Sprintf("%+v", c), testBase)
	var nilClient *Client
	assert.Equal(t, "cryptopay.Client(nil)", nilClient.String())
}

// TestDebugLogs captures debug logs across success, error, retry and
// unknown-outcome paths: one line per attempt with method, path, status,
// duration and attempt, and never the key, a query string or a body.
func TestDebugLogs(t *testing.T) {
	var logs bytes.Buffer
	c, mt := setupMock(t, WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	echo := func(status int) httpmock.Responder {
		return func(r *http.Request) (*http.Response, error) {
			// A hostile server that echoes the request headers back.
			b, _ := json.Marshal(map[string]any{"code": "echo", "message": fmt.Sprint(r.Header)})
			return httpmock.NewBytesResponse(status, b), nil
		}
	}
	var n int
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", func(r *http.Request) (*http.Response, error) {
		n++
		if n == 1 {
			return echo(503)(r)
		}
		return httpmock.NewStringResponse(200, `[{"currency":"usdt","network":"tron","amount":1}]`), nil
	})
	mt.RegisterResponder(http.MethodGet, `=~/v1/payout/list`, echo(400))
	mt.RegisterResponder(http.MethodPost, testBase+"/v1/payout", echo(500))

	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	_, err = c.ListPayouts(context.Background(), ListPayoutsParams{Limit: 5, Offset: 10})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), testKey, "an echoed key is scrubbed from the error")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.NotContains(t, string(apiErr.Body), testKey)
	_, err = c.CreatePayout(context.Background(), validPayoutParams())
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.NotContains(t, err.Error(), testKey)

	out := logs.String()
	assert.NotContains(t, out, testKey)
	assert.NotContains(t, out, "limit=5", "no query strings")
	assert.NotContains(t, out, "TXyz", "no bodies")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	var attempts []map[string]any
	for _, m := range lines {
		if m["msg"] == "cryptopay request" {
			attempts = append(attempts, m)
		}
	}
	require.Len(t, attempts, 4, "GET 503 + GET 200 + list 400 + payout 500")
	want := []struct {
		method, path string
		status       float64
		attempt      float64
		retry        bool
	}{
		{"GET", "/v1/balance", 503, 1, true},
		{"GET", "/v1/balance", 200, 2, false},
		{"GET", "/v1/payout/list", 400, 1, false},
		{"POST", "/v1/payout", 500, 1, false},
	}
	for i, w := range want {
		a := attempts[i]
		assert.Equal(t, w.method, a["method"])
		assert.Equal(t, w.path, a["path"])
		assert.Equal(t, w.status, a["status"])
		assert.Equal(t, w.attempt, a["attempt"])
		assert.Equal(t, w.retry, a["retry"])
		assert.Contains(t, a, "duration")
	}
	assert.Equal(t, "WARN", lines[len(lines)-1]["level"])
	assert.Equal(t, "wd-1", lines[len(lines)-1]["orderId"])
}

func TestDefaultLoggerSilent(t *testing.T) {
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", httpmock.NewStringResponder(200, `[]`))
	_, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.False(t, c.logger.Enabled(context.Background(), slog.LevelError), "the default logger discards everything")
}

func TestTransportErrorScrubbed(t *testing.T) {
	c, mt := setupMock(t, WithRetryPolicy(RetryPolicy{MaxRetries: 1, MinWait: time.Millisecond, MaxWait: time.Millisecond}))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", httpmock.NewErrorResponder(fmt.Errorf("proxy said: bad header x-api-key=%s", testKey)))
	_, err := c.GetBalances(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), "[REDACTED]")
}
