package cryptopay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldOutKey is a key of a shape no code special-cases: mixed case, '/' and
// '+' (which JSON, percent-encoding and HTML encode), no vendor prefix.
const heldOutKey = "Kx9/pQ-Zr7+Lm2Wd/Yt4Hn8"

// Encodings a server is likely to echo a key in.
func jsonSlash(k string) string { return strings.ReplaceAll(k, "/", `\/`) }

func uEscape(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		fmt.Fprintf(&b, `\u%04X`, k[i])
	}
	return b.String()
}

func pctLower(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		fmt.Fprintf(&b, "%%%02x", k[i])
	}
	return b.String()
}

func htmlRef(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		fmt.Fprintf(&b, "&#%d;", k[i])
	}
	return b.String()
}

func TestScrubberEncodings(t *testing.T) {
	sc := newScrubber(heldOutKey)
	tests := []struct{ name, echo string }{
		{"raw", heldOutKey},
		{"upper", strings.ToUpper(heldOutKey)},
		{"lower", strings.ToLower(heldOutKey)},
		{"json slash", jsonSlash(heldOutKey)},
		{"json slash upper", jsonSlash(strings.ToUpper(heldOutKey))},
		{"u escapes", uEscape(heldOutKey)},
		{"x escapes", strings.ReplaceAll(uEscape(heldOutKey), `\u00`, `\x`)},
		{"query escape", url.QueryEscape(heldOutKey)},
		{"path escape", url.PathEscape(heldOutKey)},
		{"percent lower", pctLower(heldOutKey)},
		{"html refs", htmlRef(heldOutKey)},
		{"mixed", "Kx9%2fpQ\\u002dZr7&#43;Lm2WD\\/yT4Hn8"},
		// JSON carried in a JSON string (a gateway wrapping an upstream's
		// error body): the escapes escaped again.
		{"json slash twice", strings.ReplaceAll(heldOutKey, "/", `\\/`)},
		{"json slash twice, both PHP", strings.ReplaceAll(heldOutKey, "/", `\\\/`)},
		{"u escapes twice", strings.ReplaceAll(uEscape(heldOutKey), `\u`, `\\u`)},
		{"u escapes thrice", strings.ReplaceAll(uEscape(heldOutKey), `\u`, `\\\\u`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "before " + tt.echo + " after"
			assert.Equal(t, "before [REDACTED] after", sc.String(in))
			assert.Equal(t, []byte("before [REDACTED] after"), sc.Bytes([]byte(in)))
		})
	}
}

// TestScrubberKeepsOtherText: text without the key comes back as it was,
// escapes and all.
func TestScrubberKeepsOtherText(t *testing.T) {
	sc := newScrubber(heldOutKey)
	for _, s := range []string{"", `a\/b %2F &#47; \u00 % & \`, `\\`, `Kx9\\\\\\\\\/pQ`, `c:\\Kx9`, "Kx9/pQ-Zr7+Lm2Wd/Yt4Hn", "kx9 pq"} {
		assert.Equal(t, s, sc.String(s))
	}
	assert.Equal(t, "Kx9/", scrubber{}.String("Kx9/"), "the zero scrubber finds nothing")
	assert.Equal(t, "ab", newScrubber("ab").String("ab"), "a key under 4 bytes is not searched for")
}

// TestScrubberKeyWithEscapeCharacters: a key holding '%', '\' or '&' is
// found raw and encoded.
func TestScrubberKeyWithEscapeCharacters(t *testing.T) {
	key := `ab%25c\d&e`
	sc := newScrubber(key)
	for _, echo := range []string{key, url.QueryEscape(key), strings.ReplaceAll(key, `\`, `\\`), strings.ToUpper(key)} {
		assert.Equal(t, "<[REDACTED]>", sc.String("<"+echo+">"), echo)
	}
}

// TestScrubberCut: text is scrubbed before it is cut, and what a cut leaves
// of the key at its end (4 bytes or more, encoded or not, an escape cut in
// the middle included) is redacted.
func TestScrubberCut(t *testing.T) {
	sc := newScrubber(heldOutKey)
	pad, tail := strings.Repeat("x", 100), strings.Repeat("y", 200)
	tests := []struct {
		name, in, want string
	}{
		{"whole key across the cut", pad[:90] + heldOutKey + tail, pad[:90] + "[REDACTED]…"},
		{"raw piece at the cut", pad[:90] + heldOutKey[:10], pad[:90] + "[REDACTED]…"},
		{"upper-case piece at the cut", pad[:90] + strings.ToUpper(heldOutKey[:10]), pad[:90] + "[REDACTED]…"},
		{"escaped piece at the cut", pad[:88] + jsonSlash(heldOutKey)[:12], pad[:88] + "[REDACTED]…"},
		{"cut inside an escape", pad[:72] + uEscape(heldOutKey)[:40], pad[:72] + "[REDACTED]…"},
		{"piece under 4 bytes kept", pad[:97] + heldOutKey[:3], pad[:97] + heldOutKey[:3] + "…"},
		{"no key", pad, pad + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sc.cut(tt.in+tail, 100))
		})
	}
	assert.Equal(t, []byte("xx[REDACTED]"), sc.cutBytes([]byte("xx"+heldOutKey[:6]+"yyyy"), 8))
	assert.Equal(t, "short", sc.cut("short", 100))
}

// TestScrubHeaderNames: a header whose name or value holds the key, in any
// encoding, is scrubbed in a copy; the original header is not changed.
func TestScrubHeaderNames(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:1", heldOutKey)
	if !assert.NoError(t, err) {
		return
	}
	h := http.Header{
		"X-" + url.QueryEscape(heldOutKey): {"v"},
		"X-Echo":                           {strings.ToLower(heldOutKey), "ok"},
		"Content-Type":                     {"application/json"},
	}
	got := c.scrubHeader(h)
	assert.Equal(t, http.Header{
		"X-[REDACTED]": {"v"},
		"X-Echo":       {"[REDACTED]", "ok"},
		"Content-Type": {"application/json"},
	}, got)
	assert.Contains(t, h, "X-"+url.QueryEscape(heldOutKey), "the response's own header is left alone")
	clean := http.Header{"A": {"b"}}
	assert.Equal(t, clean, c.scrubHeader(clean))
}

// FuzzScrubber: whatever surrounds the key, in whatever encoding, the
// scrubbed text has no 6-byte piece of it, and cut stays bounded.
func FuzzScrubber(f *testing.F) {
	f.Add("pre", "post", uint8(0), uint16(50))
	f.Add(`\`, "%", uint8(3), uint16(7))
	f.Add("&#", `\u00`, uint8(5), uint16(0))
	encs := []func(string) string{
		func(k string) string { return k }, strings.ToUpper, jsonSlash, uEscape, pctLower, htmlRef, url.QueryEscape,
		func(k string) string { return strings.ReplaceAll(jsonSlash(k), `\`, `\\`) },
	}
	sc := newScrubber(heldOutKey)
	f.Fuzz(func(t *testing.T, pre, post string, enc uint8, n uint16) {
		in := pre + encs[int(enc)%len(encs)](heldOutKey) + post
		out := sc.String(in)
		if leaks(out, heldOutKey) && !leaks(pre+post, heldOutKey) {
			t.Fatalf("key left in %q", out)
		}
		if c := sc.cut(in, int(n)); len(c) > int(n)+len(redacted)+len("…") {
			t.Fatalf("cut to %d gave %d bytes", n, len(c))
		}
	})
}

// TestReconcileReasonScrubsStatus: the status of the payout ReconcilePayout
// found is server text; ReconcileResult.Reason carries it scrubbed.
func TestReconcileReasonScrubsStatus(t *testing.T) {
	c, mux := setup(t)
	now := time.Now().UTC()
	item := `{"status":"paid ` + strings.ToUpper(testKey) + `","amount":"1","orderId":"wd-1","createdAt":"` + now.Format(time.RFC3339) + `"}`
	mux.HandleFunc("GET /v1/payout/list", serveJSON(200, `{"payout":[`+item+`],"count":1}`, nil, nil))
	res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: "wd-1", AttemptedAt: now})
	require.NoError(t, err)
	assert.Equal(t, PayoutExists, res.Verdict)
	assert.Contains(t, res.Reason, "[REDACTED]")
	assert.False(t, leaks(res.Reason, testKey), res.Reason)
}

// TestServerIssuedIDScrubbed: a payout id is server text the caller hands
// back (CreatePayout's answer, then GetPayout or WaitForPayout, or a
// webhook's re-read). A server that puts the key in it gets the key into
// no error, Path field or log line of the calls that take it.
func TestServerIssuedIDScrubbed(t *testing.T) {
	var logs bytes.Buffer
	c, mux := setup(t, WithLogger(debugLogger(&logs)), WithRetryPolicy(RetryPolicy{MaxRetries: 1, MinWait: time.Millisecond, MaxWait: time.Millisecond}))
	id := "po-" + strings.ToUpper(testKey)
	mux.HandleFunc("POST /v1/payout", serveJSON(200, strings.Replace(payoutBody, "po_77", id, 1), nil, nil))
	mux.HandleFunc("GET /v1/payout/{id}/status", serveJSON(500, `{"code":"down"}`, nil, nil))
	p, err := c.CreatePayout(context.Background(), validPayoutParams())
	require.NoError(t, err)
	require.Equal(t, id, p.ID, "the object itself is returned as the server sent it")

	_, getErr := c.GetPayout(context.Background(), p.ID)
	var apiErr *APIError
	require.ErrorAs(t, getErr, &apiErr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, waitErr := c.WaitForPayout(ctx, WaitForPayoutParams{ID: p.ID, PollInterval: time.Millisecond})
	require.Error(t, waitErr)

	for name, text := range map[string]string{
		"GetPayout error": getErr.Error(), "APIError.Path": apiErr.Path,
		"WaitForPayout error": waitErr.Error(), "logs": logs.String(),
	} {
		assert.False(t, leaks(text, testKey), "%s: %s", name, text)
	}
	assert.Contains(t, apiErr.Path, "/v1/payout/po-[REDACTED]/status")
}
