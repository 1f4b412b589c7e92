package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// The health summary at the top of every page is the queue's and the
// tracker's own (Queue.Health, Tracker.Health): due, overdue and failing
// open intents, those that need a person, and the commonest failure,
// escaped; final intents do not count.
func TestHealth(t *testing.T) {
	r := newRig(t)
	r.enqueue(t, payout(1, "10"), payout(2, "10"), payout(3, "10"), payout(4, "10"), payout(5, "500"), payout(6, "10"))
	const failing = ", fail_class = 'server', fail_text = '502 Bad Gateway \u202e', failed_at = now(), fail_count = 1"
	for _, u := range []struct{ id, set string }{
		{"wd-000001", "next_at = now() - interval '1 second'" + failing},
		{"wd-000002", "next_at = now() - interval '1 second'"},
		{"wd-000003", "state = 'parked', next_at = now() - interval '10 minutes'" + failing},
		{"wd-000004", "state = 'created', next_at = now() + interval '1 hour', fail_class = 'unreachable', fail_text = 'x', failed_at = now(), fail_count = 3"},
		{"wd-000006", "state = 'paid'" + failing},
	} {
		_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET "+u.set+" WHERE order_id = $1", u.id)
		require.NoError(t, err)
	}
	_, page := r.do(t, "GET", "/payouts", viewer, nil)
	for id, want := range map[string]string{"h-due": "3", "h-overdue": "1", "h-failing": "3", "h-person": "2", "h-payments": "0"} {
		assert.Contains(t, page, `<b id="`+id+`">`+want+`</b>`, id)
	}
	assert.Contains(t, page, `Commonest payout failure (2): server <code>502 Bad Gateway \u202e</code>`)
	assert.Contains(t, page, `<p class="common" id="h-idle">no worker has claimed work for 10m`, "the parked intent, due 10 minutes ago")
	assert.Contains(t, page, `: 1 payout overdue: are the workers running (Run)?</p>`)
}

// The webhook deliveries the shop's handler refused (recorded by the
// tracker's and the queue's WebhookRefused, from any process) show at the
// top of every page, once when both report the same; a single item reads
// in the singular.
func TestHealthWebhookRefusals(t *testing.T) {
	r := newRig(t)
	r.enqueue(t, payout(1, "500"))
	_, page := r.do(t, "GET", "/payouts", viewer, nil)
	assert.NotContains(t, page, "webhooks refused")
	assert.Contains(t, page, `<b id="h-person">1</b> payout needs a person`)
	assert.Contains(t, page, `<b id="h-payments">0</b> payments need action`)

	ctx := context.Background()
	ref := webhook.Refusal{Reason: webhook.RefusedToken, StatusCode: http.StatusUnauthorized}
	r.tr.WebhookRefused(ctx, ref)
	r.q.WebhookRefused(ctx, ref)
	require.Eventually(t, func() bool { // written in the background, within a second
		_, page = r.do(t, "GET", "/payouts", viewer, nil)
		return strings.Count(page, "webhooks refused: 1 since ") == 1
	}, 30*time.Second, 20*time.Millisecond)
	assert.Contains(t, page, `<p class="common bad" id="h-refused">webhooks refused: 1 since `)
	assert.Contains(t, page, "last reason token (401)")
}
