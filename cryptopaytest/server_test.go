package cryptopaytest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestRequestIDsAndCounts(t *testing.T) {
	s := newServer(t)
	seen := map[string]bool{}
	for range 3 {
		r := call(t, s, "GET", "/v1/balance", "")
		id := r.Header.Get("X-Request-Id")
		assert.False(t, seen[id], "request ids are unique")
		seen[id] = true
	}
	call(t, s, "GET", "/v1/balance", "", "x-api-key", "")
	call(t, s, "GET", "/v1/currencies", "")
	assert.Equal(t, 4, s.Requests(cryptopaytest.RouteBalance), "refused requests count too")
	assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCurrencies))
	assert.Equal(t, 0, s.Requests(cryptopaytest.RouteCreatePayout))
	assert.Equal(t, 0, s.Requests("GET /nope"))
	assert.GreaterOrEqual(t, s.ConnectionsOpened(), int64(1))
	assert.Len(t, cryptopaytest.Routes(), 7)
}

func TestHandlerInProcess(t *testing.T) {
	s := newServer(t)
	h := s.Handler()
	req, _ := http.NewRequest("GET", "/v1/currencies", nil)
	req.Header.Set("x-api-key", s.APIKey)
	rec := newRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.code)
	assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCurrencies))
}

// recorder is a minimal ResponseWriter (httptest's is not needed here).
type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func newRecorder() *recorder                    { return &recorder{h: http.Header{}, code: 200} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(c int)           { r.code = c }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// TestAPIRefusesRebinding: the API refuses a request for a host name that
// is not loopback, as a DNS-rebinding page's would be, on s.URL and through
// Handler; the SDK's own requests (Host 127.0.0.1:port) and in-process
// requests without a host are served.
func TestAPIRefusesRebinding(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name, host string
		refused    bool
	}{
		{"rebinding name", "rebind.evil.example:" + s.URL[strings.LastIndex(s.URL, ":")+1:], true},
		{"rebinding name without port", "evil.example", true},
		{"numeric non-loopback", "192.0.2.1", true},
		{"loopback", "", false},
		{"localhost", "LOCALHOST:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", s.URL+"/v1/payment", strings.NewReader(paymentBody))
			require.NoError(t, err)
			if tt.host != "" {
				req.Host = tt.host
			}
			req.Header.Set("x-api-key", s.APIKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.refused, resp.StatusCode == http.StatusForbidden, resp.Status)

			in, err := http.NewRequest("GET", "/v1/balance", nil)
			require.NoError(t, err)
			in.Host = tt.host
			in.Header.Set("x-api-key", s.APIKey)
			rec := newRecorder()
			s.Handler().ServeHTTP(rec, in)
			assert.Equal(t, tt.refused, rec.code == http.StatusForbidden, "through Handler: %d", rec.code)
		})
	}
	assert.Equal(t, 2, s.PaymentCount(), "only the loopback requests created a payment")
}
