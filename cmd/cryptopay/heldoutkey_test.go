package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// heldOutKey is an API key no code path is told about except through the
// environment, with a '/' so that JSON's "\/" escape changes its text.
const heldOutKey = "hk_live/Q7wX2pL9vR4tY8nB3mK6cJ1dF5gH0sZa"

// echoes are the ways a hostile server, proxy or gateway echoes the key.
var echoes = []struct {
	name string
	send func(w http.ResponseWriter, key string, status int)
}{
	{"raw in code", func(w http.ResponseWriter, key string, status int) {
		writeJSON(w, status, map[string]string{"code": key, "message": "denied"})
	}},
	{"raw in message", func(w http.ResponseWriter, key string, status int) {
		writeJSON(w, status, map[string]string{"code": "denied", "message": "bad key " + key + " refused"})
	}},
	{"JSON-escaped slash", func(w http.ResponseWriter, key string, status int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"code":"denied","message":"key ` + strings.ReplaceAll(key, "/", `\/`) + `"}`))
	}},
	{"upper case", func(w http.ResponseWriter, key string, status int) {
		writeJSON(w, status, map[string]string{"code": "denied", "message": strings.ToUpper(key)})
	}},
	{"percent-encoded", func(w http.ResponseWriter, key string, status int) {
		writeJSON(w, status, map[string]string{"code": "denied", "message": "see /auth?key=" + url.QueryEscape(key)})
	}},
	{"request id", func(w http.ResponseWriter, key string, status int) {
		w.Header().Set("X-Request-Id", key)
		writeJSON(w, status, map[string]string{"code": "denied", "message": "denied"})
	}},
	{"request id cut at 128 bytes", func(w http.ResponseWriter, key string, status int) {
		w.Header().Set("X-Request-Id", strings.Repeat("r", 100)+key)
		writeJSON(w, status, map[string]string{"code": "denied", "message": "denied"})
	}},
	{"message cut", func(w http.ResponseWriter, key string, status int) {
		writeJSON(w, status, map[string]string{"code": "denied", "message": strings.Repeat("m", 500) + key})
	}},
	{"body text", func(w http.ResponseWriter, key string, status int) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("upstream said: x-api-key: " + key))
	}},
	{"headers", func(w http.ResponseWriter, key string, status int) {
		w.Header().Set("X-Echo-Api-Key", key)
		w.Header().Set("Www-Authenticate", `Key realm="`+key+`"`)
		writeJSON(w, status, map[string]string{"code": "denied", "message": "denied"})
	}},
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// TestKeyNeverPrinted: whatever a hostile server echoes of the key, and
// however, no part of it reaches the CLI's stdout or stderr, for every
// command that talks to the API, on a refusal (400) and on the unknown
// outcome of a create (502).
func TestKeyNeverPrinted(t *testing.T) {
	const payID = "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e"
	commands := [][]string{
		{"payment", "get", payID},
		{"payment", "wait", payID, "--timeout", "5s"},
		paymentCreateArgs,
		append(payoutCreateArgs, "--yes"),
		{"payout", "get", "po_1"},
		{"payout", "find", "--order-id", "o-1"},
		{"payout", "export"},
		{"balances"},
		{"currencies"},
		{"webhook", "send", "--to", "http://127.0.0.1:1/wh", "--payment", payID},
	}
	for _, echo := range echoes {
		for _, status := range []int{http.StatusBadRequest, http.StatusBadGateway} {
			hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				echo.send(w, r.Header.Get("X-Api-Key"), status)
			}))
			t.Cleanup(hostile.Close)
			f := &fixture{t: t, env: map[string]string{envBaseURL: hostile.URL, envAPIKey: heldOutKey, envWebhookSecret: testSecret}}
			for _, args := range commands {
				name := strings.Join(args[:min(2, len(args))], " ")
				if status == http.StatusBadGateway && !strings.HasSuffix(name, " create") {
					continue // a 5xx is retried; the creates show the unknown-outcome path
				}
				t.Run(echo.name+"/"+http.StatusText(status)+"/"+name, func(t *testing.T) {
					f.t = t
					for _, tm := range []terms{{stdout: true, stderr: true}, {}} {
						r := f.runCLI(tm, "", args...)
						assert.NotEqual(t, 0, r.code)
						assertNoKeyPart(t, r.stdout+r.stderr)
					}
				})
			}
		}
	}
}

// assertNoKeyPart fails when s holds keyFragment or more consecutive
// characters of heldOutKey, in any letter case.
func assertNoKeyPart(t *testing.T, s string) {
	t.Helper()
	low := strings.ToLower(s)
	key := strings.ToLower(heldOutKey)
	for i := 0; i+keyFragment <= len(key); i++ {
		if strings.Contains(low, key[i:i+keyFragment]) {
			t.Errorf("output holds %q of the key: %s", heldOutKey[i:i+keyFragment], s)
			return
		}
	}
}

// TestKeyInAnswerNeverPrinted: a server that echoes the key inside a
// successful answer (a payment's additionalData, a payout's address, a
// currency's name) gets no part of it onto stdout, in a table or as JSON.
func TestKeyInAnswerNeverPrinted(t *testing.T) {
	const payID = "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e"
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		switch {
		case r.URL.Path == "/v1/payout/list":
			writeJSON(w, 200, map[string]any{"count": 1, "payout": []map[string]any{{"status": "created", "amount": "1",
				"orderId": "o-1", "paidAddress": key, "createdAt": "2026-11-22T10:00:00Z"}}})
		case strings.HasPrefix(r.URL.Path, "/v1/payment/"):
			writeJSON(w, 200, map[string]any{"paymentId": payID, "status": "waiting", "payAmount": "1",
				"payAddress": key, "currency": "usdt", "network": "tron", "orderId": "o-1", "additionalData": "echo " + key})
		case strings.HasPrefix(r.URL.Path, "/v1/payout/"):
			writeJSON(w, 200, map[string]any{"payoutId": "po_1", "status": "created", "amount": "1",
				"walletAddress": strings.ToUpper(key), "currency": "usdt", "network": "tron", "orderId": "o-1"})
		default:
			writeJSON(w, 200, []map[string]any{{"amount": "1", "currency": key, "network": "tron"}})
		}
	}))
	t.Cleanup(hostile.Close)
	f := &fixture{t: t, env: map[string]string{envBaseURL: hostile.URL, envAPIKey: heldOutKey}}
	for _, tc := range []struct {
		args    []string
		outputs []string
	}{
		{[]string{"payment", "get", payID}, []string{"table", "json", "csv"}},
		{[]string{"payout", "get", "po_1"}, []string{"table", "json", "csv"}},
		{[]string{"balances"}, []string{"table", "json", "csv"}},
		{[]string{"payout", "export"}, []string{"csv", "jsonl"}},
	} {
		args := tc.args
		for _, output := range tc.outputs {
			t.Run(strings.Join(args, " ")+"/"+output, func(t *testing.T) {
				f.t = t
				r := f.runCLI(terms{stdout: true, stderr: true}, "", append([]string{"--output", output}, args...)...)
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, "[REDACTED]")
				assertNoKeyPart(t, r.stdout+r.stderr)
			})
		}
	}
}

// The fake's own error text reaches the user whole: its key
// (cryptopaytest.DefaultAPIKey) starts with the public word
// "cryptopaytest", which its messages also use. It came out as "fault
// injected by [REDACTED]".
func TestFakeErrorTextNotRedacted(t *testing.T) {
	f := setup(t)
	require.Equal(t, cryptopaytest.DefaultAPIKey, f.srv.APIKey)
	f.srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Times: 10, Status: 400})
	r := f.run("balances")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "fault injected by cryptopaytest")
	assert.NotContains(t, r.stderr, "[REDACTED]")
}
