package console_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The health summary counts due, overdue and failing open intents, the
// held and parked ones, and names the commonest last error; final
// intents do not count.
func TestHealth(t *testing.T) {
	r := newRig(t)
	r.enqueue(t, payout(1, "10"), payout(2, "10"), payout(3, "10"), payout(4, "10"), payout(5, "500"), payout(6, "10"))
	for _, u := range []struct{ id, set string }{
		{"wd-000001", "next_at = now() - interval '1 second', last_error = 'create payout: 502 Bad Gateway'"},
		{"wd-000002", "next_at = now() - interval '1 second'"},
		{"wd-000003", "state = 'parked', next_at = now() - interval '10 minutes', last_error = 'create payout: 502 Bad Gateway'"},
		{"wd-000004", "state = 'created', next_at = now() + interval '1 hour', last_error = 'read payout: timeout'"},
		{"wd-000006", "state = 'paid', last_error = 'old'"},
	} {
		_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET "+u.set+" WHERE order_id = $1", u.id)
		require.NoError(t, err)
	}
	_, page := r.do(t, "GET", "/payouts", viewer, nil)
	for id, want := range map[string]string{"h-due": "3", "h-overdue": "1", "h-failing": "3", "h-approval": "1", "h-parked": "1", "h-payments": "0"} {
		assert.Contains(t, page, `<b id="`+id+`">`+want+`</b>`, id)
	}
	assert.Contains(t, page, "Commonest last error (2): <code>create payout: 502 Bad Gateway</code>")
}
