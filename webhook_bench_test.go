package cryptopay_test

// Webhook handler benchmarks: the SDK's webhook.Handler beside a
// hand-written floor (see floorWebhook), per event, with and without a
// re-read through the API. Fairness rules as in bench_test.go; the shared
// helpers (bench server, benchRound, reportCPU) live there, the floor's
// client and types in internal/benchfloor.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/benchfloor"
	"github.com/cryptopay/cryptopay-go/webhook"
)

var benchSecret = []byte("bench-webhook-secret-0123456789ab")

// benchNoDedupe claims every event, so each one runs the whole path up to
// the callback (the floor does not dedupe either).
type benchNoDedupe struct{}

func (benchNoDedupe) Claim(context.Context, string) (webhook.DedupeClaim, error) {
	return webhook.DedupeClaimed, nil
}
func (benchNoDedupe) Complete(context.Context, string) error { return nil }
func (benchNoDedupe) Release(context.Context, string) error  { return nil }

// floorWebhook is the hand-written handler: POST only, body capped and read,
// decoded once into the exact-money struct, the orderId's HMAC token checked
// in constant time, with fc the payment re-read through the API (GET status,
// decoded, its orderId compared), the callback called, 200.
func floorWebhook(secret []byte, fc *benchfloor.Client, on func(context.Context, *benchfloor.Payment) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		token := r.URL.Query().Get("token")
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		p := new(benchfloor.Payment)
		if err := json.Unmarshal(body, p); err != nil || p.ID == "" || p.OrderID == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		got, err := base64.RawURLEncoding.DecodeString(token)
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("cryptopay-go webhook v1\x00"))
		m.Write([]byte(p.OrderID))
		if err != nil || !hmac.Equal(got, m.Sum(nil)) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if fc != nil {
			api := new(benchfloor.Payment)
			if err := fc.Call(r.Context(), http.MethodGet, "/v1/payment/"+url.PathEscape(p.ID)+"/status", nil, api); err != nil {
				http.Error(w, "retry later", http.StatusServiceUnavailable)
				return
			}
			if api.OrderID != p.OrderID {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			p = api
		}
		if err := on(r.Context(), p); err != nil {
			http.Error(w, "callback failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n")
	})
}

// benchWriter is a ResponseWriter that keeps only the status.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkWebhookPayment is the handler without a Client: the callback
// gets the posted payment. In process, no network.
func BenchmarkWebhookPayment(b *testing.B) { benchWebhook(b, false) }

// BenchmarkWebhookPaymentReread is the handler with a Client: every event's
// payment is re-read through the API (a GET to the loopback bench server),
// beside a floor that does the same with its hand-written client.
func BenchmarkWebhookPaymentReread(b *testing.B) { benchWebhook(b, true) }

func benchWebhook(b *testing.B, reread bool) {
	hookURL, err := webhook.URL("https://shop.example/hook", benchSecret, "order-1001")
	if err != nil {
		b.Fatal(err)
	}
	target := strings.TrimPrefix(hookURL, "https://shop.example")
	var delivered atomic.Int64
	cfg := webhook.Config{
		Secret: benchSecret,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			delivered.Add(1)
			return nil
		},
		Dedupe: benchNoDedupe{},
	}
	var fc *benchfloor.Client
	if reread {
		s := newBenchServer(b)
		cfg.Client, fc = newBenchSDK(b, s), newFloorClient(b, s)
	}
	sdk, err := webhook.NewHandler(cfg)
	if err != nil {
		b.Fatal(err)
	}
	floor := floorWebhook(benchSecret, fc, func(context.Context, *benchfloor.Payment) error {
		delivered.Add(1)
		return nil
	})
	handlers := []struct {
		name string
		h    http.Handler
	}{{"sdk", sdk}, {"floor", floor}}
	if benchRound.Add(1)%2 == 0 {
		handlers[0], handlers[1] = handlers[1], handlers[0]
	}
	for _, mode := range []string{"seq", "par64"} {
		callers := 1
		if mode == "par64" {
			callers = benchCallers
		}
		for _, v := range handlers {
			b.Run(mode+"/"+v.name, func(b *testing.B) {
				delivered.Store(0)
				benchHandler(b, v.h, target, callers)
				if got := delivered.Load(); got != int64(b.N) {
					b.Fatalf("delivered %d of %d events", got, b.N)
				}
			})
		}
	}
}

// benchHandler serves b.N events through h, each caller reusing its own
// request and writer.
func benchHandler(b *testing.B, h http.Handler, target string, callers int) {
	serve := func(n func() bool) {
		rd := bytes.NewReader(benchPaymentJSON)
		req := httptest.NewRequest(http.MethodPost, target, nil)
		req.Header.Set("Content-Type", "application/json")
		w := &benchWriter{h: http.Header{}}
		for n() {
			rd.Reset(benchPaymentJSON)
			req.Body = io.NopCloser(rd)
			req.ContentLength = int64(len(benchPaymentJSON))
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK {
				b.Errorf("status %d", w.code)
				return
			}
		}
	}
	b.ReportAllocs()
	cpu0, cpuOK := benchfloor.ProcessCPU()
	b.ResetTimer()
	if callers == 1 {
		i := 0
		serve(func() bool { i++; return i <= b.N })
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		n := int64(b.N)
		for range callers {
			wg.Go(func() { serve(func() bool { return next.Add(1) <= n }) })
		}
		wg.Wait()
	}
	b.StopTimer()
	reportCPU(b, cpu0, cpuOK)
}
