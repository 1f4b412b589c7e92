package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWebhookExample(t *testing.T) {
	for _, secret := range []string{"", "a-stable-secret-from-the-environment"} {
		t.Run("secret="+secret, func(t *testing.T) {
			t.Setenv("CRYPTOPAY_BASE_URL", "")
			t.Setenv("CRYPTOPAY_API_KEY", "")
			t.Setenv("CRYPTOPAY_WEBHOOK_SECRET", secret)
			t.Setenv("CRYPTOPAY_WEBHOOK_PUBLIC_URL", "")
			t.Setenv("CRYPTOPAY_WEBHOOK_ADDR", "")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, run(ctx, &out))
			s := out.String()
			assert.Contains(t, s, "Webhook endpoint: http://127.0.0.1:")
			assert.Contains(t, s, "A forged \"paid\" event without a token is answered 401")
			assert.Contains(t, s, "WaitForPayment returned paid after")
			assert.Contains(t, s, "is paid (paid 25.75 usdt, as read from the API)")
			assert.Contains(t, s, "can be fulfilled.")
			assert.NotContains(t, s, "token=", "the signed URL is never printed")
		})
	}
}

func TestWebhookExampleConfigErrors(t *testing.T) {
	t.Run("short secret", func(t *testing.T) {
		t.Setenv("CRYPTOPAY_BASE_URL", "")
		t.Setenv("CRYPTOPAY_API_KEY", "")
		t.Setenv("CRYPTOPAY_WEBHOOK_SECRET", "short")
		assert.ErrorContains(t, run(context.Background(), &bytes.Buffer{}), "at least 16 bytes")
	})
	t.Run("real API without a public URL", func(t *testing.T) {
		t.Setenv("CRYPTOPAY_BASE_URL", "http://127.0.0.1:1")
		t.Setenv("CRYPTOPAY_API_KEY", "key")
		t.Setenv("CRYPTOPAY_WEBHOOK_SECRET", "")
		t.Setenv("CRYPTOPAY_WEBHOOK_PUBLIC_URL", "")
		assert.ErrorContains(t, run(context.Background(), &bytes.Buffer{}), "CRYPTOPAY_WEBHOOK_PUBLIC_URL")
	})
}

// The example's server sets every timeout and caps the headers, so a slow
// or idle sender cannot hold a connection without bound.
func TestWebhookExampleServerTimeouts(t *testing.T) {
	srv := newServer(http.NotFoundHandler())
	for name, v := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		assert.Positive(t, v, name)
	}
	assert.Positive(t, srv.MaxHeaderBytes)
}
