package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"

	"github.com/cryptopay/cryptopay-go/webhook"
)

func TestWebhookURL(t *testing.T) {
	f := setup(t)
	want, err := webhook.URL("https://shop.example/wh", []byte(testSecret), "order-1")
	require.NoError(t, err)

	r := f.run("webhook", "url", "--order-id", "order-1", "--base", "https://shop.example/wh")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, want+"\n", r.stdout, "the bare URL even into a pipe, for $(...)")

	r = f.run("webhook", "url", "--order-id", "order-1", "--base", "https://shop.example/wh", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"orderId":"order-1","url":"`+want+`"}`, r.stdout)

	delete(f.env, envWebhookSecret)
	r = f.run("webhook", "url", "--order-id", "order-1", "--base", "https://shop.example/wh")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "no webhook secret: set CRYPTOPAY_WEBHOOK_SECRET or pass --secret-file")

	r = f.run("webhook", "url", "--order-id", "order-1", "--base", "https://shop.example/wh", "--secret-file", writeFile(t, "s", testSecret+"\n"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, want+"\n", r.stdout)

	for _, args := range [][]string{
		{"--base", "https://shop.example/wh"},
		{"--order-id", "o"},
		{"--order-id", "o", "--base", "ftp://x/"},
		{"--order-id", "o", "--base", "https://x/", "--secret-file", writeFile(t, "short", "short")},
	} {
		r = f.run(append([]string{"webhook", "url", "--secret-file", writeFile(t, "s", testSecret)}, args...)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.NotContains(t, r.stderr, testSecret)
	}
}

// receiver is a merchant's webhook endpoint built with the SDK.
type receiver struct {
	mu       sync.Mutex
	payments []cryptopay.PaymentStatus
	payouts  []cryptopay.PayoutStatus
	url      string
}

func newReceiver(t *testing.T, _ *fixture) *receiver { return newReceiverWith(t, []byte(testSecret)) }

// newReceiverWith is a receiver whose handler has the webhook secret secret.
func newReceiverWith(t *testing.T, secret []byte) *receiver {
	rc := &receiver{}
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.payments = append(rc.payments, p.Status)
			return nil
		},
		OnPayout: func(_ context.Context, p *cryptopay.Payout) error {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.payouts = append(rc.payouts, p.Status)
			return nil
		},
	})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	rc.url = ts.URL + "/webhooks"
	return rc
}

func TestWebhookSend(t *testing.T) {
	f := setup(t)
	rc := newReceiver(t, f)
	pay := f.createPayment("o-send", "5", "")
	po := f.createPayout("po-send", "2")

	r := f.run("webhook", "send", "--to", rc.url, "--payment", pay.ID)
	require.Equal(t, 0, r.code, r.stderr)
	var out sendOutput
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, sendOutput{Kind: "payment", ID: pay.ID, Status: "waiting", URL: rc.url, StatusCode: 200, Response: "ok"}, out)

	r = f.runCLI(terms{stdout: true}, "", "webhook", "send", "--to", rc.url, "--payment", pay.ID, "--status", "paid")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Event\s+payment `+pay.ID+` paid\n`, r.stdout)
	assert.Regexp(t, `Answer\s+200 OK\n`, r.stdout)

	r = f.run("webhook", "send", "--to", rc.url, "--payout", po.ID, "--status", "paid")
	require.Equal(t, 0, r.code, r.stderr)

	rc.mu.Lock()
	assert.Equal(t, []cryptopay.PaymentStatus{"waiting", "paid"}, rc.payments)
	assert.Equal(t, []cryptopay.PayoutStatus{"paid"}, rc.payouts)
	rc.mu.Unlock()

	// Another secret: the receiver refuses the event, exit 1.
	f.env[envWebhookSecret] = "another-secret-0123456789abcdef0"
	r = f.run("webhook", "send", "--to", rc.url, "--payment", pay.ID, "--status", "expired")
	assert.Equal(t, exitNo, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, http.StatusUnauthorized, out.StatusCode)
	assert.NotContains(t, r.stdout, "token=", "the tokened URL is not printed")
	f.env[envWebhookSecret] = testSecret
}

func TestWebhookSendRefusals(t *testing.T) {
	f := setup(t)
	rc := newReceiver(t, f)
	pay := f.createPayment("o-send", "5", "")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no object", []string{"--to", rc.url}, exitUsage, "exactly one of --payment ID and --payout ID"},
		{"both objects", []string{"--to", rc.url, "--payment", pay.ID, "--payout", "x"}, exitUsage, "exactly one"},
		{"no receiver", []string{"--payment", pay.ID}, exitUsage, "--to is required"},
		{"remote receiver", []string{"--to", "https://shop.example/wh", "--payment", pay.ID}, exitUsage, "not loopback; pass --allow-remote"},
		{"not http", []string{"--to", "file:///etc/passwd", "--payment", pay.ID}, exitUsage, "want an http or https URL"},
		{"unknown payment", []string{"--to", rc.url, "--payment", "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e"}, exitFailed, "404"},
		{"receiver with a token", []string{"--to", rc.url + "?token=abc", "--payment", pay.ID}, exitUsage, "--to: already has a token parameter"},
		{"receiver with a fragment", []string{"--to", rc.url + "#x", "--payment", pay.ID}, exitUsage, "--to: must not have a fragment"},
		{"receiver down", []string{"--to", "http://127.0.0.1:1/wh", "--payment", pay.ID}, exitFailed, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.run(append([]string{"webhook", "send"}, tt.args...)...)
			assert.Equal(t, tt.wantCode, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.wantErr)
			assert.NotContains(t, r.stderr, "token=")
		})
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	assert.Empty(t, rc.payments)
}

// TestWebhookSecretRecipe: a secret made by the documented recipe
// (`openssl rand -base64 32`, whose output is base64 text and a newline) is
// used as that text, never decoded, by every side: the CLI's 'webhook url'
// from the environment or from a file, the fake's delivery to that URL, and
// the SDK's handler given the same text.
func TestWebhookSecretRecipe(t *testing.T) {
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	printed := base64.StdEncoding.EncodeToString(raw) + "\n" // what the recipe prints
	secret := strings.TrimSpace(printed)                     // what $(...) puts in the variable

	f := setup(t)
	f.env[envWebhookSecret] = secret
	rc := newReceiverWith(t, []byte(secret))
	fromEnv := f.run("webhook", "url", "--order-id", "o-recipe", "--base", rc.url)
	require.Equal(t, 0, fromEnv.code, fromEnv.stderr)
	delete(f.env, envWebhookSecret)
	fromFile := f.run("webhook", "url", "--order-id", "o-recipe", "--base", rc.url, "--secret-file", writeFile(t, "secret", printed))
	require.Equal(t, 0, fromFile.code, fromFile.stderr)
	assert.Equal(t, fromEnv.stdout, fromFile.stdout, "the file's final newline is not part of the secret")

	p := f.createPayment("o-recipe", "10", strings.TrimSpace(fromEnv.stdout))
	require.NoError(t, f.srv.Pay(p.ID, decimal.RequireFromString("10")))
	deliveries, err := f.srv.WaitWebhooks(t.Context(), 1)
	require.NoError(t, err)
	require.Len(t, deliveries, 1)
	assert.Equal(t, http.StatusOK, deliveries[0].StatusCode, "the SDK handler accepted the fake's delivery")
	rc.mu.Lock()
	assert.Equal(t, []cryptopay.PaymentStatus{cryptopay.PaymentPaid}, rc.payments)
	rc.mu.Unlock()

	// The bytes the text decodes to are another secret: a receiver that
	// decodes it refuses the event.
	decoded := newReceiverWith(t, raw)
	r := f.run("webhook", "url", "--order-id", "o-recipe-2", "--base", decoded.url, "--secret-file", writeFile(t, "s2", printed))
	require.Equal(t, 0, r.code, r.stderr)
	p = f.createPayment("o-recipe-2", "1", strings.TrimSpace(r.stdout))
	require.NoError(t, f.srv.SetPaymentStatus(p.ID, cryptopay.PaymentExpired))
	deliveries, err = f.srv.WaitWebhooks(t.Context(), 2)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, deliveries[len(deliveries)-1].StatusCode)
}
