package webhook

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/testfix"
)

const (
	testKey       = "sk_test_4f9c2b7e1d0a"
	paymentID     = "3f1c2b8a-6d4e-4f7a-9b2c-1e5d8a7f6c30"
	waitPaymentID = "7b0d9a52-3c1e-4f8a-a6b4-2d9e0c5f1a73"
	waitPayoutID  = "po_8f2c61"
)

// setup is a Client of a local API whose routes the test adds to mux.
func setup(t *testing.T, opts ...cryptopay.Option) (*cryptopay.Client, *http.ServeMux) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	fast := cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond})
	c, err := cryptopay.NewClient(srv.URL, testKey, append([]cryptopay.Option{fast}, opts...)...)
	require.NoError(t, err)
	return c, mux
}

// The status bodies the local endpoints serve.
var (
	waitPaymentJSON = testfix.PaymentJSON
	waitPayoutJSON  = testfix.PayoutJSON
)

// step is one answer of a scripted status endpoint: an HTTP status other
// than 200, a dropped connection (err), or on 200 the object's status.
type step struct {
	status int
	value  string
	err    error
}

// script answers its steps' statuses in order, then the last one forever,
// and counts the reads.
type script struct {
	mu    sync.Mutex
	steps []step
	calls atomic.Int32
	body  func(status string) string
}

func (s *script) handle(w http.ResponseWriter, _ *http.Request) {
	n := int(s.calls.Add(1))
	s.mu.Lock()
	st := s.steps[min(n-1, len(s.steps)-1)]
	body := s.body
	s.mu.Unlock()
	switch {
	case st.err != nil:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	case st.status != 0:
		http.Error(w, `{"code":"e","message":"scripted"}`, st.status)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body(st.value))
	}
}

func paymentScript(steps ...step) *script {
	return &script{steps: steps, body: func(v string) string {
		return waitPaymentJSON(waitPaymentID, v, whOrder, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}}
}

func payoutScript(steps ...step) *script {
	return &script{steps: steps, body: func(v string) string { return waitPayoutJSON(waitPayoutID, v, whOrder) }}
}

// waitUntil polls cond (a count, never a clock) until it holds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30 s")
		}
	}
}
