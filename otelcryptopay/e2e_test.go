package otelcryptopay_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/otelcryptopay"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// secretKey is the fake's API key; it must appear in no telemetry.
const secretKey = "sk_test_otel_must_never_leak_0123456789"

// e2e is a fake server and a Client observed by the fixture's Observer.
type e2e struct {
	*fixture
	srv    *cryptopaytest.Server
	client *cryptopay.Client
}

func setupE2E(t *testing.T) *e2e {
	t.Helper()
	f := setup(t)
	srv := cryptopaytest.NewServer(cryptopaytest.WithAPIKey(secretKey))
	t.Cleanup(srv.Close)
	client := srv.Client(cryptopay.WithObserver(f.obs),
		cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond}))
	return &e2e{fixture: f, srv: srv, client: client}
}

func paymentParams(orderID string) cryptopay.CreatePaymentParams {
	return cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString("12.5"), Currency: "usdt", Network: "tron",
		CustomerID: "cust-otel", CustomerIP: "192.0.2.1", OrderID: orderID}
}

func payoutParams(orderID string) cryptopay.CreatePayoutParams {
	return cryptopay.CreatePayoutParams{WalletAddress: "TFW7XG4zpNjKhxrsDFhoSEQqkyLUqv1RQN", Amount: decimal.RequireFromString("3"),
		Currency: "usdt", Network: "tron", CustomerID: "cust-otel", CustomerIP: "192.0.2.1", OrderID: orderID}
}

// callAndAttempts returns the call span of route (the last one to end) and
// the attempt spans under it, checking the links between them.
func (e *e2e) callAndAttempts(t *testing.T, route string) (tracetestSpan, []tracetestSpan) {
	t.Helper()
	var calls, attempts []tracetestSpan
	for _, s := range e.byName(route) {
		if s.SpanKind == trace.SpanKindInternal {
			calls = append(calls, s)
		} else {
			attempts = append(attempts, s)
		}
	}
	require.NotEmpty(t, calls, "a call span for %s", route)
	call := calls[len(calls)-1]
	var mine []tracetestSpan
	for _, a := range attempts {
		if a.Parent.SpanID() == call.SpanContext.SpanID() {
			assert.Equal(t, call.SpanContext.TraceID(), a.SpanContext.TraceID())
			mine = append(mine, a)
		}
	}
	return call, mine
}

func TestE2E(t *testing.T) {
	tests := []struct {
		name     string
		route    cryptopaytest.Route
		fault    *cryptopaytest.Fault
		run      func(t *testing.T, e *e2e) error
		attempts int
		statuses []int // per attempt; 0: no response
		errType  string
		unknown  bool
	}{
		{"create payment", cryptopaytest.RouteCreatePayment, nil,
			func(t *testing.T, e *e2e) error {
				_, err := e.client.CreatePayment(context.Background(), paymentParams("order-otel-1"))
				return err
			}, 1, []int{201}, "", false},
		{"get payment after two 503s", cryptopaytest.RouteGetPayment, &cryptopaytest.Fault{Times: 2, Status: 503},
			func(t *testing.T, e *e2e) error {
				p, err := e.client.CreatePayment(context.Background(), paymentParams("order-otel-2"))
				require.NoError(t, err)
				_, err = e.client.GetPayment(context.Background(), p.ID)
				return err
			}, 3, []int{503, 503, 200}, "", false},
		{"get payout after a timed-out attempt", cryptopaytest.RouteGetPayout, &cryptopaytest.Fault{Delay: time.Hour},
			func(t *testing.T, e *e2e) error {
				p, err := e.client.CreatePayout(context.Background(), payoutParams("order-otel-3"))
				require.NoError(t, err)
				_, err = e.client.GetPayout(context.Background(), p.ID, cryptopay.WithTimeout(2*time.Second)) // the answered second attempt must fit in it too
				return err
			}, 2, []int{0, 200}, "", false},
		{"payout not found", cryptopaytest.RouteGetPayout, nil,
			func(t *testing.T, e *e2e) error {
				_, err := e.client.GetPayout(context.Background(), "po_unknown_secret_42")
				return err
			}, 1, []int{404}, "404", false},
		{"payout processed then dropped", cryptopaytest.RouteCreatePayout, &cryptopaytest.Fault{Process: true, Drop: true},
			func(t *testing.T, e *e2e) error {
				_, err := e.client.CreatePayout(context.Background(), payoutParams("order-otel-5"))
				return err
			}, 1, []int{0}, "outcome_unknown", true},
		{"payout processed then 500", cryptopaytest.RouteCreatePayout, &cryptopaytest.Fault{Process: true, Status: 500},
			func(t *testing.T, e *e2e) error {
				_, err := e.client.CreatePayout(context.Background(), payoutParams("order-otel-6"))
				return err
			}, 1, []int{500}, "outcome_unknown", true},
		{"list payouts", cryptopaytest.RouteListPayouts, nil,
			func(t *testing.T, e *e2e) error {
				_, err := e.client.ListPayouts(context.Background(), cryptopay.ListPayoutsParams{Limit: 5})
				return err
			}, 1, []int{200}, "", false},
		{"balances after a 429", cryptopaytest.RouteBalance, &cryptopaytest.Fault{Status: 429, RetryAfter: "0"},
			func(t *testing.T, e *e2e) error {
				_, err := e.client.GetBalances(context.Background())
				return err
			}, 2, []int{429, 200}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setupE2E(t)
			if tt.fault != nil {
				e.srv.InjectFault(tt.route, *tt.fault)
			}
			err := tt.run(t, e)
			if tt.errType == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Equal(t, tt.unknown, errors.Is(err, cryptopay.ErrOutcomeUnknown))
			}

			call, attempts := e.callAndAttempts(t, string(tt.route))
			require.Len(t, attempts, tt.attempts, "one child span per attempt")
			assert.Equal(t, tt.attempts, e.srv.Requests(tt.route), "as many attempt spans as requests the server saw")
			assert.Contains(t, call.Attributes, otelcryptopay.AttemptsKey.Int(tt.attempts))
			assert.Contains(t, call.Attributes, otelcryptopay.OutcomeUnknownKey.Bool(tt.unknown))
			assert.Contains(t, call.Attributes, otelcryptopay.RouteKey.String(string(tt.route)))
			for i, a := range attempts {
				assert.Contains(t, a.Attributes, otelcryptopay.AttemptKey.Int(i+1))
				assert.Contains(t, a.Attributes, otelcryptopay.RetryKey.Bool(i < tt.attempts-1), "attempt %d", i+1)
				if i < tt.attempts-1 || tt.statuses[i] == 0 {
					reason, ok := attr(a, otelcryptopay.RetryReasonKey)
					assert.True(t, ok && reason.AsString() != "", "attempt %d says why it was or was not retried", i+1)
				}
				if tt.statuses[i] == 0 || tt.statuses[i] >= 400 {
					_, ok := attr(a, semconv.ErrorTypeKey)
					assert.True(t, ok, "failed attempt %d has an error.type", i+1)
				}
				code, has := attr(a, semconv.HTTPResponseStatusCodeKey)
				if tt.statuses[i] == 0 {
					assert.False(t, has, "attempt %d got no response", i+1)
				} else {
					assert.EqualValues(t, tt.statuses[i], code.AsInt64(), "attempt %d", i+1)
				}
			}
			if tt.errType == "" {
				assert.Equal(t, codes.Unset, call.Status.Code)
			} else {
				assert.Equal(t, codes.Error, call.Status.Code)
				assert.Contains(t, call.Attributes, semconv.ErrorTypeKey.String(tt.errType))
			}
			routeAttr := otelcryptopay.RouteKey.String(string(tt.route))
			assert.EqualValues(t, 1, e.histogramCount(t, "cryptopay.client.call.duration", routeAttr))
			assert.EqualValues(t, tt.attempts-1, e.counter(t, "cryptopay.client.retries", routeAttr))
			wantUnknown := 0
			if tt.unknown {
				wantUnknown = 1
			}
			assert.EqualValues(t, wantUnknown, e.counter(t, "cryptopay.client.outcome_unknown", routeAttr))
			e.assertNoIDs(t)
		})
	}
}

// assertNoIDs checks that the key and every id and orderId the fake holds
// appear nowhere in the telemetry.
func (e *e2e) assertNoIDs(t *testing.T) {
	t.Helper()
	secrets := []string{secretKey, "po_unknown_secret_42"}
	for _, p := range e.srv.Payments() {
		secrets = append(secrets, p.ID, p.OrderID)
	}
	for _, p := range e.srv.Payouts() {
		secrets = append(secrets, p.ID, p.OrderID)
	}
	assertNoSecret(t, e.fixture, secrets...)
}

// TestE2EWebhookEvents: the fake delivers a payment's webhook to the
// merchant's handler, which reports to the webhook observer; a forged event and
// a repeated one are counted by their results too.
func TestE2EWebhookEvents(t *testing.T) {
	e := setupE2E(t)
	secret := []byte("webhook-secret-for-otel-tests-0123")
	var mu sync.Mutex
	var seen []cryptopay.PaymentStatus
	h, err := webhook.NewHandler(webhook.Config{Secret: secret, Client: e.client, OnEvent: e.hook,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, p.Status)
			return nil
		}})
	require.NoError(t, err)
	recv := httptest.NewServer(h)
	t.Cleanup(recv.Close)

	params := paymentParams("order-otel-hook")
	params.WebhookURL, err = webhook.URL(recv.URL, secret, params.OrderID)
	require.NoError(t, err)
	p, err := e.client.CreatePayment(context.Background(), params)
	require.NoError(t, err)
	require.NoError(t, e.srv.Pay(p.ID, p.PayAmount))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.srv.WaitWebhooksIdle(ctx))

	paid, err := e.client.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	again, err := cryptopaytest.NewWebhookRequest(recv.URL, secret, paid, cryptopay.PaymentPaid)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, send(t, again))
	forged, err := cryptopaytest.NewWebhookRequest(recv.URL, []byte("not-the-merchant-secret-0000000"), paid, cryptopay.PaymentPaid)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, send(t, forged))

	mu.Lock()
	assert.Equal(t, []cryptopay.PaymentStatus{cryptopay.PaymentPaid}, seen, "delivered once")
	mu.Unlock()
	result := otelcryptopay.WebhookResultKey
	assert.EqualValues(t, 3, e.counter(t, "cryptopay.webhook.events"))
	assert.EqualValues(t, 1, e.counter(t, "cryptopay.webhook.events", result.String("delivered"), otelcryptopay.WebhookKindKey.String("payment")))
	assert.EqualValues(t, 1, e.counter(t, "cryptopay.webhook.events", result.String("duplicate")))
	assert.EqualValues(t, 1, e.counter(t, "cryptopay.webhook.events", result.String("rejected"), semconv.HTTPResponseStatusCodeKey.Int(401)))
	e.assertNoIDs(t)
}

func send(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookHandlerWithoutClient: a handler given the observer directly
// (webhook.Config.OnEvent, no Client) reports its requests too.
func TestWebhookHandlerWithoutClient(t *testing.T) {
	f := setup(t)
	secret := []byte("webhook-secret-for-otel-tests-0123")
	h, err := webhook.NewHandler(webhook.Config{Secret: secret, OnEvent: f.hook,
		OnPayout: func(context.Context, *cryptopay.Payout) error { return errors.New("database down") }})
	require.NoError(t, err)
	po := &cryptopay.Payout{ID: "po_hidden_1", OrderID: "order-hidden-1", Status: cryptopay.PayoutPaid,
		Amount: decimal.RequireFromString("1"), Currency: "usdt", Network: "tron"}
	req, err := cryptopaytest.NewWebhookRequest("http://127.0.0.1/hooks", secret, po, cryptopay.PayoutPaid)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusInternalServerError, rec.Code, "a failing callback asks for redelivery")
	assert.EqualValues(t, 1, f.counter(t, "cryptopay.webhook.events", otelcryptopay.WebhookResultKey.String("failed"),
		otelcryptopay.WebhookKindKey.String("payout"), semconv.HTTPResponseStatusCodeKey.Int(500)))
	assertNoSecret(t, f, "po_hidden_1", "order-hidden-1")
}
