package pgstore_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// A webhook refused for a wrong secret shows in the handler's log, in its
// counts, and in the Health of the tracker and the queue it reports to:
// in this process and in another one reading the same database (a second
// Tracker or Queue on the table), until the refusal is older than
// WebhookRefusalWindow. Before, a wrong secret left no trace but the
// sender's 401s.
func TestWebhookRefusalsInHealth(t *testing.T) {
	for _, kind := range []string{"tracker", "queue"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var health, other func(context.Context) (pgstore.Health, error)
			var record func(context.Context, webhook.Refusal)
			var flush func() error
			var table string
			var pool *pgxpool.Pool
			switch kind {
			case "tracker":
				r := newTRig(t)
				tr, tr2 := r.start(t, 0), r.start(t, 0)
				pool = r.pool
				health, other, record, table = tr.Health, tr2.Health, tr.WebhookRefused, tr.Table()
				flush = func() error { return pgstore.FlushWebhookRefusals(ctx, tr, nil) }
			case "queue":
				r := newQRig(t)
				q, q2 := r.queue(t), r.queue(t)
				pool = r.pool
				health, other, record, table = q.Health, q2.Health, q.WebhookRefused, q.Table()
				flush = func() error { return pgstore.FlushWebhookRefusals(ctx, nil, q) }
			}
			h, err := health(ctx)
			require.NoError(t, err)
			assert.True(t, h.OK())
			assert.NotContains(t, h.String(), "webhooks refused", "nothing said while none was refused")

			var logs logLines
			handler, err := webhook.NewHandler(webhook.Config{
				Secret:    []byte("the-shop-secret-0123456789abcdef"),
				OnPayment: func(context.Context, *cryptopay.Payment) error { return nil },
				Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
				OnRefused: record,
			})
			require.NoError(t, err)
			rotated, err := webhook.URL("https://shop.example/hook", []byte("a-rotated-secret-0123456789abcdef"), "ord-1")
			require.NoError(t, err)
			u := strings.TrimPrefix(rotated, "https://shop.example")
			body := `{"paymentId":"00000000-0000-4000-8000-000000000001","orderId":"ord-1","status":"paid"}`
			for range 3 {
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, u, strings.NewReader(body)))
				require.Equal(t, http.StatusUnauthorized, w.Code)
			}
			assert.Equal(t, 1, logs.count("cryptopay webhook: refused a delivery"), logs.buf.String())
			assert.Equal(t, 1, logs.count("reason=token"))
			assert.Equal(t, int64(3), handler.Refusals().Count)
			require.NoError(t, flush())

			for name, read := range map[string]func(context.Context) (pgstore.Health, error){"same": health, "another": other} {
				h, err := read(ctx)
				require.NoError(t, err, name)
				assert.Equal(t, int64(3), h.WebhookRefusals.Count, name)
				assert.Equal(t, webhook.RefusedToken, h.WebhookRefusals.Last, name)
				assert.Equal(t, http.StatusUnauthorized, h.WebhookRefusals.LastStatus, name)
				assert.Equal(t, map[webhook.RefusalReason]int64{webhook.RefusedToken: 3}, h.WebhookRefusals.ByReason, name)
				assert.True(t, h.WebhookRefusing, name)
				assert.False(t, h.OK(), name)
				assert.Contains(t, h.String(), "webhooks refused: 3 since ", name)
				assert.Contains(t, h.String(), "last reason token (401)", name)
			}

			// More refusals add to the counts; one that is older than the
			// window is shown but no longer makes the health fail.
			record(ctx, webhook.Refusal{Reason: webhook.RefusedMethod, StatusCode: http.StatusMethodNotAllowed})
			require.NoError(t, flush())
			h, err = health(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(4), h.WebhookRefusals.Count)
			_, err = pool.Exec(ctx, "UPDATE "+refusalTable(table)+" SET last_at = now() - interval '2 hours', first_at = now() - interval '3 hours'")
			require.NoError(t, err)
			h, err = health(ctx)
			require.NoError(t, err)
			assert.False(t, h.WebhookRefusing)
			assert.True(t, h.OK())
			assert.Contains(t, h.String(), "webhooks refused: 4 since ")
			assert.Contains(t, h.String(), "(none in the last 1h0m0s)")
		})
	}
}

// refusalTable is the refusals' table beside table (both quoted).
func refusalTable(table string) string {
	return strings.TrimSuffix(table, `"`) + `_webhook_refusals"`
}
