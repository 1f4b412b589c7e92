package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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

func newReceiver(t *testing.T, f *fixture) *receiver {
	rc := &receiver{}
	h, err := webhook.NewHandler(webhook.Config{
		Secret: []byte(testSecret),
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
