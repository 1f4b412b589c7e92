package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// payBoth sends ps through q until they are paid, and pays a payment of
// 10 for orderID that tr (running) records paid: money out and money in.
func (r *qrig) payBoth(t *testing.T, q *pgstore.Queue, tr *pgstore.Tracker, orderID string, ps ...cryptopay.CreatePayoutParams) {
	t.Helper()
	r.enqueue(t, q, ps...)
	r.payAll(t)
	stop := run(t, q)
	r.pay(t, tr, orderID, "10", "10")
	waitFor(t, q, "paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == len(ps) })
	recorded(t, tr, orderID, cryptopay.PaymentPaid)
	stop()
}

// paidPayouts enqueues payoutsUpTo(n) and works them until each is paid,
// at the fake and in the queue.
func (r *qrig) paidPayouts(t *testing.T, q *pgstore.Queue, n int) {
	t.Helper()
	r.enqueue(t, q, payoutsUpTo(n)...)
	r.payAll(t)
	stop := run(t, q)
	waitFor(t, q, fmt.Sprintf("%d paid", n), func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == n })
	stop()
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
		{"wd-000005", pgstore.BooksInFlight, "0"},
		{"outside-1", pgstore.BooksProviderOnly, "3.3"},
	}
	res.assertClasses(t, "payouts", tests)
	require.Len(t, res.items, len(tests), "every orderId once")
	assert.Equal(t, pgstore.BooksDoublePayment, res.items[0].Class, "the double payment is the first line")
	assert.Equal(t, 2, res.items[0].Payouts)
	assert.Equal(t, "20.5", res.items[0].Theirs.Decimal.String())
	assert.Equal(t, 5, res.sum.Drift)
	assert.Equal(t, "13.5501", res.sum.DriftBySection["payouts"]["usdt/tron"].String(), "10.25 + 0.0001 - 10.25 + 10.25 + 3.3")
	assert.Empty(t, res.sum.Unfinished)
	assert.False(t, res.sum.Clean())
}

// TestBooksPayoutsCleanAndCounted: a queue whose payouts all went
// through ties exactly, at the cost of the list's pages alone.
func TestBooksPayoutsCleanAndCounted(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.paidPayouts(t, q, 250)
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
	b, err := pgstore.NewBooks(pgstore.BooksConfig{Queue: &pgstore.Queue{}}) // enough to book adjustments
	require.NoError(t, err)
	_, err = b.Check(context.Background(), func(pgstore.BooksItem) error { return nil })
	assert.ErrorIs(t, err, pgstore.ErrInvalidOption, "no client: no check")
	for name, cfg := range map[string]pgstore.BooksConfig{
		"no section":              {Client: c.Client()},
		"two ledgers":             {Client: c.Client(), Tracker: &pgstore.Tracker{}, LedgerSQL: "SELECT 1", LedgerFunc: ledger},
		"ledger, no payments":     {Client: c.Client(), Queue: &pgstore.Queue{}, LedgerSQL: "SELECT 1"},
		"negative settle":         {Client: c.Client(), Queue: &pgstore.Queue{}, SettleTime: -1},
		"two payout ledgers":      {Client: c.Client(), Queue: &pgstore.Queue{}, PayoutLedgerSQL: "SELECT 1", PayoutLedgerFunc: ledger},
		"payout ledger, no queue": {Client: c.Client(), Tracker: &pgstore.Tracker{}, PayoutLedgerSQL: "SELECT 1"},
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
// deltas; a payment the ledger booked twice and the provider lowered is
// two items, the ledger's +10 and the provider's -2.5; ledger rows under
// an orderId the tracker does not know are ledger_only (SQL: a Go ledger
// cannot list its orderIds); a payment whose id is unknown is undecided;
// one read per tracked payment with an id.
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
		"INSERT INTO "+ledger+" VALUES ('pay-ok', 10), ('pay-lower', 10), ('pay-lower', 10), ('pay-twice', 5), ('pay-twice', 5), ('pay-ghost', 99)")
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
		ghost := map[string]int{"sql": 1, "func": 0}[name]
		t.Run(name, func(t *testing.T) {
			reads := r.fake.Requests(cryptopaytest.RouteGetPayment)
			cfg.Client, cfg.Tracker, cfg.SettleTime = r.fake.Client(), tr, time.Millisecond
			res := runBooks(t, cfg)
			assert.Equal(t, 5, r.fake.Requests(cryptopaytest.RouteGetPayment)-reads, "one read per tracked payment with an id")
			res.assertClasses(t, "payments", []booksWant{
				{"pay-ok", pgstore.BooksMatched, "0"},
				{"pay-lower", pgstore.BooksCreditDiffers, "-2.5"},
				{"pay-twice", pgstore.BooksMatched, "0"},
				{"pay-open", pgstore.BooksMatched, "0"},
				{"pay-expired", pgstore.BooksTrackerBehind, "0"},
				{"pay-lost", pgstore.BooksUndecided, "0"},
			})
			res.assertClasses(t, "ledger", []booksWant{
				{"pay-ok", pgstore.BooksMatched, "0"},
				{"pay-lower", pgstore.BooksLedgerDiffers, "10"},
				{"pay-twice", pgstore.BooksLedgerDiffers, "5"},
			})
			if ghost == 1 {
				res.assertClasses(t, "ledger", []booksWant{{"pay-ghost", pgstore.BooksLedgerOnly, "99"}})
			}
			assert.Len(t, res.items, 12+ghost, "each payment twice: the provider's item and the ledger's")
			assert.Equal(t, 4+ghost, res.sum.Drift)
			assert.Equal(t, 1, res.sum.Undecided)
			assert.Equal(t, map[string]decimal.Decimal{"usdt/tron": decimal.RequireFromString("-2.5")}, res.sum.DriftBySection["payments"])
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
// are sent and paid (the network fee borne by the recipient for some, by
// the merchant for others: FeesIncluded), payments are paid (the
// platform's fee taken), intents are held for approval and the queue's
// workers are killed, and never reports drift or an undecided item: what
// is merely in flight is in flight. Once everything has settled, every
// item is matched but the held intents, which are in flight.
func TestBooksNoFalsePositives(t *testing.T) {
	n := booksOps(t)
	r := newQRig(t)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails.ApprovalAbove = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)}
	})
	tr, _ := r.tracker(t)
	r.payAll(t)
	var ops atomic.Int64
	stopWorkers := killingWorkers(q, &ops)
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, SettleTime: 2 * time.Second,
		Balances: true, CreateTable: true, BalanceTable: pgtest.Name("books"), PayoutDebit: pgstore.DebitAtCreate,
		PayoutFees: pgstore.FeesIncluded}
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
	held := 0
	for i := range n {
		if i%2 == 0 {
			p := payoutParams(i)
			p.NetworkFeeByUser = i%4 == 0 // the others take 0.5% on top
			if i%20 == 0 {
				p.Amount, held = decimal.NewFromInt(500), held+1 // held for approval
			}
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
	waitFor(t, q, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == (n+1)/2-held })
	for i := 1; i < n; i += 2 {
		recorded(t, tr, fmt.Sprintf("pay-%06d", i), cryptopay.PaymentPaid)
	}
	cfg.SettleTime = time.Millisecond
	res := runBooks(t, cfg)
	assert.Equal(t, map[pgstore.BooksClass]int{pgstore.BooksMatched: (n+1)/2 - held, pgstore.BooksInFlight: held}, res.sum.Counts["payouts"])
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
	cfg := r.balancesConfig(q, tr, pgstore.FeesExcluded)
	res := runBooks(t, cfg)
	it := res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksOpening, it.Class)
	assert.Equal(t, "1000000000", it.Theirs.Decimal.String())
	assert.True(t, res.sum.Clean())

	p := payoutParams(1)
	p.NetworkFeeByUser = true         // the fake then takes the amount alone: FeesExcluded
	r.payBoth(t, q, tr, "pay-bal", p) // merchantAmount 9.9
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
	res.assertClasses(t, "ledger", []booksWant{{"pay-twice", pgstore.BooksLedgerDiffers, "5"}})
	res.assertClasses(t, "payments", []booksWant{{"pay-ahead", pgstore.BooksCreditDiffers, "-2.5"}})
	assert.Len(t, res.items, 4, "one item per orderId and section")
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
	nul := &http.Client{Transport: rewriteBody{strings.NewReplacer(`"nul-id"`, `"nul\u0000id"`).Replace}}

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
// took it), it is drift again: tracker_behind, which says to start the
// tracker's workers, not to ask the provider.
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
		{"pay-awaited", pgstore.BooksInFlight, "0"},
		{"pay-overdue", pgstore.BooksTrackerBehind, "10"},
	})
	assert.Contains(t, res.by["payments:pay-overdue"].Detail, "start the tracker's workers")
	assert.Equal(t, 1, res.sum.Drift)
}

// rewriteBody is a transport that edits every answer's body.
type rewriteBody struct{ edit func(string) string }

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
	b = []byte(rw.edit(string(b)))
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestBooksBalancesWithFees: on the fake's default network fee (0.5%),
// with payouts whose fee the recipient bears and payouts whose fee the
// merchant bears, and a payment in between, a settled world's second
// check decides the balance from each payout's merchantAmount (FeesIncluded
// is the rule only where the list gives none) and it ties to the digit;
// a hand debit is then balance_drift of exactly its amount, though an
// intent of 500 held for approval was enqueued a moment before (it cannot
// have moved money). Every payout is paid, so the fee rule (included or
// excluded) changes nothing.
func TestBooksBalancesWithFees(t *testing.T) {
	for name, fees := range map[string]pgstore.PayoutFees{"included": pgstore.FeesIncluded, "excluded": pgstore.FeesExcluded} {
		t.Run(name, func(t *testing.T) { testBooksBalancesWithFees(t, fees) })
	}
}

func testBooksBalancesWithFees(t *testing.T, fees pgstore.PayoutFees) {
	r := newQRig(t)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails.ApprovalAbove = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)}
	})
	tr, stopTracker := r.tracker(t)
	cfg := r.balancesConfig(q, tr, fees)
	require.Equal(t, pgstore.BooksOpening, runBooks(t, cfg).by["balances:usdt/tron"].Class)

	byUser, byMerchant := payoutParams(1), payoutParams(2)
	byUser.NetworkFeeByUser = true                      // takes 10.25; the other 10.25 + 0.5% = 10.30125
	r.payBoth(t, q, tr, "pay-fees", byUser, byMerchant) // merchantAmount 9.9
	stopTracker()
	held := payoutParams(3)
	held.Amount = decimal.NewFromInt(500)
	r.enqueue(t, q, held)
	in, err := q.Get(context.Background(), held.OrderID)
	require.NoError(t, err)
	require.Equal(t, pgstore.StateNeedsApproval, in.State)

	res := runBooks(t, cfg)
	it := res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksMatched, it.Class, it.Detail)
	assert.Equal(t, "999999989.34875", it.Ours.Decimal.String(), "opening + 9.9 - 10.25 - 10.30125")
	assert.Equal(t, "999999989.34875", it.Theirs.Decimal.String())
	for class, n := range res.sum.Counts["balances"] {
		assert.Equal(t, pgstore.BooksMatched, class, "every balance decided: %d %s", n, class)
	}
	assert.True(t, res.sum.Clean(), "every balance decided: %+v", res.sum)

	r.fake.DebitBalance("usdt", "tron", decimal.RequireFromString("0.0007"))
	res = runBooks(t, cfg)
	it = res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksBalanceDrift, it.Class, it.Detail)
	assert.Equal(t, "-0.0007", it.Delta.String())
	assert.Equal(t, "999999989.34875", it.Ours.Decimal.String())
	assert.Equal(t, "999999989.34805", it.Theirs.Decimal.String())
}

// balancesConfig is a books check of q and tr with the balances (a new
// balance table, payouts debited when created, fees as given), settle
// time 1 ms.
func (r *qrig) balancesConfig(q *pgstore.Queue, tr *pgstore.Tracker, fees pgstore.PayoutFees) pgstore.BooksConfig {
	return pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, Balances: true, CreateTable: true,
		BalanceTable: pgtest.Name("books"), PayoutDebit: pgstore.DebitAtCreate, PayoutFees: fees, SettleTime: time.Millisecond}
}

// TestBooksBalancesDebitOfThePaidPayout: an intent's debit is its payout
// that can move money in its currency and network: a payout of the
// orderId in another currency and a failed one (its merchantAmount
// without the fee), both listed before the paid one, are not its debit,
// and the balance ties to the digit.
func TestBooksBalancesDebitOfThePaidPayout(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, stopTracker := r.tracker(t)
	cfg := r.balancesConfig(q, tr, pgstore.FeesIncluded)
	require.Equal(t, pgstore.BooksOpening, runBooks(t, cfg).by["balances:usdt/tron"].Class)
	r.payBoth(t, q, tr, "pay-fees", payoutParams(2)) // the payout's merchantAmount 10.25 + 0.5%, the payment's 9.9
	stopTracker()
	edit := func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem {
		paid := *listed(t, items, "wd-000002")
		require.Equal(t, "10.30125", paid.MerchantAmount.Decimal.String())
		eth, failed := paid, paid
		eth.Currency, eth.Network, eth.WalletAddress = "eth", "ethereum", "0x52908400098527886E0F7030069857D2E4169EE7"
		eth.Amount, eth.MerchantAmount = decimal.NewFromInt(1), decimal.NewNullDecimal(decimal.NewFromInt(1))
		failed.Status, failed.MerchantAmount = cryptopay.PayoutFailed, decimal.NewNullDecimal(paid.Amount)
		return append([]cryptopay.PayoutListItem{eth, failed}, items...)
	}
	res := runBooks(t, cfg, listAs(r.fake.Client(), edit, nil))
	it := res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksMatched, it.Class, it.Detail)
	assert.Equal(t, "999999999.59875", it.Ours.Decimal.String(), "the opening + 9.9 - 10.30125")
	assert.Equal(t, "999999999.59875", it.Theirs.Decimal.String())
}

// TestBooksAdjust: a drift booked by adjustments (an actor, a note, the
// exact amount) ties the next check: a balance debited by hand and a
// payout made outside the queue are then "adjusted", listed apart, not
// drift, and the books are clean; an adjustment that books part of a drift
// leaves the rest as drift; the table refuses an UPDATE, a DELETE and a
// TRUNCATE; bad input records nothing.
func TestBooksAdjust(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, stop := r.tracker(t)
	stop()
	books := pgtest.Name("books")
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, Balances: true, CreateTable: true,
		BalanceTable: books, PayoutDebit: pgstore.DebitAtCreate, PayoutFees: pgstore.FeesExcluded,
		SettleTime: time.Millisecond}
	require.Equal(t, pgstore.BooksOpening, runBooks(t, cfg).by["balances:usdt/tron"].Class)
	r.fake.DebitBalance("usdt", "tron", decimal.RequireFromString("0.0007"))
	outside := payoutParams(99)
	outside.OrderID, outside.Amount = "outside-1", decimal.RequireFromString("3.3")
	outside.NetworkFeeByUser = true
	_, err := r.fake.Client().CreatePayout(context.Background(), outside)
	require.NoError(t, err)
	res := runBooks(t, cfg)
	res.assertClasses(t, "payouts", []booksWant{{"outside-1", pgstore.BooksProviderOnly, "3.3"}})
	bal := res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksBalanceDrift, bal.Class, bal.Detail)
	assert.Equal(t, "-3.3007", bal.Delta.String(), "the hand debit and the payout made outside the queue")

	b, err := pgstore.NewBooks(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	book := func(a pgstore.BooksAdjustment) pgstore.BooksAdjustment {
		t.Helper()
		a.Actor, a.Note = "alice@example.com", "ticket 42: "+a.Section
		got, err := b.Adjust(ctx, a)
		require.NoError(t, err)
		return got
	}
	first := book(pgstore.BooksAdjustment{Section: "payouts", OrderID: "outside-1", Amount: decimal.RequireFromString("3")})
	assert.NotZero(t, first.ID)
	res = runBooks(t, cfg)
	it := res.by["payouts:outside-1"]
	assert.Equal(t, pgstore.BooksProviderOnly, it.Class, "3 of 3.3 booked")
	assert.Equal(t, "0.3", it.Delta.String())
	assert.Equal(t, "3", it.Adjusted.Decimal.String())

	book(pgstore.BooksAdjustment{Section: "payouts", OrderID: "outside-1", Amount: decimal.RequireFromString("0.3")})
	book(pgstore.BooksAdjustment{Section: "balances", Currency: "USDT", Network: "tron", Amount: decimal.RequireFromString("-3.3007")})
	res = runBooks(t, cfg)
	res.assertClasses(t, "payouts", []booksWant{{"outside-1", pgstore.BooksAdjusted, "0"}})
	assert.Equal(t, "3.3", res.by["payouts:outside-1"].Adjusted.Decimal.String())
	bal = res.by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksAdjusted, bal.Class, bal.Detail)
	assert.Equal(t, "0", bal.Delta.String())
	assert.Equal(t, "-3.3007", bal.Adjusted.Decimal.String())
	assert.Equal(t, "999999996.6993", bal.Ours.Decimal.String(), "the expected balance with what was booked")
	assert.Equal(t, 1, res.sum.Counts["balances"][pgstore.BooksAdjusted])
	assert.True(t, res.sum.Clean(), "%+v", res.sum)

	table := books + "_adjustments"
	for _, sql := range []string{"UPDATE " + table + " SET amount = 1", "DELETE FROM " + table, "TRUNCATE " + table} {
		_, err := r.pool.Exec(ctx, sql)
		assert.ErrorContains(t, err, "append-only", sql)
	}
	for name, a := range map[string]pgstore.BooksAdjustment{
		"no section":    {OrderID: "o", Amount: decimal.NewFromInt(1), Actor: "a", Note: "n"},
		"no order":      {Section: "payouts", Amount: decimal.NewFromInt(1), Actor: "a", Note: "n"},
		"no network":    {Section: "balances", Currency: "usdt", Amount: decimal.NewFromInt(1), Actor: "a", Note: "n"},
		"zero":          {Section: "payouts", OrderID: "o", Actor: "a", Note: "n"},
		"no actor":      {Section: "payouts", OrderID: "o", Amount: decimal.NewFromInt(1), Note: "n"},
		"no note":       {Section: "payouts", OrderID: "o", Amount: decimal.NewFromInt(1), Actor: "a", Note: " "},
		"hidden orders": {Section: "payouts", OrderID: "o\u200b", Amount: decimal.NewFromInt(1), Actor: "a", Note: "n"},
		"payout currency, no network": {Section: "payouts", OrderID: "o", Currency: "eth", Amount: decimal.NewFromInt(1), Actor: "a",
			Note: "n"},
		"payment currency": {Section: "payments", OrderID: "o", Currency: "eth", Network: "ethereum", Amount: decimal.NewFromInt(1),
			Actor: "a", Note: "n"},
	} {
		_, err := b.Adjust(ctx, a)
		var ve *cryptopay.ValidationError
		assert.ErrorAs(t, err, &ve, name)
	}
	var n int
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
	assert.Equal(t, 3, n, "only the three booked")
}

// TestBooksOpeningBusy: a system never idle gets an opening all the same:
// with a payout created and not paid, one the provider created while the
// queue is still reconciling it, and a payment paid that the tracker has
// not read, the opening is the provider's balance with what is in flight
// rolled back (the payout the queue does not count yet added back, the
// payment the tracker has not credited taken off), and each later check
// says where it came from. A hand debit of 1,000,000 is then drift, to
// the digit once what was in flight has settled. A balance that moves
// while the check reads what is in flight gets no opening that time.
func TestBooksOpeningBusy(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: r.pool, Client: r.fake.Client(),
		Table: pgtest.Name("tracked"), CreateTable: true, OpenEvery: time.Hour}) // not run yet: its next read is an hour ahead
	require.NoError(t, err)
	created, reconciling := payoutParams(1), payoutParams(2)
	created.NetworkFeeByUser, reconciling.NetworkFeeByUser = true, true
	r.enqueue(t, q, created, reconciling)
	stop := run(t, q)
	waitFor(t, q, "2 created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 2 })
	stop()
	_, err = r.pool.Exec(context.Background(), "UPDATE "+q.Table()+" SET state = 'reconciling' WHERE order_id = $1", reconciling.OrderID)
	require.NoError(t, err)
	r.pay(t, tr, "pay-busy", "10", "10") // merchantAmount 9.9, not read by the tracker
	cfg := r.balancesConfig(q, tr, pgstore.FeesIncluded)

	moved := cfg
	moved.BalanceTable = pgtest.Name("books_moved")
	var once sync.Once
	moved.Progress = func(string, int, int) { // while the payout list is read
		once.Do(func() { r.fake.DebitBalance("usdt", "tron", decimal.RequireFromString("0.01")) })
	}
	it := runBooks(t, moved).by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksUndecided, it.Class, it.Detail)
	assert.Contains(t, it.Detail, "moved while the check read")
	r.fake.DebitBalance("usdt", "tron", decimal.RequireFromString("-0.01")) // given back

	it = runBooks(t, cfg).by["balances:usdt/tron"]
	require.Equal(t, pgstore.BooksOpening, it.Class, it.Detail)
	assert.Equal(t, "999999989.4", it.Theirs.Decimal.String(), "1e9 - 10.25 - 10.25 + 9.9")
	assert.Equal(t, "999999989.75", it.Ours.Decimal.String(), "the reconciling payout added back, the payment not credited taken off")
	assert.Contains(t, it.Detail, "busy check")

	r.fake.DebitBalance("usdt", "tron", decimal.NewFromInt(1_000_000))
	it = runBooks(t, cfg).by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksBalanceDrift, it.Class, it.Detail)
	assert.Contains(t, it.Detail, "opening of ")

	r.payAll(t)
	stop = run(t, q)
	stopTracker := run(t, tr)
	waitFor(t, q, "2 paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 2 })
	_, err = r.pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = now()")
	require.NoError(t, err)
	recorded(t, tr, "pay-busy", cryptopay.PaymentPaid)
	stop()
	stopTracker()
	it = runBooks(t, cfg).by["balances:usdt/tron"]
	assert.Equal(t, pgstore.BooksBalanceDrift, it.Class, it.Detail)
	assert.Equal(t, "-1000000", it.Delta.String())
	assert.Equal(t, "999999989.4", it.Ours.Decimal.String(), "the opening + 9.9 - 10.25")
	assert.Contains(t, it.Detail, "busy check")
}

// TestBooksSinceNeverDrift: with --since and the balances, a late payment
// tracked before the window and paid a moment ago (the tracker has not
// read it yet) is read all the same, as every payment the tracker has not
// closed: the balance is in flight, not drift of 9.9, as without --since;
// and the summary names the closed payments it did not read.
func TestBooksSinceNeverDrift(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, err := pgstore.NewTracker(context.Background(), pgstore.TrackerConfig{Pool: r.pool, Client: r.fake.Client(),
		Table: pgtest.Name("tracked"), CreateTable: true, OpenEvery: time.Hour}) // never run: its next read is an hour ahead
	require.NoError(t, err)
	late := r.pay(t, tr, "pay-late", "10", "")
	r.pay(t, tr, "pay-closed", "10", "")
	_, err = r.pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET tracked_at = now() - interval '2 hours', updated_at = now() - interval '2 hours';"+
		"UPDATE "+tr.Table()+" SET state = 'closed' WHERE order_id = 'pay-closed'")
	require.NoError(t, err)
	cfg := r.balancesConfig(q, tr, pgstore.FeesExcluded)
	require.Equal(t, pgstore.BooksOpening, runBooks(t, cfg).by["balances:usdt/tron"].Class)

	require.NoError(t, r.fake.Pay(late.ID, decimal.RequireFromString("10"))) // merchantAmount 9.9
	for name, since := range map[string]time.Time{"all": {}, "since": time.Now().Add(-time.Hour)} {
		c := cfg
		c.Since = since
		res := runBooks(t, c)
		it := res.by["balances:usdt/tron"]
		assert.Equal(t, pgstore.BooksInFlight, it.Class, "%s: %s", name, it.Detail)
		res.assertClasses(t, "payments", []booksWant{{"pay-late", pgstore.BooksInFlight, "0"}})
		if name == "since" {
			assert.Contains(t, res.sum.NotRead["payments"], "1 tracked payments outside the window")
			assert.NotContains(t, res.by, "payments:pay-closed")
		} else {
			assert.Empty(t, res.sum.NotRead)
		}
	}
}

// TestBooksClockThatLies: a provider whose updatedAt is the time of each
// read cannot keep a paid amount lowered after the fact in flight past
// the settle time: the check measures from when it first saw the
// difference (its own table), so the first check holds it in flight and a
// check past the settle time reports credit_differs of exactly -2.5.
func TestBooksClockThatLies(t *testing.T) {
	r := newQRig(t)
	tr, stop := r.tracker(t)
	lower := r.pay(t, tr, "pay-lower", "10", "10")
	recorded(t, tr, "pay-lower", cryptopay.PaymentPaid)
	stop()
	_, err := r.pool.Exec(context.Background(), "UPDATE "+tr.Table()+" SET next_at = NULL, state = 'closed'") // no read will record it
	require.NoError(t, err)
	require.NoError(t, r.fake.SetPaidAmount(lower.ID, decimal.RequireFromString("7.5")))
	stamp := &http.Client{Transport: stampReads{}}
	cfg := pgstore.BooksConfig{Client: r.fake.Client(cryptopay.WithHTTPClient(stamp)), Tracker: tr, CreateTable: true,
		BalanceTable: pgtest.Name("books"), SettleTime: 200 * time.Millisecond}

	res := runBooks(t, cfg)
	res.assertClasses(t, "payments", []booksWant{{"pay-lower", pgstore.BooksInFlight, "0"}})
	time.Sleep(250 * time.Millisecond) // the settle time passes; every read still says "changed just now"
	res = runBooks(t, cfg)
	res.assertClasses(t, "payments", []booksWant{{"pay-lower", pgstore.BooksCreditDiffers, "-2.5"}})
	assert.Contains(t, res.by["payments:pay-lower"].Detail, "the check has seen this difference since")
}

// stampReads is a transport whose answers carry the time of the read as
// their updatedAt: a provider whose clock lies.
type stampReads struct{}

var updatedAtField = regexp.MustCompile(`"updatedAt":"[^"]*"`)

func (stampReads) RoundTrip(req *http.Request) (*http.Response, error) {
	now := `"updatedAt":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"`
	return rewriteBody{func(s string) string { return updatedAtField.ReplaceAllLiteralString(s, now) }}.RoundTrip(req)
}

// TestBooksPayoutLedger: the payout side of the merchant's ledger (as SQL
// and as Go) is compared with the queue's paid intents: a paid payout
// booked once matches, one an OnFinal booked nowhere is -10.25, one booked
// twice +10.25, an intent not final is in flight (its OnFinal has not run),
// and ledger rows under an orderId the queue does not know are ledger_only
// (SQL: a Go ledger cannot list its orderIds).
func TestBooksPayoutLedger(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.paidPayouts(t, q, 3)
	r.enqueue(t, q, payoutParams(3)) // queued: not final
	ledger := pgtest.Name("payout_ledger")
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+ledger+" (order_id text, amount numeric);"+
		"INSERT INTO "+ledger+" VALUES ('wd-000000', 10.25), ('wd-000002', 10.25), ('wd-000002', 10.25), ('wd-ghost', 5)")
	require.NoError(t, err)
	fn := func(ctx context.Context, tx pgx.Tx, orderID string) (decimal.Decimal, bool, error) {
		var s *string
		if err := tx.QueryRow(ctx, "SELECT sum(amount)::text FROM "+ledger+" WHERE order_id = $1", orderID).Scan(&s); err != nil || s == nil {
			return decimal.Zero, false, err
		}
		return decimal.RequireFromString(*s), true, nil
	}
	for name, cfg := range map[string]pgstore.BooksConfig{
		"sql":  {PayoutLedgerSQL: "SELECT order_id, amount FROM " + ledger},
		"func": {PayoutLedgerFunc: fn},
	} {
		ghost := map[string]int{"sql": 1, "func": 0}[name]
		t.Run(name, func(t *testing.T) {
			cfg.Client, cfg.Queue, cfg.SettleTime = r.fake.Client(), q, time.Millisecond
			res := runBooks(t, cfg)
			res.assertClasses(t, "payout_ledger", []booksWant{
				{"wd-000000", pgstore.BooksMatched, "0"},
				{"wd-000001", pgstore.BooksLedgerDiffers, "-10.25"},
				{"wd-000002", pgstore.BooksLedgerDiffers, "10.25"},
				{"wd-000003", pgstore.BooksInFlight, "0"},
			})
			if ghost == 1 {
				res.assertClasses(t, "payout_ledger", []booksWant{{"wd-ghost", pgstore.BooksLedgerOnly, "5"}})
			}
			assert.Equal(t, 4+ghost, res.sum.Counts["payout_ledger"][pgstore.BooksMatched]+res.sum.Counts["payout_ledger"][pgstore.BooksLedgerDiffers]+
				res.sum.Counts["payout_ledger"][pgstore.BooksInFlight]+res.sum.Counts["payout_ledger"][pgstore.BooksLedgerOnly])
			assert.Equal(t, "0", res.sum.DriftBySection["payout_ledger"]["usdt/tron"].String(), "-10.25 + 10.25")
		})
	}
}

// TestBooksBalancesNeedThePayments: when the payments section cannot
// finish (the ledger query fails), the balances decide nothing on part
// of what is in flight: the section is named unfinished, with no item.
func TestBooksBalancesNeedThePayments(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	tr, stop := r.tracker(t)
	stop()
	r.pay(t, tr, "pay-1", "10", "")
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, Tracker: tr, Balances: true, CreateTable: true,
		BalanceTable: pgtest.Name("books"), PayoutDebit: pgstore.DebitAtCreate, PayoutFees: pgstore.FeesExcluded,
		LedgerSQL: "SELECT order_id, 1/0 FROM " + tr.Table()}
	res := runBooks(t, cfg)
	assert.Contains(t, res.sum.Unfinished["payments"], "division by zero")
	assert.Contains(t, res.sum.Unfinished["balances"], "the payments section did not finish")
	assert.Empty(t, res.sum.Counts["balances"])
}

// TestBooksReadOnlyRole: a database role that may read the queue's table
// and nothing more still checks the payouts with CreateTable set (as the
// CLI sets it): the check's own tables cannot be created, and no
// adjustment can be in a table that does not exist, so the section
// finishes and the books are clean.
func TestBooksReadOnlyRole(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	role := pgtest.Name("reader")
	_, err := r.pool.Exec(context.Background(), "CREATE ROLE "+role+"; GRANT SELECT ON "+q.Table()+" TO "+role)
	require.NoError(t, err)
	pcfg, err := pgxpool.ParseConfig(r.srv.DSN())
	require.NoError(t, err)
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { _, err := c.Exec(ctx, "SET ROLE "+role); return err }
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	reader, err := pgstore.NewQueue(context.Background(), pgstore.QueueConfig{Pool: pool, Table: r.table})
	require.NoError(t, err)
	books := pgtest.Name("books")
	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: reader, CreateTable: true, BalanceTable: books})
	assert.Empty(t, res.sum.Unfinished)
	assert.True(t, res.sum.Clean())
	var created bool
	require.NoError(t, r.pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", books+"_adjustments").Scan(&created))
	assert.False(t, created, "the role may not create it")

	p := smallPayout(1) // listed though never sent: the role may not park it, and the item says so
	r.enqueue(t, q, p)
	r.listedOutside(t, p)
	res = runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: reader})
	it := res.by["payouts:"+p.OrderID]
	assert.Equal(t, pgstore.BooksUnsentButListed, it.Class)
	assert.Contains(t, it.Detail, "not parked: ")
	assert.Contains(t, it.Detail, "permission denied")
	assert.Empty(t, res.sum.Unfinished, "a role that may only read still checks")
	in, err := q.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State)
}
