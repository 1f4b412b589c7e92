package cryptopay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go/internal/testfix"
	"github.com/cryptopay/cryptopay-go/internal/toolnotice"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	whOrder       = "order-1"
	waitPaymentID = "7b0d9a52-3c1e-4f8a-a6b4-2d9e0c5f1a73"
	waitPayoutID  = "po_8f2c61"
)

// The status bodies the local endpoints serve.
var (
	waitPaymentJSON = testfix.PaymentJSON
	waitPayoutJSON  = testfix.PayoutJSON
)

// step is one answer of a scripted status endpoint.
type step struct {
	status int    // HTTP status; 0 means 200
	value  string // the object's status on 200
	err    error  // non-nil: the connection is dropped instead of answering
}

// script answers the steps in order and repeats the last one forever. It
// counts every request (retries inside the request path included).
type script struct {
	mu    sync.Mutex
	steps []step
	calls atomic.Int32
	body  func(status string) string
	after func(n int) // called with the request number, before answering
}

func (s *script) handle(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1))
	if s.after != nil {
		s.after(n)
	}
	s.mu.Lock()
	st := s.steps[min(n-1, len(s.steps)-1)]
	s.mu.Unlock()
	if st.err != nil { // a connection dropped without an answer
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	code := st.status
	if code == 0 {
		code = http.StatusOK
	}
	body := `{"code":"e","message":"scripted"}`
	if code == http.StatusOK {
		body = s.body(st.value)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func paymentScript(steps ...step) *script {
	return &script{steps: steps, body: func(v string) string {
		return waitPaymentJSON(waitPaymentID, v, "order-1", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}}
}

func payoutScript(steps ...step) *script {
	return &script{steps: steps, body: func(v string) string { return waitPayoutJSON(waitPayoutID, v, "order-1") }}
}

func statuses(vs ...string) []step {
	out := make([]step, len(vs))
	for i, v := range vs {
		out[i] = step{value: v}
	}
	return out
}

func TestWaitForPaymentEndsOnTerminal(t *testing.T) {
	t.Parallel()
	for _, final := range []PaymentStatus{PaymentPaid, PaymentPaidOver, PaymentPaidPartial, PaymentFailed, PaymentRejected, PaymentExpired} {
		t.Run(string(final), func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			s := paymentScript(statuses("waiting", "waiting", "confirming", "locked", "weird_new_status", string(final), "waiting")...)
			mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)

			p, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, final, p.Status)
			assert.Equal(t, int32(6), s.calls.Load(), "one read per poll, none after the terminal status")
		})
	}
}

func TestWaitForPayoutEndsOnTerminal(t *testing.T) {
	t.Parallel()
	for _, final := range []PayoutStatus{PayoutPaid, PayoutFailed, PayoutCancelled} {
		t.Run(string(final), func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			s := payoutScript(statuses("created", "review", "processing", "confirming", string(final))...)
			mux.HandleFunc("GET /v1/payout/"+waitPayoutID+"/status", s.handle)

			p, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, final, p.Status)
			assert.Equal(t, int32(5), s.calls.Load())
		})
	}
}

func TestWaitStopOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opt   WaitForPaymentParams
		want  PaymentStatus
		calls int32
	}{
		{"StopOn locked", WaitForPaymentParams{StopOn: []PaymentStatus{PaymentLocked}}, PaymentLocked, 3},
		{"StopOn several", WaitForPaymentParams{StopOn: []PaymentStatus{PaymentConfirming, PaymentLocked}}, PaymentConfirming, 2},
		{"StopWhen NeedsAction", WaitForPaymentParams{StopWhen: func(p *Payment) bool { return p.Status.NeedsAction() }}, PaymentLocked, 3},
		{"StopOn nothing", WaitForPaymentParams{StopOn: []PaymentStatus{}}, PaymentPaid, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			s := paymentScript(statuses("waiting", "confirming", "locked", "paid")...)
			mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)

			params := tt.opt
			params.ID, params.PollInterval, params.MaxPollInterval = waitPaymentID, time.Millisecond, 2*time.Millisecond
			p, err := c.WaitForPayment(context.Background(), params)
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Status)
			assert.Equal(t, tt.calls, s.calls.Load())
		})
	}
}

func TestWaitPayoutStopOn(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := payoutScript(statuses("created", "review", "paid")...)
	mux.HandleFunc("GET /v1/payout/"+waitPayoutID+"/status", s.handle)
	p, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond, StopOn: []PayoutStatus{PayoutReview}})
	require.NoError(t, err)
	assert.Equal(t, PayoutReview, p.Status)
	assert.False(t, p.Status.IsTerminal(), "a StopOn result is not necessarily terminal")
}

func TestWaitOnStatusChange(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := paymentScript(statuses("waiting", "waiting", "confirming", "confirming", "confirming", "paid")...)
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)

	var seen []PaymentStatus
	p, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond, OnStatusChange: func(p *Payment) {
		seen = append(seen, p.Status)
		p.Status = "mutated by the callback" // its own copy
	}})
	require.NoError(t, err)
	assert.Equal(t, []PaymentStatus{PaymentWaiting, PaymentConfirming, PaymentPaid}, seen)
	assert.Equal(t, PaymentPaid, p.Status, "the callback's changes do not leak into the result")
}

func TestWaitOptionsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(c *Client) error
	}{
		// A payout option given to WaitForPayment (or the reverse) does not
		// compile: TestWaitOptionsCheckedAtCompileTime.
		{"refused Option", func(c *Client) error {
			_, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID}, WithHeader("x-api-key", "other"))
			return err
		}},
		{"client-only Option", func(c *Client) error {
			_, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID}, WithLogger(nil))
			return err
		}},
		{"both ID and OrderID", func(c *Client) error {
			_, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID, OrderID: "order-1"})
			return err
		}},
		{"negative interval", func(c *Client) error {
			_, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: -time.Second})
			return err
		}},
		{"negative max interval", func(c *Client) error {
			_, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, MaxPollInterval: -time.Second})
			return err
		}},
		{"payment id not a UUID", func(c *Client) error {
			_, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: "../admin"})
			return err
		}},
		{"empty payout id", func(c *Client) error {
			_, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: ""})
			return err
		}},
		{"nil ctx", func(c *Client) error {
			//lint:ignore SA1012 a nil ctx must be refused, not crash
			_, err := c.WaitForPayment(nil, WaitForPaymentParams{ID: waitPaymentID})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			var sent atomic.Int32
			mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { sent.Add(1) })
			err := tt.run(c)
			require.ErrorIs(t, err, ErrInvalidParams)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Zero(t, sent.Load(), "nothing sent")
		})
	}
}

func TestWaitAbsorbsTransientErrors(t *testing.T) {
	t.Parallel()
	// fastRetry makes one GetPayment 4 attempts; 10 failures need 3 polls.
	tests := []struct {
		name string
		fail step
	}{
		{"500", step{status: http.StatusInternalServerError}},
		{"502", step{status: http.StatusBadGateway}},
		{"503", step{status: http.StatusServiceUnavailable}},
		{"504", step{status: http.StatusGatewayTimeout}},
		{"429", step{status: http.StatusTooManyRequests}},
		{"408", step{status: http.StatusRequestTimeout}},
		{"transport", step{err: errors.New("connection reset by peer")}},
		{"unreadable 2xx", step{value: "\x00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			steps := []step{{value: "waiting"}}
			for range 10 {
				steps = append(steps, tt.fail)
			}
			steps = append(steps, step{value: "paid"})
			s := paymentScript(steps...)
			if tt.name == "unreadable 2xx" {
				body := s.body
				s.body = func(v string) string {
					if v == "\x00" {
						return `{"paymentId":`
					}
					return body(v)
				}
			}
			mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)

			p, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, PaymentPaid, p.Status)
			assert.Equal(t, int32(12), s.calls.Load())
		})
	}
}

func TestWaitReturnsPermanentErrorsAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code     int
		sentinel error
	}{
		{http.StatusUnauthorized, ErrUnauthorized},
		{http.StatusForbidden, ErrUnauthorized},
		{http.StatusNotFound, ErrNotFound},
		{http.StatusBadRequest, ErrInvalidRequest},
		{http.StatusUnprocessableEntity, ErrInvalidRequest},
		{http.StatusGone, nil},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			s := payoutScript(step{value: "created"}, step{status: tt.code})
			mux.HandleFunc("GET /v1/payout/"+waitPayoutID+"/status", s.handle)

			p, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
			require.Error(t, err)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.code, apiErr.StatusCode)
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			}
			require.NotNil(t, p, "the last object read comes back with the error")
			assert.Equal(t, PayoutCreated, p.Status)
			assert.Equal(t, int32(2), s.calls.Load(), "no retry of a permanent error")
		})
	}
}

func TestWaitContextEnds(t *testing.T) {
	t.Parallel()
	t.Run("cancel while sleeping", func(t *testing.T) {
		t.Parallel()
		c, mux := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		s := paymentScript(step{value: "waiting"})
		s.after = func(n int) {
			if n == 3 {
				cancel()
			}
		}
		mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
		p, err := c.WaitForPayment(ctx, WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
		require.ErrorIs(t, err, context.Canceled)
		require.NotNil(t, p)
		assert.Equal(t, PaymentWaiting, p.Status)
		assert.LessOrEqual(t, s.calls.Load(), int32(3))
	})
	t.Run("long interval is cut short", func(t *testing.T) {
		t.Parallel()
		c, mux := setup(t)
		s := paymentScript(step{value: "confirming"})
		mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
		// The context ends once the first read is in (not after a fixed
		// delay, which a slow first read could outlast).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p, err := c.WaitForPayment(ctx, WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour, OnStatusChange: func(*Payment) { cancel() }})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, PaymentConfirming, p.Status)
		assert.Equal(t, int32(1), s.calls.Load())
	})
	t.Run("names the last transient failure", func(t *testing.T) {
		t.Parallel()
		c, mux := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		s := paymentScript(step{status: http.StatusServiceUnavailable})
		s.after = func(n int) {
			if n == 8 { // second poll's last attempt
				cancel()
			}
		}
		mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
		p, err := c.WaitForPayment(ctx, WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
		require.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, p, "nothing was read")
		assert.Contains(t, err.Error(), "503")
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		c, mux := setup(t)
		var sent atomic.Int32
		mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { sent.Add(1) })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.WaitForPayout(ctx, WaitForPayoutParams{ID: waitPayoutID})
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, sent.Load())
	})
}

func TestWaitBackoff(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{1, time.Millisecond, 2 * time.Second, 30 * time.Second} {
		for range 200 {
			w := jitterWait(d)
			assert.LessOrEqual(t, w, d)
			assert.GreaterOrEqual(t, w, d-d/4)
		}
	}
	var got []time.Duration
	d := DefaultPollInterval
	for range 10 {
		got = append(got, d)
		d = nextInterval(d, DefaultMaxPollInterval)
	}
	assert.Equal(t, []time.Duration{2 * time.Second, 3 * time.Second, 4500 * time.Millisecond, 6750 * time.Millisecond,
		10125 * time.Millisecond, 15187500 * time.Microsecond, 22781250 * time.Microsecond, 30 * time.Second, 30 * time.Second, 30 * time.Second}, got)
}

// waitUntil polls cond every millisecond (it is not a timing assertion: the
// test fails only if cond never becomes true within a generous bound).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitWokenByNotify(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := paymentScript(step{value: "waiting"})
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)

	type result struct {
		p   *Payment
		err error
	}
	done := make(chan result, 1)
	var changes []PaymentStatus
	go func() {
		p, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Hour, OnStatusChange: func(p *Payment) { changes = append(changes, p.Status) }})
		done <- result{p, err}
	}()
	waitUntil(t, func() bool { return s.calls.Load() == 1 })
	require.Equal(t, 1, c.waiters.count(kindPayment, waitPaymentID))

	// Upper case id: payment ids are UUIDs and match case-insensitively.
	obj := &Payment{ID: waitPaymentID, Status: PaymentConfirming, UpdatedAt: time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)}
	assert.Equal(t, 1, c.waiters.notify(kindPayment, "7B0D9A52-3C1E-4F8A-A6B4-2D9E0C5F1A73", func() any { cp := *obj; return &cp }))
	// An older object than the one the wait has (a reordered event) is ignored.
	stale := &Payment{ID: waitPaymentID, Status: PaymentWaiting, UpdatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.waiters.notify(kindPayment, waitPaymentID, func() any { return stale })
	paid := &Payment{ID: waitPaymentID, Status: PaymentPaid, UpdatedAt: time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC)}
	c.waiters.notify(kindPayment, waitPaymentID, func() any { return paid })

	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, PaymentPaid, r.p.Status)
	assert.Equal(t, int32(1), s.calls.Load(), "the wake-up carries the API's object: no extra read")
	assert.Equal(t, 0, c.waiters.count(kindPayment, waitPaymentID), "unregistered when done")
	// waiting (polled), then perhaps confirming (it may be overwritten by
	// the next notify before the wait takes it), then paid; never the
	// stale waiting again.
	require.NotEmpty(t, changes)
	assert.Equal(t, PaymentWaiting, changes[0])
	assert.NotContains(t, changes[1:], PaymentWaiting)
	assert.Equal(t, PaymentPaid, changes[len(changes)-1])
}

func TestWaitWithoutWakeup(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := paymentScript(step{value: "waiting"}, step{value: "paid"})
	s.after = func(n int) {
		if n == 1 {
			// Registered before the first read, unless disabled.
			assert.Zero(t, c.waiters.count(kindPayment, waitPaymentID))
		}
	}
	mux.HandleFunc("GET /v1/payment/"+waitPaymentID+"/status", s.handle)
	_, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond, NoWebhookWakeup: true})
	require.NoError(t, err)
}

func TestWaitManyWaitersOneEvent(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	s := payoutScript(step{value: "processing"})
	mux.HandleFunc("GET /v1/payout/"+waitPayoutID+"/status", s.handle)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			p, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: waitPayoutID, PollInterval: time.Hour})
			if err == nil && p.Status != PayoutPaid {
				err = fmt.Errorf("status %s", p.Status)
			}
			errs <- err
		})
	}
	waitUntil(t, func() bool { return s.calls.Load() == n })
	assert.Equal(t, n, c.waiters.notify(kindPayout, waitPayoutID, func() any { return &Payout{ID: waitPayoutID, Status: PayoutPaid} }))
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Zero(t, c.waiters.count(kindPayout, waitPayoutID))
}

// TestWaitOptionsCheckedAtCompileTime builds small programs against this
// module: every option compiles with the call of its kind, and a payment
// option given to WaitForPayout (or the reverse) is a type error.
func TestWaitOptionsCheckedAtCompileTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		toolnotice.Missing(t, "the go command is not on PATH")
	}
	repo, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module snippets\n\ngo 1.26\n\n"+
		"require github.com/cryptopay/cryptopay-go v0.0.0\n\nreplace github.com/cryptopay/cryptopay-go => "+repo+"\n"), 0o644))

	const prelude = "package main\n\nimport (\n\t\"context\"\n\n\t\"github.com/cryptopay/cryptopay-go\"\n)\n\n" +
		"func main() {\n\tvar c *cryptopay.Client\n\tctx := context.Background()\n\t_ = ctx\n"
	snippets := map[string]struct {
		call string
		ok   bool
	}{
		"good": {`
	_, _ = c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "id", PollInterval: 1, NoWebhookWakeup: true,
		StopOn: []cryptopay.PaymentStatus{cryptopay.PaymentLocked}, StopWhen: func(*cryptopay.Payment) bool { return false },
		OnStatusChange: func(*cryptopay.Payment) {}}, cryptopay.Option(nil))
	_, _ = c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{ID: "id", MaxPollInterval: 1, StopOn: []cryptopay.PayoutStatus{cryptopay.PayoutReview},
		StopWhen: func(*cryptopay.Payout) bool { return false }, OnStatusChange: func(*cryptopay.Payout) {}})
	opts := []cryptopay.Option{cryptopay.WithTimeout(1)}
	_, _ = c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "id"}, opts...)
`, true},
		"payoutstatusonpayment": {`_, _ = c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "id", StopOn: []cryptopay.PaymentStatus{cryptopay.PayoutReview}})`, false},
		"paymentstatusonpayout": {`_, _ = c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{ID: "id", StopOn: []cryptopay.PayoutStatus{cryptopay.PaymentLocked}})`, false},
		"paymentstopwhenpayout": {`_, _ = c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{ID: "id", StopWhen: func(*cryptopay.Payment) bool { return true }})`, false},
		"payoutchangeonpayment": {`_, _ = c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "id", OnStatusChange: func(*cryptopay.Payout) {}})`, false},
		"paymentchangeonpayout": {`_, _ = c.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{ID: "id", OnStatusChange: func(*cryptopay.Payment) {}})`, false},
		"payoutstopwhenpayment": {`_, _ = c.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: "id", StopWhen: func(*cryptopay.Payout) bool { return true }})`, false},
	}
	for name, s := range snippets {
		pkg := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(pkg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), []byte(prelude+s.call+"\n}\n"), 0o644))
	}
	cmd := exec.Command(goBin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, _ := cmd.CombinedOutput()
	t.Logf("go vet:\n%s", out)
	for name, s := range snippets {
		// The type checker names each failing program's file.
		failed := strings.Contains(string(out), name+"/main.go")
		if s.ok {
			assert.False(t, failed, "%s should compile", name)
			continue
		}
		assert.True(t, failed, "%s should not compile", name)
	}
	assert.Equal(t, len(snippets)-1, strings.Count(string(out), "cannot use"), "each refusal is a type error")
}

// TestWaitReadsAreBounded starts more waits than the Client's wait-read
// bound, with a status endpoint that holds every read until released: no
// more reads than the bound are ever in flight, the others queue, and all
// waits finish. Other calls are not held back by the bound.
func TestWaitReadsAreBounded(t *testing.T) {
	t.Parallel()
	const bound, waits = 3, 10
	var inFlight, maxInFlight, reads atomic.Int32
	release := make(chan struct{})
	c, mux := setup(t, WithMaxConcurrentWaitReads(bound))
	mux.HandleFunc("GET /v1/payout/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); cur > m && !maxInFlight.CompareAndSwap(m, cur); m = maxInFlight.Load() {
		}
		reads.Add(1)
		if r.PathValue("id") != "direct" {
			<-release
		}
		_, _ = io.WriteString(w, waitPayoutJSON(r.PathValue("id"), "paid", "order-1"))
	})
	var wg sync.WaitGroup
	for i := range waits {
		wg.Go(func() {
			_, err := c.WaitForPayout(context.Background(), WaitForPayoutParams{ID: fmt.Sprint("po_", i)})
			assert.NoError(t, err)
		})
	}
	waitUntil(t, func() bool { return reads.Load() == bound })
	_, err := c.GetPayout(context.Background(), "direct")
	require.NoError(t, err, "a plain call does not queue behind the waits")
	close(release)
	wg.Wait()
	assert.Equal(t, int32(waits+1), reads.Load())
	assert.Equal(t, int32(bound+1), maxInFlight.Load(), "the bound, plus the plain call")

	for _, n := range []int{0, -1} {
		_, err := NewClient(testBase, testKey, WithMaxConcurrentWaitReads(n))
		require.ErrorIs(t, err, ErrInvalidParams)
	}
}

// TestWaitAppliesRequestOptionsToEachRead gives a wait per-call options:
// every status read carries the header, and WithResponseInto describes the
// last read.
func TestWaitAppliesRequestOptionsToEachRead(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	var reads atomic.Int32
	var headers sync.Map
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		n := reads.Add(1)
		headers.Store(n, r.Header.Get("X-Trace"))
		st := "waiting"
		if n == 3 {
			st = "paid"
		}
		w.Header().Set("X-Request-Id", fmt.Sprint("req-", n))
		_, _ = io.WriteString(w, waitPaymentJSON(waitPaymentID, st, whOrder, time.Now()))
	})
	var resp Response
	p, err := c.WaitForPayment(context.Background(), WaitForPaymentParams{ID: waitPaymentID, PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond}, WithHeader("X-Trace", "order-1"), WithResponseInto(&resp))
	require.NoError(t, err)
	assert.Equal(t, PaymentPaid, p.Status)
	require.Equal(t, int32(3), reads.Load())
	for i := int32(1); i <= 3; i++ {
		h, _ := headers.Load(i)
		assert.Equal(t, "order-1", h, "read %d", i)
	}
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "req-3", resp.RequestID, "the last read")
}
