package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// booksRun is one books check's output: the items in report order, by
// orderId, and the summary.
type booksRun struct {
	items []pgstore.BooksItem
	by    map[string]pgstore.BooksItem
	sum   *pgstore.BooksSummary
}

func runBooks(t testing.TB, cfg pgstore.BooksConfig, edit ...func(*pgstore.Books)) booksRun {
	t.Helper()
	b, err := pgstore.NewBooks(cfg)
	require.NoError(t, err)
	for _, e := range edit {
		e(b)
	}
	out := booksRun{by: make(map[string]pgstore.BooksItem)}
	out.sum, err = b.Check(context.Background(), func(it pgstore.BooksItem) error {
		out.items = append(out.items, it)
		key := it.OrderID
		if it.Section == "balances" {
			key = it.Currency + "/" + it.Network
		}
		out.by[it.Section+":"+key] = it
		return nil
	})
	require.NoError(t, err)
	return out
}

// booksWant is an orderId's expected class and delta.
type booksWant struct {
	order string
	class pgstore.BooksClass
	delta string
}

// assertClasses checks each wanted orderId of the section: in the report,
// in its class, with its exact delta.
func (r booksRun) assertClasses(t *testing.T, section string, want []booksWant) {
	t.Helper()
	for _, w := range want {
		it, ok := r.by[section+":"+w.order]
		if assert.True(t, ok, "%s not in the report", w.order) {
			assert.Equal(t, w.class, it.Class, "%s: %s", w.order, it.Detail)
			assert.Equal(t, w.delta, it.Delta.String(), w.order)
		}
	}
}

// settled waits until every intent's next look is in the past (the
// workers are stopped): past it, a status the queue has not recorded is
// drift.
func (r *qrig) settled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var due bool
		require.NoError(t, r.pool.QueryRow(context.Background(),
			"SELECT bool_and(next_at < now() - interval '10 milliseconds' AND updated_at < now() - interval '10 milliseconds') FROM "+r.table).Scan(&due))
		if due {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("intents not settled within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// payoutsUpTo returns payoutParams(0) to payoutParams(n-1).
func payoutsUpTo(n int) []cryptopay.CreatePayoutParams {
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = payoutParams(i)
	}
	return ps
}

// TestBooksPayoutDrifts: each payout drift the fake can make is found,
// in its class, with its exact delta; the double payment is the first
// line; what is matched or not sent yet is listed too.
func TestBooksPayoutDrifts(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	ps := payoutsUpTo(6)
	r.enqueue(t, q, ps[:5]...)
	stop := run(t, q)
	waitFor(t, q, "5 created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 5 })
	stop()
	for _, id := range []int{0, 1, 2, 4} { // paid at the provider; 3 stays created
		pid := r.fake.PayoutIDsWithOrderID(ps[id].OrderID)[0]
		require.NoError(t, r.fake.SetPayoutStatus(pid, cryptopay.PayoutProcessing))
		require.NoError(t, r.fake.SetPayoutStatus(pid, cryptopay.PayoutPaid))
	}
	stop = run(t, q)
	waitFor(t, q, "4 paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 4 })
	stop()
	r.enqueue(t, q, ps[5]) // queued, never sent

	_, err := r.fake.DuplicatePayout(r.fake.PayoutIDsWithOrderID("wd-000000")[0])
	require.NoError(t, err)
	require.NoError(t, r.fake.SetPayoutAmount(r.fake.PayoutIDsWithOrderID("wd-000001")[0], decimal.RequireFromString("10.2501")))
	require.NoError(t, r.fake.LosePayout(r.fake.PayoutIDsWithOrderID("wd-000002")[0]))
	pid3 := r.fake.PayoutIDsWithOrderID("wd-000003")[0]
	require.NoError(t, r.fake.SetPayoutStatus(pid3, cryptopay.PayoutProcessing))
	require.NoError(t, r.fake.SetPayoutStatus(pid3, cryptopay.PayoutPaid))
	outside := payoutParams(99)
	outside.OrderID, outside.Amount = "outside-1", decimal.RequireFromString("3.3")
	_, err = r.fake.Client().CreatePayout(context.Background(), outside)
	require.NoError(t, err)
	r.settled(t)

	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Millisecond})
	tests := []booksWant{
		{"wd-000000", pgstore.BooksDoublePayment, "10.25"},
		{"wd-000001", pgstore.BooksPayoutDiffers, "0.0001"},
		{"wd-000002", pgstore.BooksMissing, "-10.25"},
		{"wd-000003", pgstore.BooksStatusDiffers, "10.25"},
		{"wd-000004", pgstore.BooksMatched, "0"},
		{"wd-000005", pgstore.BooksInFlight, "-10.25"},
		{"outside-1", pgstore.BooksProviderOnly, "3.3"},
	}
	res.assertClasses(t, "payouts", tests)
	require.Len(t, res.items, len(tests), "every orderId once")
	assert.Equal(t, pgstore.BooksDoublePayment, res.items[0].Class, "the double payment is the first line")
	assert.Equal(t, 2, res.items[0].Payouts)
	assert.Equal(t, "20.5", res.items[0].Theirs.Decimal.String())
	assert.Equal(t, 5, res.sum.Drift)
	assert.Equal(t, "13.5501", res.sum.DriftAmount["usdt/tron"].String(), "10.25 + 0.0001 - 10.25 + 10.25 + 3.3")
	assert.Empty(t, res.sum.Unfinished)
	assert.False(t, res.sum.Clean())
}

// TestBooksPayoutsCleanAndCounted: a queue whose payouts all went
// through ties exactly, at the cost of the list's pages alone.
func TestBooksPayoutsCleanAndCounted(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.enqueue(t, q, payoutsUpTo(250)...)
	r.payAll(t)
	stop := run(t, q)
	waitFor(t, q, "250 paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 250 })
	stop()
	lists, reads := r.fake.Requests(cryptopaytest.RouteListPayouts), r.fake.Requests(cryptopaytest.RouteGetPayment)
	var progress int
	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q,
		Progress: func(_ string, done, _ int) { progress = done }})
	assert.Equal(t, 3, r.fake.Requests(cryptopaytest.RouteListPayouts)-lists, "the first page, the far end, the middle")
	assert.Equal(t, reads, r.fake.Requests(cryptopaytest.RouteGetPayment), "no payment read")
	assert.Equal(t, 250, progress)
	assert.Len(t, res.items, 250)
	assert.Equal(t, map[pgstore.BooksClass]int{pgstore.BooksMatched: 250}, res.sum.Counts["payouts"])
	assert.True(t, res.sum.Clean())
}

// TestBooksListChangedUnderUs: a list that cannot be evidence leaves the
// payouts unfinished, with no item (a part proves nothing), and the
// payments are still checked.
func TestBooksListChangedUnderUs(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.enqueue(t, q, payoutParams(1))
	stop := run(t, q)
	waitFor(t, q, "created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 1 })
	stop()
	r.fake.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 200, Body: `{"payout":[],"count":7}`, Times: 10})
	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q})
	assert.Empty(t, res.items)
	assert.Contains(t, res.sum.Unfinished["payouts"], "the payout list")
	assert.False(t, res.sum.Clean())
	assert.Zero(t, res.sum.Drift)
}

// TestNewBooksRefuses: a configuration that cannot work is refused.
func TestNewBooksRefuses(t *testing.T) {
	c := cryptopaytest.NewServer()
	t.Cleanup(c.Close)
	ledger := func(context.Context, pgx.Tx, string) (decimal.Decimal, bool, error) { return decimal.Zero, false, nil }
	for name, cfg := range map[string]pgstore.BooksConfig{
		"no client":           {},
		"no section":          {Client: c.Client()},
		"two ledgers":         {Client: c.Client(), Tracker: &pgstore.Tracker{}, LedgerSQL: "SELECT 1", LedgerFunc: ledger},
		"ledger, no payments": {Client: c.Client(), Queue: &pgstore.Queue{}, LedgerSQL: "SELECT 1"},
		"negative settle":     {Client: c.Client(), Queue: &pgstore.Queue{}, SettleTime: -1},
	} {
		_, err := pgstore.NewBooks(cfg)
		assert.ErrorIs(t, err, pgstore.ErrInvalidOption, name)
	}
}

// tracker runs a tracker on the rig's database and fake, reading by polls
// alone (no webhooks), until stop.
func (r *qrig) tracker(t *testing.T) (*pgstore.Tracker, func()) {
	t.Helper()
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: r.pool, Client: r.fake.Client(),
		Table: pgtest.Name("tracked"), CreateTable: true, OpenEvery: 40 * time.Millisecond, LateMin: 40 * time.Millisecond,
		LateMax: 100 * time.Millisecond, Lease: 5 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tr.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return tr, stop
}

// pay creates a payment of amount for orderID, tracks it and pays paid
// of it at the fake (nothing when paid is "").
func (r *qrig) pay(t *testing.T, tr *pgstore.Tracker, orderID, amount, paid string) *cryptopay.Payment {
	t.Helper()
	ctx := context.Background()
	p, err := r.fake.Client().CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString(amount),
		Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: orderID})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error { _, err := tr.Track(ctx, tx, p); return err }))
	if paid != "" {
		require.NoError(t, r.fake.Pay(p.ID, decimal.RequireFromString(paid)))
	}
	return p
}

// recorded waits until the tracker has recorded status st for orderID.
func recorded(t *testing.T, tr *pgstore.Tracker, orderID string, st cryptopay.PaymentStatus) {
	t.Helper()
	trackWaitFor(t, orderID+" "+string(st), func() bool {
		tp, err := tr.Get(context.Background(), orderID)
		return err == nil && tp.Status == st
	})
}

// TestBooksPaymentDrifts: a paid amount that differs from the credit, a
// payment credited twice by the merchant's ledger (as SQL and as Go) and a
// status the stopped tracker never recorded are found with their exact
// deltas; a payment whose id is unknown is undecided; one read per
// tracked payment with an id.
func TestBooksPaymentDrifts(t *testing.T) {
	r := newQRig(t)
	tr, stop := r.tracker(t)
	r.pay(t, tr, "pay-ok", "10", "10")
	lower := r.pay(t, tr, "pay-lower", "10", "10")
	r.pay(t, tr, "pay-twice", "5", "5")
	r.pay(t, tr, "pay-open", "7", "")
	expiring := r.pay(t, tr, "pay-expired", "7", "")
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		_, err := tr.TrackOrder(context.Background(), tx, "pay-lost") // its create answer lost: no id
		return err
	}))
	for _, o := range []string{"pay-ok", "pay-lower", "pay-twice"} {
		recorded(t, tr, o, cryptopay.PaymentPaid)
	}
	recorded(t, tr, "pay-open", cryptopay.PaymentWaiting)
	recorded(t, tr, "pay-expired", cryptopay.PaymentWaiting)
	stop()
	for _, o := range []string{"pay-open", "pay-expired"} { // the stopped tracker's next reads are overdue
		trackWaitFor(t, o+" overdue", func() bool {
			tp, err := tr.Get(context.Background(), o)
			return err == nil && tp.NextAt.Before(time.Now().Add(-2*time.Millisecond))
		})
	}
	require.NoError(t, r.fake.SetPaidAmount(lower.ID, decimal.RequireFromString("7.5")))
	require.NoError(t, r.fake.SetPaymentStatus(expiring.ID, cryptopay.PaymentExpired)) // the tracker is stopped
	ledger := pgtest.Name("ledger")
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+ledger+" (order_id text, amount numeric);"+
		"INSERT INTO "+ledger+" VALUES ('pay-ok', 10), ('pay-lower', 10), ('pay-twice', 5), ('pay-twice', 5)")
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond) // the settle time (1 ms) passes after the last change at the fake

	sql := "SELECT order_id, sum(amount) FROM " + ledger + " GROUP BY order_id"
	fn := func(ctx context.Context, tx pgx.Tx, orderID string) (decimal.Decimal, bool, error) {
		var s *string
		if err := tx.QueryRow(ctx, "SELECT sum(amount)::text FROM "+ledger+" WHERE order_id = $1", orderID).Scan(&s); err != nil || s == nil {
			return decimal.Zero, false, err
		}
		return decimal.RequireFromString(*s), true, nil
	}
	for name, cfg := range map[string]pgstore.BooksConfig{"sql": {LedgerSQL: sql}, "func": {LedgerFunc: fn}} {
		t.Run(name, func(t *testing.T) {
			reads := r.fake.Requests(cryptopaytest.RouteGetPayment)
			cfg.Client, cfg.Tracker, cfg.SettleTime = r.fake.Client(), tr, time.Millisecond
			res := runBooks(t, cfg)
			assert.Equal(t, 5, r.fake.Requests(cryptopaytest.RouteGetPayment)-reads, "one read per tracked payment with an id")
			res.assertClasses(t, "payments", []booksWant{
				{"pay-ok", pgstore.BooksMatched, "0"},
				{"pay-lower", pgstore.BooksCreditDiffers, "-2.5"},
				{"pay-twice", pgstore.BooksLedgerDiffers, "5"},
				{"pay-open", pgstore.BooksMatched, "0"},
				{"pay-expired", pgstore.BooksTrackerDiffers, "0"},
				{"pay-lost", pgstore.BooksUndecided, "0"},
			})
			assert.Len(t, res.items, 6)
			assert.Equal(t, 3, res.sum.Drift)
			assert.Equal(t, 1, res.sum.Undecided)
		})
	}
}

// booksOps is how many operations TestBooksNoFalsePositives makes while
// the check runs: BOOKS_OPS (the figure in BENCHMARKS.md is 10,000), else
// 400.
func booksOps(t *testing.T) int {
	if s := os.Getenv("BOOKS_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 400
}

// killingWorkers runs the queue's workers, stopping them abruptly (their
// context canceled mid-work) and starting new ones once 50 more operations
// have been made since they started,
// until stop; it returns how many times they were killed.
func killingWorkers(q *pgstore.Queue, ops *atomic.Int64) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var kills int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			wctx, wcancel := context.WithCancel(ctx)
			exited := make(chan struct{})
			go func() { defer close(exited); _ = q.Run(wctx) }()
			from := ops.Load()
			for ctx.Err() == nil && ops.Load() < from+50 {
				time.Sleep(5 * time.Millisecond)
			}
			wcancel()
			<-exited
			kills++
		}
	}()
	return func() int { cancel(); <-done; return kills }
}

// TestBooksNoFalsePositives: the check runs again and again while payouts
// are sent and paid, payments are paid and the queue's workers are
// killed, and never reports drift or an undecided item: what is merely in
// flight is in flight. Once everything has settled, every item is matched.
func TestBooksNoFalsePositives(t *testing.T) {
	n := booksOps(t)
	r := newQRig(t)
	q := r.queue(t)
	tr, _ := r.tracker(t)
	r.payAll(t)
	var ops atomic.Int64
	stopWorkers := killingWorkers(q, &ops)
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, SettleTime: 2 * time.Second,
		Balances: true, CreateTable: true, BalanceTable: pgtest.Name("books"), PayoutDebit: pgstore.DebitAtCreate,
		PayoutFees: pgstore.FeesExcluded}
	require.True(t, runBooks(t, cfg).sum.Clean(), "the opening balances")
	b, err := pgstore.NewBooks(cfg)
	require.NoError(t, err)
	var checks []*pgstore.BooksSummary
	var drifts []pgstore.BooksItem
	producing := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		for {
			sum, err := b.Check(context.Background(), func(it pgstore.BooksItem) error {
				if it.Class.IsDrift() || it.Class == pgstore.BooksUndecided {
					drifts = append(drifts, it)
				}
				return nil
			})
			checks = append(checks, sum)
			select {
			case <-producing:
				checked <- err
				return
			default:
			}
		}
	}()
	for i := range n {
		if i%2 == 0 {
			p := payoutParams(i)
			p.NetworkFeeByUser = true // the fake takes the amount alone: FeesExcluded
			r.enqueue(t, q, p)
		} else {
			r.pay(t, tr, fmt.Sprintf("pay-%06d", i), "10", "10")
		}
		ops.Add(1)
	}
	close(producing)
	require.NoError(t, <-checked)
	kills := stopWorkers()
	assert.Empty(t, drifts, "reported while in flight")
	for _, s := range checks {
		assert.Empty(t, s.Unfinished)
	}
	t.Logf("%d operations, %d checks during them, queue workers killed %d times", n, len(checks), kills)
	assert.GreaterOrEqual(t, kills, n/100, "the workers were killed at least once per 100 operations")

	run(t, q)
	waitFor(t, q, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == (n+1)/2 })
	for i := 1; i < n; i += 2 {
		recorded(t, tr, fmt.Sprintf("pay-%06d", i), cryptopay.PaymentPaid)
	}
	cfg.SettleTime = time.Millisecond
	res := runBooks(t, cfg)
	assert.Equal(t, map[pgstore.BooksClass]int{pgstore.BooksMatched: (n + 1) / 2}, res.sum.Counts["payouts"])
	assert.Equal(t, map[pgstore.BooksClass]int{pgstore.BooksMatched: n / 2}, res.sum.Counts["payments"])
	assert.Equal(t, pgstore.BooksMatched, res.by["balances:usdt/tron"].Class, res.by["balances:usdt/tron"].Detail)
	assert.True(t, res.sum.Clean(), "%+v", res.sum)
}

// TestBooksBalances: the first check records the opening balance; a
// payout and a payment later, the balance ties exactly (the payment's
// merchantAmount in, the payout's amount out); a balance debited by hand
// is drift of exactly that much; with the debit rule unset, the balance is
// undecided and no snapshot is stored.
func TestBooksBalances(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, stop := r.tracker(t)
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, Balances: true, CreateTable: true,
		BalanceTable: pgtest.Name("books"), PayoutDebit: pgstore.DebitAtCreate, PayoutFees: pgstore.FeesExcluded,
		SettleTime: time.Millisecond}
	res := runBooks(t, cfg)
	it := res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksOpening, it.Class)
	assert.Equal(t, "1000000000", it.Theirs.Decimal.String())
	assert.True(t, res.sum.Clean())

	p := payoutParams(1)
	p.NetworkFeeByUser = true // the fake then takes the amount alone: FeesExcluded
	r.enqueue(t, q, p)
	r.payAll(t)
	stopWorkers := run(t, q)
	r.pay(t, tr, "pay-bal", "10", "10") // merchantAmount 9.9
	waitFor(t, q, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 1 })
	recorded(t, tr, "pay-bal", cryptopay.PaymentPaid)
	stopWorkers()
	stop()
	res = runBooks(t, cfg)
	it = res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksMatched, it.Class, it.Detail)
	assert.Equal(t, "999999999.65", it.Ours.Decimal.String(), "opening + 9.9 - 10.25")
	assert.True(t, res.sum.Clean(), "%+v", res.sum)

	// A minute on, the payout no longer counts as moving (an intent changed
	// within booksClockMargin of a check bounds what is in flight).
	_, err := r.pool.Exec(context.Background(), "UPDATE "+q.Table()+" SET updated_at = updated_at - interval '2 minutes'")
	require.NoError(t, err)
	r.fake.DebitBalance("usdt", "tron", decimal.RequireFromString("0.0007"))
	res = runBooks(t, cfg)
	it = res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksBalanceDrift, it.Class)
	assert.Equal(t, "-0.0007", it.Delta.String())
	assert.Equal(t, "999999999.65", it.Ours.Decimal.String())

	undecided := cfg
	undecided.PayoutDebit = pgstore.DebitUndecided
	res = runBooks(t, undecided)
	assert.Equal(t, pgstore.BooksUndecided, res.by["balances:usdt/tron"].Class)
	assert.False(t, res.sum.Clean())
	res = runBooks(t, cfg)
	assert.Equal(t, "-0.0007", res.by["balances:usdt/tron"].Delta.String(), "the drift stays until it is booked")
}

// TestBooksPaymentsHostileInputs: a ledger query that returns one row per
// booking instead of one per orderId (the order booked twice: two rows of
// 5) is summed, not matched row by row, and its orderId is reported once;
// a provider whose clock runs a day ahead cannot hide a paid amount that
// differs from the credit as in flight with an updatedAt in the future.
func TestBooksPaymentsHostileInputs(t *testing.T) {
	r := newQRig(t)
	r.fake.Advance(24 * time.Hour) // every updatedAt the provider sends is a day ahead
	tr, stop := r.tracker(t)
	r.pay(t, tr, "pay-twice", "5", "5")
	ahead := r.pay(t, tr, "pay-ahead", "10", "10")
	recorded(t, tr, "pay-twice", cryptopay.PaymentPaid)
	recorded(t, tr, "pay-ahead", cryptopay.PaymentPaid)
	stop()
	require.NoError(t, r.fake.SetPaidAmount(ahead.ID, decimal.RequireFromString("7.5")))
	ledger := pgtest.Name("ledger_rows")
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+ledger+" (order_id text, amount numeric);"+
		"INSERT INTO "+ledger+" VALUES ('pay-twice', 5), ('pay-twice', 5), ('pay-ahead', 10)")
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond) // the settle time (1 ms) passes

	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Tracker: tr, SettleTime: time.Millisecond,
		LedgerSQL: "SELECT order_id, amount FROM " + ledger + " -- one row per booking"})
	res.assertClasses(t, "payments", []booksWant{
		{"pay-twice", pgstore.BooksLedgerDiffers, "5"},
		{"pay-ahead", pgstore.BooksCreditDiffers, "-2.5"},
	})
	assert.Len(t, res.items, 2, "one item per orderId")
	assert.Equal(t, 2, res.sum.Drift)
}

// TestBooksHostilePayoutText: a payout at the provider whose orderId,
// wallet and status carry a NUL (which a PostgreSQL text cannot hold)
// cannot blind the whole payout section: it is listed as provider-only
// with the NUL shown as U+FFFD, and the section finishes.
func TestBooksHostilePayoutText(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	outside := payoutParams(98)
	outside.OrderID, outside.Amount = "nul-id", decimal.RequireFromString("1.5")
	_, err := r.fake.Client().CreatePayout(context.Background(), outside)
	require.NoError(t, err)
	// The list as a hostile server sends it: the orderId with a NUL.
	nul := &http.Client{Transport: rewriteBody{strings.NewReplacer(`"nul-id"`, `"nul\u0000id"`)}}

	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(cryptopay.WithHTTPClient(nul)), Queue: q})
	assert.Empty(t, res.sum.Unfinished)
	res.assertClasses(t, "payouts", []booksWant{{"nul\uFFFDid", pgstore.BooksProviderOnly, "1.5"}})
	assert.Len(t, res.items, 1)
}

// TestBooksPaymentAwaitingItsRead: a payment paid while its webhook was
// lost, whose tracker's next read is still ahead (a late payment's reads
// space out to LateMax, 6 h), is in flight, not drift: told to correct
// the books by hand, a finance team would book it twice once the tracker
// reads it. Once that read is overdue past the settle time (no worker
// took it), or the payment carries an anomaly, it is drift again.
func TestBooksPaymentAwaitingItsRead(t *testing.T) {
	r := newQRig(t)
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: r.pool, Client: r.fake.Client(),
		Table: pgtest.Name("tracked"), CreateTable: true, OpenEvery: time.Hour}) // never Run: its next read is an hour ahead
	require.NoError(t, err)
	r.pay(t, tr, "pay-awaited", "10", "10")
	r.pay(t, tr, "pay-overdue", "10", "10")
	_, err = r.pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = now() - interval '1 hour' WHERE order_id = 'pay-overdue'")
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond) // the settle time (1 ms) passes after the payment at the fake

	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Tracker: tr, SettleTime: time.Millisecond})
	res.assertClasses(t, "payments", []booksWant{
		{"pay-awaited", pgstore.BooksInFlight, "10"},
		{"pay-overdue", pgstore.BooksCreditDiffers, "10"},
	})
	assert.Equal(t, 1, res.sum.Drift)
}

// rewriteBody is a transport that edits every answer's body.
type rewriteBody struct{ r *strings.Replacer }

func (rw rewriteBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b = []byte(rw.r.Replace(string(b)))
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}
