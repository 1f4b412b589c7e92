package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestTermSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"paid", "paid"},
		{"", ""},
		{"a\x1b[2Kb", "a [2Kb"},
		{"a\rb\nc\td", "a b c d"},
		{"del\x7f", "del "},
		{"c1\u009b31m", "c1 31m"},
		{"bad\x9b31m", "bad 31m"}, // not UTF-8: a raw 8-bit CSI
		{"bidi\u202eevil", "bidi evil"},
		{"isolate\u2066x\u2069", "isolate x "},
		{"ünïcödé ₮ 中文", "ünïcödé ₮ 中文"},
		// Invisible format characters: a status that shows as "paid" but is
		// not, hidden text, and table columns shifted under another heading.
		{"pa\u200bid", "pa id"},
		{"zwj\u200dnj\u200cwj\u2060", "zwj nj wj "},
		{"bom\ufeffsoft\u00adhyphen", "bom soft hyphen"},
		{"tag\U000E0041\U000E007F", "tag  "},
		{"line\u2028para\u2029", "line para "},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, termSafe(tt.in))
		})
	}
}

func TestJSONWriterEscapesWhatJSONLeaves(t *testing.T) {
	in := map[string]string{"s": "a\x1b[2K\x7f\u009b\u202eb\xffc ü"}
	var raw, safe bytes.Buffer
	require.NoError(t, json.NewEncoder(&raw).Encode(in))
	assert.True(t, strings.ContainsAny(raw.String(), "\x7f\u009b\u202e"), "encoding/json leaves DEL, C1 and bidi raw")
	require.NoError(t, json.NewEncoder(jsonWriter{w: &safe}).Encode(in))
	assert.Equal(t, `{"s":"a\u001b[2K\u007f\u009b\u202eb\ufffdc ü"}`+"\n", safe.String())
	var back map[string]string
	require.NoError(t, json.Unmarshal(safe.Bytes(), &back))
	var want map[string]string
	require.NoError(t, json.Unmarshal(raw.Bytes(), &want))
	assert.Equal(t, want, back, "the same JSON value")
}

// TestJSONWriterEscapesFormatCharacters: invisible format characters are
// escaped too, one beyond U+FFFF as a UTF-16 surrogate pair (JSON's only
// form for it), so the output is still the same JSON value.
func TestJSONWriterEscapesFormatCharacters(t *testing.T) {
	in := map[string]string{"s": "pa\u200bid\ufeff tag\U000E0041"}
	var safe bytes.Buffer
	require.NoError(t, json.NewEncoder(jsonWriter{w: &safe}).Encode(in))
	assert.Equal(t, `{"s":"pa\u200bid\ufeff tag\udb40\udc41"}`+"\n", safe.String())
	var back map[string]string
	require.NoError(t, json.Unmarshal(safe.Bytes(), &back))
	assert.Equal(t, in, back, "the same JSON value")
}

// noControl asserts that s has no byte a terminal acts on, other than the
// line breaks the CLI writes itself.
func noControl(t *testing.T, s string) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		assert.False(t, strings.ContainsFunc(line, unsafeRune), "control character in %q", line)
		assert.NotContains(t, line, "\xc2\x9b")
	}
}

var paymentCreateArgs = []string{"payment", "create", "--amount", "10", "--currency", "usdt", "--network", "tron",
	"--customer-id", "c1", "--customer-ip", "203.0.113.7", "--order-id", "pay-7"}

// The attack from the issue: the server processed the payout, then answered
// 502 with an error code carrying escapes that erase the line and print a
// false "safe to retry".
const hostileCode = "\x1b[2K\r\x1b[1Apayout NOT created, nothing was sent; safe to retry\x1b[8m"

func TestServerTextCannotRewriteTheWarning(t *testing.T) {
	body, err := json.Marshal(map[string]string{"code": hostileCode, "message": "bad\x1b]0;title\x07gateway"})
	require.NoError(t, err)
	tests := []struct {
		name  string
		args  []string
		route cryptopaytest.Route
		want  string
	}{
		{"payout create", append(payoutCreateArgs, "--yes"), cryptopaytest.RouteCreatePayout, "do NOT resend: run 'cryptopay payout find"},
		{"payment create", paymentCreateArgs, cryptopaytest.RouteCreatePayment, "a payment for order pay-7 may exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			f.srv.InjectFault(tt.route, cryptopaytest.Fault{Process: true, Status: 502, Body: string(body)})
			r := f.runCLI(terms{stdout: true, stderr: true}, "", tt.args...)
			assert.Equal(t, exitOutcomeUnknown, r.code, r.stderr)
			assert.Equal(t, 1, f.srv.Requests(tt.route), "never resent")
			noControl(t, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		})
	}
}

// tamper serves the fake's API through fix, which may rewrite each answer
// before it leaves, and points the fixture's environment at it.
func (f *fixture) tamper(fix func(r *http.Request, h http.Header, status int, body []byte) (int, []byte)) {
	h := f.srv.Handler()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body, _ := io.ReadAll(rec.Body)
		status, body := fix(r, rec.Header(), rec.Code, body)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	f.t.Cleanup(hostile.Close)
	f.env[envBaseURL] = hostile.URL
}

func TestServerTextInTablesIsClean(t *testing.T) {
	const evil = "usdt\x1b]0;pwned\x07\x1b[2J\u009b1m"
	f := setup(t)
	p := f.createPayment("o-evil", "10", "")
	require.NoError(t, f.srv.Pay(p.ID, decimal.RequireFromString("10")))
	f.tamper(func(_ *http.Request, _ http.Header, status int, body []byte) (int, []byte) {
		evilJSON, _ := json.Marshal(evil)
		return status, bytes.ReplaceAll(body, []byte(`"usdt"`), evilJSON)
	})
	f.createPayout("o-evil", "1")
	both := []terms{{stdout: true}, {}}
	for _, tt := range []struct {
		args []string
		tms  []terms
	}{
		{[]string{"payment", "wait", p.ID, "--interval", "5ms"}, both},
		{[]string{"payment", "get", p.ID}, both},
		{[]string{"balances"}, both},
		{[]string{"currencies"}, both},
		{[]string{"payout", "export", "--output", "jsonl"}, both},
		{[]string{"payout", "export"}, []terms{{stdout: true}}}, // CSV to a pipe is data, kept exact
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for _, tm := range tt.tms {
				r := f.runCLI(tm, "", tt.args...)
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, "usdt")
				noControl(t, r.stdout)
				noControl(t, r.stderr)
			}
		})
	}
}
