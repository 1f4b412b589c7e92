package console_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// fill loads 100,000 intents (1% parked, 1% needing approval, the rest
// paid) and 100,000 tracked payments (1% open, 0.5% needing action) into
// the rig's tables, as one statement each, and analyzes them.
func (r *rig) fill(b *testing.B, n int) {
	ctx := context.Background()
	_, err := r.pool.Exec(ctx, `INSERT INTO `+r.q.Table()+` (order_id, wallet_address, network_fee_by_user, amount, currency, network,
    customer_id, customer_ip, additional_data, webhook_url, state, last_error, approvals_needed, enqueued_by)
SELECT 'wd-' || lpad(i::text, 7, '0'), 'TW' || i, false, 500, 'usdt', 'tron', 'c', '203.0.113.7', '', '',
    CASE WHEN i % 100 = 0 THEN 'parked' WHEN i % 100 = 1 THEN 'needs_approval' ELSE 'paid' END,
    CASE WHEN i % 100 = 0 THEN 'create payout: 502' ELSE '' END, 2, 'carol'
FROM generate_series(1, $1::int) AS i`, n)
	require.NoError(b, err)
	_, err = r.pool.Exec(ctx, `INSERT INTO `+r.tr.Table()+` (order_id, payment_id, state, needs_action, anomaly)
SELECT 'ord-' || lpad(i::text, 7, '0'), 'p' || i, CASE WHEN i % 100 = 0 THEN 'open' ELSE 'closed' END,
    i % 200 = 0, CASE WHEN i % 1000 = 0 THEN 'odd' ELSE '' END
FROM generate_series(1, $1::int) AS i`, n)
	require.NoError(b, err)
	for _, t := range []string{r.q.Table(), r.tr.Table()} {
		_, err = r.pool.Exec(ctx, "ANALYZE "+t)
		require.NoError(b, err)
	}
}

// BenchmarkListPages times the console's list pages (HTML, health summary
// included, through the HTTP server) over 100,000 intents and 100,000
// tracked payments, and reports the 95th percentile of each.
func BenchmarkListPages(b *testing.B) {
	r := newRig(b)
	r.fill(b, 100_000)
	for _, path := range []string{
		"/payouts",
		"/payouts?after=wd-0050000",
		"/payouts?state=parked",
		"/payouts?state=needs_approval&after=wd-0090000",
		"/payouts?currency=usdt&network=tron&held=1",
		"/payouts?q=TW77777",
		"/payouts?currency=zzz",                                                    // a currency no intent has
		"/payouts?since=" + time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02"), // enqueued from tomorrow: none
		"/payout?id=wd-0077700",
		"/payments",
		"/payments?needs_action=1",
		"/payments?state=open&after=ord-0050000",
		"/payments?anomaly=1",
	} {
		b.Run(path, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				code, _ := r.do(b, "GET", path, viewer, nil)
				took = append(took, time.Since(start))
				require.Equal(b, http.StatusOK, code)
			}
			reportP95(b, took)
		})
	}
	// The summary every page shows, alone: how much of a page it is.
	for name, health := range map[string]func(context.Context) (pgstore.Health, error){"health/payouts": r.q.Health, "health/payments": r.tr.Health} {
		b.Run(name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				_, err := health(context.Background())
				took = append(took, time.Since(start))
				require.NoError(b, err)
			}
			reportP95(b, took)
		})
	}
}

// reportP95 reports the 95th percentile of took, in milliseconds.
func reportP95(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkBulkApprove500 times one confirmed bulk approval of 500
// intents (the second approver's: every one is queued), through the HTTP
// server: the transactions of pgstore.BulkBatch, every approval in the
// history.
func BenchmarkBulkApprove500(b *testing.B) {
	r := newRig(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		cur := "u" + strconv.Itoa(i) // each round its own intents
		_, err := r.pool.Exec(context.Background(), `INSERT INTO `+r.q.Table()+` (order_id, wallet_address, network_fee_by_user, amount, currency, network,
    customer_id, customer_ip, additional_data, webhook_url, state, approvals_needed, enqueued_by, approved_by)
SELECT $1 || '-' || i, 'TW' || i, false, 500, $1, 'tron', 'c', '203.0.113.7', '', '', 'needs_approval', 2, 'carol', '{alice}'
FROM generate_series(1, 500) AS i`, cur)
		require.NoError(b, err)
		form := r.bulkForm(b, bob, "action=approve&currency="+cur)
		form.Set("count", "500")
		b.StartTimer()
		code, page := r.do(b, "POST", "/payouts/bulk", bob, form)
		require.Equal(b, http.StatusOK, code, page)
		require.Contains(b, page, "500 done, 500 now queued")
	}
}
