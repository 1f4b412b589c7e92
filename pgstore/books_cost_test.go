package pgstore_test

import (
	"context"
	"flag"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// booksN is the size of BenchmarkBooksPayouts' account (BENCHMARKS.md
// records 100,000).
var booksN = flag.Int("books.n", 10_000, "payouts in BenchmarkBooksPayouts")

// seedBooks gives the rig n payouts, paid at the fake and paid in the
// queue (sent once), each matching its intent: orderIds "bk-0" to
// "bk-<n-1>".
func seedBooks(t testing.TB, r *qrig, q *pgstore.Queue, n int) {
	t.Helper()
	require.NoError(t, r.fake.SeedPayouts(n, "bk-", time.Millisecond))
	var wallet string
	for it, err := range r.fake.Client().ScanPayouts(context.Background(), cryptopay.ScanPayoutsParams{}) {
		require.NoError(t, err)
		wallet = it.WalletAddress
		break
	}
	for _, p := range r.fake.Payouts() {
		require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutProcessing))
		require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutPaid))
	}
	_, err := r.pool.Exec(context.Background(), `INSERT INTO `+q.Table()+` (order_id, wallet_address, network_fee_by_user, amount,
    currency, network, customer_id, customer_ip, additional_data, webhook_url, state, attempts, attempted_at)
SELECT 'bk-' || i, $1, false, 1, 'usdt', 'tron', 'seed', '192.0.2.1', '', '', 'paid', 1, now() - interval '1 hour'
FROM generate_series(0, $2::int - 1) AS i`, wallet, n)
	require.NoError(t, err)
}

// heapWatch measures the live heap every 20 ms (a collection, then
// HeapAlloc: garbage not yet collected is not counted, so the fake's own
// page encodings do not inflate it) until stop, which returns the most
// it grew above where it was when the watch began, in bytes. The fake's
// copy of the account is there before the watch begins.
func heapWatch() (stop func() uint64) {
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := live()
	var peak atomic.Uint64
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if h := live(); h > base && h-base > peak.Load() {
				peak.Store(h - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-exited; return peak.Load() }
}

// checkBooks runs the books check on the rig's queue, counting items.
func checkBooks(t testing.TB, r *qrig, q *pgstore.Queue) (*pgstore.BooksSummary, int) {
	t.Helper()
	b, err := pgstore.NewBooks(pgstore.BooksConfig{Client: r.fake.Client(), Queue: q})
	require.NoError(t, err)
	n := 0
	sum, err := b.Check(context.Background(), func(pgstore.BooksItem) error { n++; return nil })
	require.NoError(t, err)
	return sum, n
}

// TestBooksPayoutsCost: 20,000 payouts matched, every one, in the list's
// pages and nothing more, with the heap growing far less than the 64 MiB
// budget (BenchmarkBooksPayouts records 100,000).
func TestBooksPayoutsCost(t *testing.T) {
	const n = 20_000
	r := newQRig(t)
	q := r.queue(t)
	seedBooks(t, r, q, n)
	lists := r.fake.Requests(cryptopaytest.RouteListPayouts)
	stop := heapWatch()
	sum, items := checkBooks(t, r, q)
	grew := stop()
	assert.Equal(t, n, items)
	assert.Equal(t, map[pgstore.BooksClass]int{pgstore.BooksMatched: n}, sum.Counts["payouts"])
	assert.Equal(t, n/100+1, r.fake.Requests(cryptopaytest.RouteListPayouts)-lists, "every page once, and the far end")
	assert.Less(t, grew, uint64(64<<20), "heap grew by %d bytes", grew)
	t.Logf("heap grew by %.1f MiB for %d payouts", float64(grew)/(1<<20), n)
}

// BenchmarkBooksPayouts: -books.n payouts at the fake, paid, each with its
// intent in the queue, matched by one books check per iteration; reports
// the payouts matched per second, the heap's growth during a check (the
// fake's own copy of the account is there before it starts) and the list
// requests per check.
func BenchmarkBooksPayouts(b *testing.B) {
	r := newQRig(b)
	q, err := pgstore.NewQueue(context.Background(), r.config(r.fake.Client()))
	require.NoError(b, err)
	seedBooks(b, r, q, *booksN)
	var peak uint64
	lists := r.fake.Requests(cryptopaytest.RouteListPayouts)
	b.ResetTimer()
	for b.Loop() {
		stop := heapWatch()
		sum, items := checkBooks(b, r, q)
		peak = max(peak, stop())
		if items != *booksN || sum.Counts["payouts"][pgstore.BooksMatched] != *booksN {
			b.Fatalf("%d items, %v", items, sum.Counts)
		}
	}
	b.ReportMetric(float64(*booksN)*float64(b.N)/b.Elapsed().Seconds(), "payouts/s")
	b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(*booksN), "payouts")
	b.ReportMetric(float64(r.fake.Requests(cryptopaytest.RouteListPayouts)-lists)/float64(b.N), "requests/check")
}
