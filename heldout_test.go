package cryptopay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go/internal/testfix"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaks reports whether s holds 6 or more consecutive bytes of key (see
// testfix.Leaks).
var leaks = testfix.Leaks

func TestLeaksDetector(t *testing.T) {
	for _, s := range []string{heldOutKey, jsonSlash(heldOutKey), uEscape(heldOutKey), pctLower(heldOutKey),
		htmlRef(heldOutKey), strings.ToUpper(heldOutKey), `"\\u004bx9\\/pQ"`, heldOutKey[10:16]} {
		assert.True(t, leaks("a "+s+" b", heldOutKey), s)
	}
	assert.False(t, leaks("a [REDACTED] "+heldOutKey[:5], heldOutKey))
}

// hostileAnswer is a raw HTTP/1.1 answer built around the key the request
// carried: any reason phrase, any header line, any body.
type hostileAnswer struct {
	status  int
	reason  string
	headers []string // whole header lines
	body    string
}

// hostileServer answers every request with answer(key), written raw on the
// hijacked connection, and counts the requests by method.
func hostileServer(t *testing.T, answer func(key string) hostileAnswer) (string, *sync.Map) {
	t.Helper()
	var counts sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := counts.LoadOrStore(r.Method, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		a := answer(r.Header.Get("X-Api-Key"))
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", a.status, a.reason)
		for _, h := range a.headers {
			buf.WriteString(h + "\r\n")
		}
		fmt.Fprintf(buf, "Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(a.body), a.body)
		_ = buf.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &counts
}

// TestHeldOutKeyInEverySink: a server that echoes the key (a held-out
// pattern: mixed case, '/' and '+') in the reason phrase, in header names
// and values, in error bodies and decoded fields, encoded the ways servers
// encode text and cut at the SDK's caps, gets no 6-byte piece of it into
// any text the SDK writes: the error, every APIError field, the Response
// (header names and values, request id), the debug log, and everything the
// Observer hooks receive (which is all otelcryptopay records). Each call is
// made as a read (GET, retried, its context ending during the backoff) and
// as a create (POST).
func TestHeldOutKeyInEverySink(t *testing.T) {
	pad := func(n int) string { return strings.Repeat("x", n) }
	errJSON := func(code, msg string) string { return `{"code":"` + code + `","message":"` + msg + `"}` }
	tests := []struct {
		name   string
		answer func(k string) hostileAnswer
	}{
		{"reason phrase", func(k string) hostileAnswer {
			return hostileAnswer{status: 503, reason: "Down for " + k, body: errJSON("down", "later")}
		}},
		{"reason phrase upper-case on a 429", func(k string) hostileAnswer {
			return hostileAnswer{status: 429, reason: strings.ToUpper(k), body: errJSON("slow", "down")}
		}},
		{"request id cut at 128, 18 bytes of the key before the cut", func(k string) hostileAnswer {
			return hostileAnswer{status: 404, reason: "Not Found", headers: []string{"X-Request-Id: " + pad(110) + k + pad(40)}, body: errJSON("nf", "no")}
		}},
		{"request id cut at 128, 12 bytes of the key before the cut", func(k string) hostileAnswer {
			return hostileAnswer{status: 503, reason: "x", headers: []string{"X-Request-Id: " + pad(116) + k}, body: errJSON("nf", "no")}
		}},
		{"header value upper-case", func(k string) hostileAnswer {
			return hostileAnswer{status: 400, reason: "Bad", headers: []string{"X-Echo: " + strings.ToUpper(k)}, body: errJSON("bad", "no")}
		}},
		{"header name percent-encoded", func(k string) hostileAnswer {
			return hostileAnswer{status: 400, reason: "Bad", headers: []string{"X-" + url.QueryEscape(k) + ": 1"}, body: errJSON("bad", "no")}
		}},
		{"header line that is not a header (transport error), upper-case", func(k string) hostileAnswer {
			return hostileAnswer{status: 200, reason: "OK", headers: []string{"X-" + strings.ToUpper(k) + ": 1"}, body: "{}"}
		}},
		{`message with \/ escapes`, func(k string) hostileAnswer {
			return hostileAnswer{status: 422, reason: "x", body: errJSON("bad", "key "+jsonSlash(k))}
		}},
		{`message cut at 512, \/ escaped key across the cut`, func(k string) hostileAnswer {
			return hostileAnswer{status: 422, reason: "x", body: errJSON("bad", pad(500)+jsonSlash(k)+pad(50))}
		}},
		{`code with \u escapes`, func(k string) hostileAnswer {
			return hostileAnswer{status: 409, reason: "x", body: errJSON(uEscape(k), "m")}
		}},
		{"code lower-case", func(k string) hostileAnswer {
			return hostileAnswer{status: 409, reason: "x", body: errJSON(strings.ToLower(k), "m")}
		}},
		{"text body percent-encoded", func(k string) hostileAnswer {
			return hostileAnswer{status: 502, reason: "x", body: "<html>upstream said key=" + pctLower(k) + "</html>"}
		}},
		{"body cut at 8 KiB across the key", func(k string) hostileAnswer {
			return hostileAnswer{status: 500, reason: "x", body: pad(maxErrorBody-20) + k + pad(100)}
		}},
		{"html references in a body", func(k string) hostileAnswer {
			return hostileAnswer{status: 500, reason: "x", body: "<p>" + htmlRef(k) + "</p>"}
		}},
		{"2xx amount upper-case (decode error)", func(k string) hostileAnswer {
			body := `[{"currency":"usdt","network":"tron","amount":"` + strings.ToUpper(k) + `"}]`
			return hostileAnswer{status: 200, reason: "OK", body: body}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, counts := hostileServer(t, tt.answer)
			var logs bytes.Buffer
			var mu sync.Mutex
			var seen []string
			var cancel context.CancelFunc
			note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
			obs := Observer{
				OnCallStart:    func(ctx context.Context, ci CallInfo) context.Context { note(fmt.Sprintf("%+v", ci)); return ctx },
				OnAttemptStart: func(ctx context.Context, ci CallInfo, n int) context.Context { note(fmt.Sprint(ci, n)); return ctx },
				OnAttemptEnd: func(_ context.Context, ci CallInfo, r AttemptResult) {
					note(fmt.Sprintf("%+v %v", r, r.Err))
					if r.Retry {
						cancel() // the call's context ends during the backoff
					}
				},
				OnCallEnd: func(_ context.Context, ci CallInfo, r CallResult) { note(fmt.Sprintf("%+v %v", r, r.Err)) },
			}
			c, err := NewClient(base, heldOutKey, WithLogger(debugLogger(&logs)), WithObserver(obs),
				WithRetryPolicy(RetryPolicy{MaxRetries: 1, MinWait: time.Hour, MaxWait: time.Hour}))
			require.NoError(t, err)

			calls := map[string]func(context.Context, ...Option) error{
				"GET": func(ctx context.Context, o ...Option) error { _, err := c.GetBalances(ctx, o...); return err },
				"POST": func(ctx context.Context, o ...Option) error {
					_, err := c.CreatePayout(ctx, validPayoutParams(), o...)
					return err
				},
			}
			for method, call := range calls {
				var ctx context.Context
				ctx, cancel = context.WithCancel(context.Background())
				var resp Response
				err := call(ctx, WithResponseInto(&resp))
				cancel()
				require.Error(t, err, method)
				sinks := map[string]string{
					"error":    err.Error() + "\n" + fmt.Sprintf("%+v", err),
					"Response": fmt.Sprintf("%#v", resp),
					"observer": strings.Join(seen, "\n"),
				}
				var api *APIError
				if errors.As(err, &api) {
					sinks["APIError"] = strings.Join([]string{api.Code, api.Message, api.RequestID, string(api.Body), fmt.Sprintf("%+v", *api)}, "\n")
				}
				for name, text := range sinks {
					assert.False(t, leaks(text, heldOutKey), "%s %s holds the key: %s", method, name, text)
				}
			}
			assert.False(t, leaks(logs.String(), heldOutKey), "the log holds the key: %s", logs.String())
			if n, ok := counts.Load("POST"); ok {
				assert.Equal(t, int64(1), n.(*atomic.Int64).Load(), "a create request is sent once")
			}
		})
	}
}
