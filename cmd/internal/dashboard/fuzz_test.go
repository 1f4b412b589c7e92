package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cryptopay/cryptopay-go/cmd/internal/dashboard"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// FuzzActions: whatever an action's path and body, the dashboard answers
// with a 2xx or 4xx, never a panic or a 5xx.
func FuzzActions(f *testing.F) {
	for _, seed := range []struct{ path, body string }{
		{"payments/P/pay", `{"how":"full"}`},
		{"payments/P/pay", `{"how":"over"}`},
		{"payments/P/expire", ``},
		{"payouts/Q/status", `{"status":"paid"}`},
		{"clock/advance", `{"duration":"-5h"}`},
		{"clock/advance", `{"duration":"9999999h"}`},
		{"faults", `{"route":"POST /v1/payout","preset":"drop","times":1e9}`},
		{"faults/clear", `[]`},
		{"payments/%2e%2e/pay", `{"how":null}`},
	} {
		f.Add(seed.path, seed.body)
	}
	srv := cryptopaytest.NewServer()
	f.Cleanup(srv.Close)
	h := dashboard.Handler(srv)
	f.Fuzz(func(t *testing.T, path, body string) {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/dashboard/"+path, strings.NewReader(body))
		if err != nil {
			return // not a URL a client could send
		}
		req.Header.Set("Origin", "http://127.0.0.1:8080")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST /dashboard/%s %q: %d %s", path, body, rec.Code, rec.Body)
		}
	})
}
