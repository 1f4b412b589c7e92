// Package webhook receives the API's events for payments and payouts.
//
// The API does not say how it signs events, so the URL is signed instead:
// [URL] adds a token (an HMAC of the orderId under your secret) to your
// endpoint, and you pass the result as the payment's or payout's
// WebhookURL. A [Handler] ([NewHandler], configured by [Config]) mounted at
// that URL checks the token before it decodes anything, re-reads the
// event's object through Config.Client (so the callback gets the API's
// version, never the posted one: set it whenever money moves on the
// answer), wakes that Client's waits through cryptopay.Client.Notify, and
// delivers each (kind, id, status) to OnPayment or OnPayout once per
// [DedupeStore]. Make the callbacks idempotent: exactly-once is impossible
// over HTTP.
//
//	u, err := webhook.URL("https://shop.example/hooks/cryptopay", secret, "order-1042")
//	h, err := webhook.NewHandler(webhook.Config{
//		Secret:    secret,
//		Client:    client,
//		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error { return nil },
//	})
//
// The secret is its text (make one with "openssl rand -base64 32" and never
// base64-decode it), at least [MinSecretLen] bytes, and kept out of logs.
// [MemoryDedupeStore], the default, serves one process; replicas share a
// store (the redisstore and pgstore modules provide them). Config.OnEvent is
// told of every request the handler answers, for metrics
// (otelcryptopay.NewWebhookObserver). Every answer the handler gives:
// https://github.com/cryptopay/cryptopay-go/blob/main/docs/webhooks.md
package webhook
