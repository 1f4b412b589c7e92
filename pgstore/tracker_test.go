package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/cryptopay/cryptopay-go/webhook"
)

// trig is a tracker test's world: PostgreSQL, the fake API, the merchant's
// webhook endpoint (which can lose every webhook for good), the tracker's
// table and the merchant's credits table (one row per OnChange commit).
type trig struct {
	srv     *pgtest.Server
	pool    *pgxpool.Pool
	fake    *cryptopaytest.Server
	client  *cryptopay.Client // the trackers' reads share it (and its connections)
	table   string
	credits string
	secret  []byte
	shop    *httptest.Server
	hooks   http.Handler
	drop    atomic.Bool  // the endpoint loses every webhook
	reads   atomic.Int64 // the trackers' API reads
	tracker *pgstore.Tracker
	forge   func(*cryptopay.Payment)                                       // edits the API's answers, if set
	chaos   func(w http.ResponseWriter, req *http.Request, h http.Handler) // delivers with faults, if set
	seen    sync.Map                                                       // orderIds whose webhook reached PaymentChanged
	mu      sync.Mutex
}

func newTRig(t testing.TB, fakeOpts ...cryptopaytest.ServerOption) *trig {
	t.Helper()
	srv := pgtest.Need(t)
	fake := cryptopaytest.NewServer(fakeOpts...)
	t.Cleanup(fake.Close)
	r := &trig{srv: srv, pool: srv.Pool(t, 32), fake: fake, client: fake.Client(), table: pgtest.Name("tracked"), credits: pgtest.Name("credits"),
		secret: []byte("tracker-test-secret-0123456789ab")}
	_, err := r.pool.Exec(context.Background(), "CREATE TABLE "+r.credits+
		" (order_id text NOT NULL, seq int NOT NULL, from_status text NOT NULL, to_status text NOT NULL, paid numeric, late boolean NOT NULL,"+
		" from_paid numeric)")
	require.NoError(t, err)
	r.shop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.drop.Load() {
			w.WriteHeader(http.StatusOK) // lost for good: the sender stops
			return
		}
		r.mu.Lock()
		h, chaos := r.hooks, r.chaos
		r.mu.Unlock()
		switch {
		case h == nil: // no tracker yet (a test's first payment): the sender retries later
			w.WriteHeader(http.StatusServiceUnavailable)
		case chaos != nil:
			chaos(w, req, h)
		default:
			h.ServeHTTP(w, req)
		}
	}))
	t.Cleanup(r.shop.Close)
	return r
}

// GetPayment is the trackers' API: it counts the reads and lets a test
// forge an answer.
func (r *trig) GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error) {
	r.reads.Add(1)
	p, err := r.client.GetPayment(ctx, id, opts...)
	if err == nil && r.forge != nil {
		r.forge(p)
	}
	return p, err
}

// config is a tracker configuration with test timings.
func (r *trig) config() pgstore.TrackerConfig {
	cfg := pgstore.TrackerConfig{
		Pool: r.pool, Table: r.table, CreateTable: true,
		OpenEvery: 300 * time.Millisecond, LateMin: 100 * time.Millisecond, LateMax: 400 * time.Millisecond,
		Horizon: 30 * time.Second, Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond,
		OnChange: r.credit,
	}
	pgstore.WithTrackerAPI(&cfg, r)
	return cfg
}

// credit is the merchant's ledger: one row per OnChange, in the tracker's
// transaction, with the paid amounts before and after (the ledger moves by
// their difference, as docs/payment-tracker.md says).
func (r *trig) credit(ctx context.Context, tx pgx.Tx, c *pgstore.PaymentChange) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+r.credits+" VALUES ($1, $2, $3, $4, $5::numeric, $6, $7::numeric)",
		c.OrderID, c.Seq, string(c.From), string(c.To), nullNum(c.ToPaid), c.Late, nullNum(c.FromPaid))
	return err
}

// ledger returns what the merchant booked per order: the sum of
// ToPaid - FromPaid over its OnChange calls, exact.
func (r *trig) ledger(t testing.TB) map[string]decimal.Decimal {
	t.Helper()
	rows, err := r.pool.Query(context.Background(), "SELECT order_id, sum(COALESCE(paid, 0) - COALESCE(from_paid, 0))::text FROM "+
		r.credits+" GROUP BY order_id")
	require.NoError(t, err)
	out := map[string]decimal.Decimal{}
	var o, sum string
	_, err = pgx.ForEachRow(rows, []any{&o, &sum}, func() error {
		out[o] = decimal.RequireFromString(sum)
		return nil
	})
	require.NoError(t, err)
	return out
}

func nullNum(d decimal.NullDecimal) *string {
	if !d.Valid {
		return nil
	}
	s := d.Decimal.String()
	return &s
}

// start builds the tracker (edited by edit), wires the webhook handler to
// it and runs n replicas of it until the test ends.
func (r *trig) start(t *testing.T, replicas int, edit ...func(*pgstore.TrackerConfig)) *pgstore.Tracker {
	t.Helper()
	cfg := r.config()
	for _, e := range edit {
		e(&cfg)
	}
	tr, err := pgstore.NewTracker(context.Background(), cfg)
	require.NoError(t, err)
	h, err := webhook.NewHandler(webhook.Config{Secret: r.secret, Client: r.fake.Client(),
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			if err := tr.PaymentChanged(ctx, p); err != nil {
				return err
			}
			r.seen.Store(p.OrderID, true)
			return nil
		}})
	require.NoError(t, err)
	r.mu.Lock()
	r.hooks, r.tracker = h, tr
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range replicas {
		rep, err := pgstore.NewTracker(context.Background(), cfg)
		require.NoError(t, err)
		wg.Go(func() { _ = rep.Run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return tr
}

// create makes a payment at the fake with the merchant's webhook URL.
func (r *trig) create(t testing.TB, orderID, amount string) *cryptopay.Payment {
	t.Helper()
	u, err := webhook.URL(r.shop.URL, r.secret, orderID)
	require.NoError(t, err)
	p, err := r.fake.Client().CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString(amount), Currency: "usdt", Network: "tron", CustomerID: "cust-1",
		CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: u,
	})
	require.NoError(t, err)
	return p
}

// track records the order's payment in the merchant's transaction.
func (r *trig) track(t testing.TB, tr *pgstore.Tracker, p *cryptopay.Payment) bool {
	t.Helper()
	var created bool
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) (err error) {
		created, err = tr.Track(context.Background(), tx, p)
		return err
	}))
	return created
}

// credited returns the order's credits: to_status in seq order.
func (r *trig) credited(t testing.TB, orderID string) []string {
	t.Helper()
	rows, err := r.pool.Query(context.Background(), "SELECT to_status FROM "+r.credits+" WHERE order_id = $1 ORDER BY seq", orderID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// waitFor polls cond until it holds, for at most 30 s.
func trackWaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *trig) waitStatus(t testing.TB, orderID string, st cryptopay.PaymentStatus) *pgstore.TrackedPayment {
	t.Helper()
	var tp *pgstore.TrackedPayment
	trackWaitFor(t, orderID+" "+string(st), func() bool {
		var err error
		tp, err = r.tracker.Get(context.Background(), orderID)
		return err == nil && tp.Status == st
	})
	return tp
}

func TestTrackerTrackByID(t *testing.T) {
	r := newTRig(t)
	var observed atomic.Int64
	tr := r.start(t, 1, func(c *pgstore.TrackerConfig) {
		c.OpenEvery = time.Hour // webhooks only
		c.Observer = func(pgstore.PaymentChange) { observed.Add(1) }
	})
	p := r.create(t, "ord-id-1", "10")
	require.True(t, r.track(t, tr, p))
	// The create answer is the payment's first known state.
	tracked, err := tr.Get(context.Background(), "ord-id-1")
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, tracked.Status, "a payment just tracked reads waiting")
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))

	tp := r.waitStatus(t, "ord-id-1", cryptopay.PaymentPaid)
	assert.Equal(t, pgstore.TrackClosed, tp.State)
	assert.Equal(t, p.ID, tp.PaymentID)
	assert.True(t, tp.PaidAmount.Decimal.Equal(p.PayAmount))
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-id-1"), "credited once")
	hist, err := tr.History(context.Background(), "ord-id-1")
	require.NoError(t, err)
	require.Len(t, hist, 1)
	assert.Equal(t, cryptopay.PaymentWaiting, hist[0].From, "the first change starts from the create answer's status")
	assert.Equal(t, cryptopay.PaymentPaid, hist[0].To)
	assert.False(t, hist[0].Late)
	assert.Equal(t, int64(1), observed.Load(), "the Observer saw the change once")
	assert.Equal(t, int64(1), r.reads.Load(), "one read, woken by the webhook")
	// The whole cost at the API: the handler's re-read of the one webhook
	// (which also proves the id belongs to the token's orderId) and the
	// tracker's own read under its lease. Both are kept on purpose
	// (docs/payment-tracker.md, "Wake it with webhooks").
	assert.Equal(t, 2, r.fake.Requests(cryptopaytest.RouteGetPayment), "two API reads per webhook: the handler's and the tracker's")
}

func TestTrackDedupeAndConflict(t *testing.T) {
	r := newTRig(t)
	tr, err := pgstore.NewTracker(context.Background(), r.config())
	require.NoError(t, err)
	p := r.create(t, "ord-dup", "10")
	assert.True(t, r.track(t, tr, p))
	assert.False(t, r.track(t, tr, p), "the same payment again: a no-op")

	tests := []struct {
		name, field string
		edit        func(*cryptopay.Payment)
	}{
		{"other id", "PaymentID", func(q *cryptopay.Payment) { q.ID = "0b7e5d0e-1c7d-4e53-9a39-5a4d8a0a0c11" }},
		{"other amount", "PayAmount", func(q *cryptopay.Payment) { q.PayAmount = decimal.RequireFromString("11") }},
		{"other currency", "Currency", func(q *cryptopay.Payment) { q.Currency = "btc" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := *p
			tt.edit(&q)
			err := pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
				_, err := tr.Track(context.Background(), tx, &q)
				return err
			})
			require.ErrorIs(t, err, pgstore.ErrTrackConflict)
			var ce *pgstore.TrackConflictError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
		})
	}
	// An equal amount written differently is the same data.
	q := *p
	q.PayAmount = decimal.RequireFromString(p.PayAmount.StringFixed(6))
	assert.False(t, r.track(t, tr, &q))
	got, err := tr.Get(context.Background(), "ord-dup")
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.PaymentID, "unchanged")

	// Refused before any write.
	err = pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		_, err := tr.Track(context.Background(), tx, &cryptopay.Payment{ID: "not-a-uuid", OrderID: "x", PayAmount: decimal.NewFromInt(1)})
		return err
	})
	require.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	_, err = tr.TrackOrder(context.Background(), nil, "x")
	require.ErrorIs(t, err, pgstore.ErrInvalidOption)
	_, err = tr.Get(context.Background(), "never")
	require.ErrorIs(t, err, pgstore.ErrNotTracked)
}

// The create answer was lost: the order is tracked by orderId alone, and
// its first authenticated webhook gives the payment's id.
func TestTrackerByOrderIDCompletedByWebhook(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 1, func(c *pgstore.TrackerConfig) { c.OpenEvery = time.Hour })
	p := r.create(t, "ord-lost", "10") // the answer "never arrived"
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		created, err := tr.TrackOrder(context.Background(), tx, "ord-lost")
		assert.True(t, created)
		return err
	}))
	got, err := tr.Get(context.Background(), "ord-lost")
	require.NoError(t, err)
	assert.Equal(t, pgstore.TrackUnmatched, got.State)
	assert.Empty(t, got.PaymentID)
	assert.Empty(t, got.Status, "tracked by orderId alone: no status until first seen")

	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	tp := r.waitStatus(t, "ord-lost", cryptopay.PaymentPaid)
	assert.Equal(t, p.ID, tp.PaymentID, "tracked by its id now")
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-lost"))

	// TrackOrder again is a no-op; Track with the payment agrees with it.
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		created, err := tr.TrackOrder(context.Background(), tx, "ord-lost")
		assert.False(t, created)
		return err
	}))
	assert.False(t, r.track(t, tr, p))
}

// An order tracked by orderId alone is not taken for good by a wrong id:
// PaymentChanged given another order's payment (a handler without a
// Client passes the posted body; any caller may pass anything) makes the
// tracker read that id, see another orderId, flag it, and wait unmatched
// again, so the order's real payment, when its webhook comes, is followed
// and credited; the other order's payment is never credited to it.
func TestTrackerUnmatchedNotTakenByAWrongID(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 1, func(c *pgstore.TrackerConfig) { c.OpenEvery = time.Hour })
	other := r.create(t, "ord-someone-else", "10")
	require.NoError(t, r.fake.Pay(other.ID, other.PayAmount))
	p := r.create(t, "ord-lost-2", "10") // the answer "never arrived"
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		_, err := tr.TrackOrder(context.Background(), tx, "ord-lost-2")
		return err
	}))

	require.NoError(t, tr.PaymentChanged(context.Background(), &cryptopay.Payment{ID: other.ID, OrderID: "ord-lost-2",
		Status: cryptopay.PaymentPaid}))
	tp := flagged(t, tr, "ord-lost-2")
	assert.Contains(t, tp.Anomaly, "another orderId")
	assert.True(t, tp.NeedsAction)
	assert.Empty(t, r.credited(t, "ord-lost-2"), "another order's payment is not credited")
	trackWaitFor(t, "unmatched again", func() bool {
		var err error
		tp, err = tr.Get(context.Background(), "ord-lost-2")
		return err == nil && tp.State == pgstore.TrackUnmatched
	})
	assert.Empty(t, tp.PaymentID, "the wrong id is dropped")

	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	tp = r.waitStatus(t, "ord-lost-2", cryptopay.PaymentPaid)
	assert.Equal(t, p.ID, tp.PaymentID, "the real payment is followed")
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-lost-2"), "credited once")
	assert.Contains(t, tp.Anomaly, "another orderId", "the flag stays for a person")
}

// Every webhook is lost for good: the backstop's polls find the payment
// paid, with a bounded number of reads.
func TestTrackerLostWebhooksBackstop(t *testing.T) {
	r := newTRig(t)
	r.drop.Store(true)
	tr := r.start(t, 1)
	p := r.create(t, "ord-nohook", "10")
	r.track(t, tr, p)
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	r.waitStatus(t, "ord-nohook", cryptopay.PaymentPaid)
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-nohook"))
	reads := r.reads.Load()
	assert.Positive(t, reads)
	t.Logf("API reads with every webhook lost: %d", reads)
}

// Partial then full, and a late transfer after expiry caught by the
// backstop with every webhook lost: each change credited once, the late
// one marked late.
func TestTrackerPartialThenFullAndLate(t *testing.T) {
	r := newTRig(t, cryptopaytest.WithPaymentTTL(time.Second))
	r.drop.Store(true)
	tr := r.start(t, 1)

	part := r.create(t, "ord-part", "10")
	late := r.create(t, "ord-late", "10")
	r.track(t, tr, part)
	r.track(t, tr, late)

	require.NoError(t, r.fake.Pay(part.ID, decimal.RequireFromString("4")))
	r.waitStatus(t, "ord-part", cryptopay.PaymentPaidPartial)
	require.NoError(t, r.fake.Pay(part.ID, part.PayAmount.Sub(decimal.RequireFromString("4"))))
	r.waitStatus(t, "ord-part", cryptopay.PaymentPaid)
	assert.Equal(t, []string{"paid_partial", "paid"}, r.credited(t, "ord-part"))

	r.waitStatus(t, "ord-late", cryptopay.PaymentExpired)
	tp := r.waitLate(t, "ord-late")
	assert.Equal(t, pgstore.TrackLate, tp.State)
	require.NoError(t, r.fake.Pay(late.ID, late.PayAmount))
	r.waitStatus(t, "ord-late", cryptopay.PaymentPaid)
	assert.Equal(t, []string{"expired", "paid"}, r.credited(t, "ord-late"))
	hist, err := tr.History(context.Background(), "ord-late")
	require.NoError(t, err)
	last := hist[len(hist)-1]
	assert.Equal(t, cryptopay.PaymentExpired, last.From)
	assert.True(t, last.Late, "expired -> paid is a late payment")
}

func (r *trig) waitLate(t testing.TB, orderID string) *pgstore.TrackedPayment {
	var tp *pgstore.TrackedPayment
	trackWaitFor(t, orderID+" late", func() bool {
		var err error
		tp, err = r.tracker.Get(context.Background(), orderID)
		return err == nil && tp.State == pgstore.TrackLate
	})
	return tp
}

// The API's answer is untrusted: a move the lifecycle table does not allow
// (paid back to waiting) is not recorded and not credited; the payment is
// flagged for a person.
func TestTrackerRefusesDisallowedMove(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 1)
	p := r.create(t, "ord-forge", "10")
	r.track(t, tr, p)
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	r.waitStatus(t, "ord-forge", cryptopay.PaymentPaid)

	r.mu.Lock()
	r.forge = func(q *cryptopay.Payment) {
		q.Status = cryptopay.PaymentWaiting
		q.PaidAmount = decimal.NullDecimal{}
	}
	r.mu.Unlock()
	require.NoError(t, tr.PaymentChanged(context.Background(), p)) // wake it
	var tp *pgstore.TrackedPayment
	trackWaitFor(t, "the anomaly", func() bool {
		var err error
		tp, err = tr.Get(context.Background(), "ord-forge")
		return err == nil && tp.Anomaly != ""
	})
	assert.Equal(t, cryptopay.PaymentPaid, tp.Status, "not recorded")
	assert.True(t, tp.NeedsAction)
	assert.Contains(t, tp.Anomaly, "does not allow")
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-forge"), "not credited")
	list, err := tr.List(context.Background(), pgstore.TrackFilter{NeedsAction: true})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "ord-forge", list[0].OrderID)

	// A clean read later does not hide it; an operator clears it.
	r.mu.Lock()
	r.forge = nil
	r.mu.Unlock()
	reads := r.reads.Load()
	require.NoError(t, tr.PaymentChanged(context.Background(), p))
	trackWaitFor(t, "a clean read", func() bool { return r.reads.Load() > reads })
	anomaly := tp.Anomaly
	for _, bad := range []string{"", " padded ", "\r\nstarts with a break", "bell\x07", "tab\there", "bidi \u202e", "nul\x00", strings.Repeat("x", 1025)} {
		_, err := tr.ClearAnomaly(context.Background(), "ord-forge", "ops", bad)
		var ve *cryptopay.ValidationError
		require.ErrorAs(t, err, &ve, "note %q", bad)
		assert.Equal(t, "note", ve.Field)
	}
	tp, err = tr.Get(context.Background(), "ord-forge")
	require.NoError(t, err)
	assert.Equal(t, anomaly, tp.Anomaly, "a refused note clears nothing")
	moves, err := tr.Moves(context.Background(), "ord-forge")
	require.NoError(t, err)
	assert.Empty(t, moves, "a refused note records no move")
	creditedBefore, err := pgstore.BooksCredited(context.Background(), tr, "ord-forge")
	require.NoError(t, err)
	require.NotNil(t, creditedBefore)
	histBefore, err := tr.History(context.Background(), "ord-forge")
	require.NoError(t, err)
	// A note of several lines, as a browser's text area sends it (\r\n),
	// is kept with its lines, each break as \n.
	cleared, err := tr.ClearAnomaly(context.Background(), "ord-forge", "ops", "checked the dashboard\r\nrefund sent\rticket 42")
	require.NoError(t, err)
	assert.Equal(t, anomaly, cleared)
	moves, err = tr.Moves(context.Background(), "ord-forge")
	require.NoError(t, err)
	require.Len(t, moves, 1, "the move, with its actor")
	assert.Equal(t, "ops", moves[0].ActorID)
	assert.Equal(t, pgstore.MoveClearAnomaly, moves[0].Action)
	assert.Equal(t, anomaly, moves[0].Anomaly)
	assert.Equal(t, "checked the dashboard\nrefund sent\nticket 42", moves[0].Note)
	creditedAfter, err := pgstore.BooksCredited(context.Background(), tr, "ord-forge")
	require.NoError(t, err)
	assert.Equal(t, *creditedBefore, *creditedAfter, "the books check's credited sum is unchanged")
	histAfter, err := tr.History(context.Background(), "ord-forge")
	require.NoError(t, err)
	assert.Equal(t, histBefore, histAfter, "the move is not in the history")
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-forge"), "no OnChange call")
	tp, err = tr.Get(context.Background(), "ord-forge")
	require.NoError(t, err)
	assert.Empty(t, tp.Anomaly)
	assert.False(t, tp.NeedsAction)
	assert.Contains(t, tp.Note, "by \"ops\": checked the dashboard\nrefund sent\nticket 42", "the note names who cleared it, its lines kept")
	assert.Contains(t, tp.Note, "does not allow", "the note keeps the anomaly it cleared")
	cleared, err = tr.ClearAnomaly(context.Background(), "ord-forge", "ops", "again")
	require.NoError(t, err)
	assert.Empty(t, cleared, "nothing left to clear")
	moves, err = tr.Moves(context.Background(), "ord-forge")
	require.NoError(t, err)
	assert.Len(t, moves, 1, "nothing cleared: no move")
	_, err = tr.ClearAnomaly(context.Background(), "never", "ops", "n")
	require.ErrorIs(t, err, pgstore.ErrNotTracked)
}

// A webhook for another payment of a tracked order (a second payment made
// after a lost create answer, say) is not followed but flagged, and the
// flag survives the tracked payment's later reads.
func TestTrackerWebhookForAnotherPayment(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 1)
	first := r.create(t, "ord-two", "10")
	second := r.create(t, "ord-two", "10") // the same orderId, another payment
	r.track(t, tr, first)
	require.NoError(t, r.fake.Pay(second.ID, second.PayAmount))
	var tp *pgstore.TrackedPayment
	trackWaitFor(t, "the flag", func() bool {
		var err error
		tp, err = tr.Get(context.Background(), "ord-two")
		return err == nil && tp.Anomaly != ""
	})
	assert.True(t, tp.NeedsAction)
	assert.Contains(t, tp.Anomaly, second.ID)
	assert.Equal(t, first.ID, tp.PaymentID, "still following the tracked payment")
	require.NoError(t, r.fake.Pay(first.ID, first.PayAmount))
	tp = r.waitStatus(t, "ord-two", cryptopay.PaymentPaid)
	assert.Contains(t, tp.Anomaly, second.ID, "a clean read keeps the flag")
	assert.True(t, tp.NeedsAction)
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-two"))
}

// Three replicas share the payments; each change is credited once.
func TestTrackerReplicas(t *testing.T) {
	r := newTRig(t)
	tr := r.start(t, 3)
	const n = 30
	ps := make([]*cryptopay.Payment, n)
	for i := range ps {
		ps[i] = r.create(t, fmt.Sprintf("ord-rep-%02d", i), "10")
		r.track(t, tr, ps[i])
	}
	for i, p := range ps {
		if i%3 == 0 {
			require.NoError(t, r.fake.Pay(p.ID, decimal.RequireFromString("1")))
		}
		require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	}
	trackWaitFor(t, "every payment paid_over or paid", func() bool {
		c, _, err := tr.Counts(context.Background())
		return err == nil && c[pgstore.TrackClosed] == n
	})
	var dup int
	require.NoError(t, r.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM (SELECT order_id, seq FROM "+r.credits+" GROUP BY 1, 2 HAVING count(*) > 1) d").Scan(&dup))
	assert.Zero(t, dup, "no change credited twice")
	for i, p := range ps {
		want := cryptopay.PaymentPaid
		if i%3 == 0 {
			want = cryptopay.PaymentPaidOver
		}
		got := r.credited(t, p.OrderID)
		require.NotEmpty(t, got)
		assert.Equal(t, string(want), got[len(got)-1], p.OrderID)
	}
}

// stallingAPI stalls its first read until release is closed, past the
// reader's lease and deadline (a slow answer), then answers from the fake.
type stallingAPI struct {
	r       *trig
	started chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func (a *stallingAPI) GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error) {
	if a.once.CompareAndSwap(false, true) {
		close(a.started)
		<-a.release
		return a.r.fake.Client().GetPayment(context.WithoutCancel(ctx), id, opts...)
	}
	return a.r.GetPayment(ctx, id, opts...)
}

// A worker whose answer comes after its lease ended must not record it:
// another replica took the payment over and credited the change; the
// stale worker's write is refused (lease token and compare-and-set), so
// the change is credited once.
func TestTrackerStaleWorkerDoesNotCreditTwice(t *testing.T) {
	r := newTRig(t)
	p := r.create(t, "ord-stale", "10")
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	cfg := r.config()
	cfg.Lease = 500 * time.Millisecond
	stall := &stallingAPI{r: r, started: make(chan struct{}), release: make(chan struct{})}
	pgstore.WithTrackerAPI(&cfg, stall)
	a, err := pgstore.NewTracker(context.Background(), cfg)
	require.NoError(t, err)
	r.track(t, a, p)
	_, err = r.pool.Exec(context.Background(), "UPDATE "+r.table+" SET next_at = now()")
	require.NoError(t, err)
	actx, stopA := context.WithCancel(context.Background())
	aDone := make(chan struct{})
	go func() { _ = a.Run(actx); close(aDone) }()
	<-stall.started // A holds the payment and waits for its answer

	r.start(t, 1, func(c *pgstore.TrackerConfig) { c.Lease = 500 * time.Millisecond }) // B
	r.waitStatus(t, "ord-stale", cryptopay.PaymentPaid)
	close(stall.release) // A's answer arrives, long after its lease
	stopA()
	<-aDone // A's step has ended: it recorded, or was refused
	assert.Equal(t, []string{"paid"}, r.credited(t, "ord-stale"), "credited once")
	hist, err := a.History(context.Background(), "ord-stale")
	require.NoError(t, err)
	assert.Len(t, hist, 1)
}

// The change's transaction runs with synchronous_commit on although the
// test server's default is off: a credit the merchant committed is on disk
// before the tracker (and the Observer) moves on.
func TestTrackerRecordsWithSynchronousCommit(t *testing.T) {
	r := newTRig(t)
	var def string
	require.NoError(t, r.pool.QueryRow(context.Background(), "SHOW synchronous_commit").Scan(&def))
	require.Equal(t, "off", def, "the test server's default, so the test can fail")
	var seen sync.Map
	tr := r.start(t, 1, func(c *pgstore.TrackerConfig) {
		c.OnChange = func(ctx context.Context, tx pgx.Tx, ch *pgstore.PaymentChange) error {
			var sc string
			if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil {
				return err
			}
			seen.Store(ch.Seq, sc)
			return r.credit(ctx, tx, ch)
		}
	})
	p := r.create(t, "ord-sync", "10")
	r.track(t, tr, p)
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	r.waitStatus(t, "ord-sync", cryptopay.PaymentPaid)
	n := 0
	seen.Range(func(k, v any) bool {
		n++
		assert.Equal(t, "on", v, "change %v", k)
		return true
	})
	assert.Positive(t, n)
}

// TestTrackerRecordsMerchantAmount: each recorded change keeps the
// provider's merchantAmount (paid minus the payment's fee at the fake),
// on the tracked payment and in its history, exactly.
func TestTrackerRecordsMerchantAmount(t *testing.T) {
	r := newTRig(t)
	r.drop.Store(true)
	tr := r.start(t, 1)
	p := r.create(t, "ord-merchant", "10") // the fee, 1 %, is the merchant's: 0.1
	r.track(t, tr, p)
	require.NoError(t, r.fake.Pay(p.ID, decimal.RequireFromString("4")))
	tp := r.waitStatus(t, "ord-merchant", cryptopay.PaymentPaidPartial)
	assert.Equal(t, "3.9", tp.MerchantAmount.Decimal.String())
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount.Sub(decimal.RequireFromString("4"))))
	tp = r.waitStatus(t, "ord-merchant", cryptopay.PaymentPaid)
	require.True(t, tp.MerchantAmount.Valid)
	assert.Equal(t, "9.9", tp.MerchantAmount.Decimal.String())
	hist, err := tr.History(context.Background(), "ord-merchant")
	require.NoError(t, err)
	require.Len(t, hist, 2)
	assert.Equal(t, "3.9", hist[0].MerchantAmount.Decimal.String())
	assert.Equal(t, "9.9", hist[1].MerchantAmount.Decimal.String())
}

// The tracker checks what it can in each answer (docs/payment-tracker.md,
// "Keeping your books"): an answer it cannot book is refused (not
// recorded, nothing booked, flagged for a person); one whose money is real
// but whose status disagrees with it is recorded and flagged; an expiredAt
// that moves is flagged and never moves the schedule. Each payment is 10
// usdt on tron, waiting at the fake; the answers are forged.
func TestTrackerChecksAnswers(t *testing.T) {
	ten, zero := decimal.RequireFromString("10"), decimal.Zero
	epoch := time.Unix(0, 0).UTC()
	tests := []struct {
		name     string
		forge    func(q *cryptopay.Payment)
		recorded cryptopay.PaymentStatus // the status the tracker holds after the read
		booked   decimal.Decimal         // the merchant's ledger
		anomaly  string
	}{
		{"negative paid", forged(cryptopay.PaymentPaidPartial, "-100"), cryptopay.PaymentWaiting, zero, "negative paid amount"},
		{"another currency and network", func(q *cryptopay.Payment) {
			forged(cryptopay.PaymentPaid, "10")(q)
			q.Currency, q.Network = "btc", "bitcoin"
		}, cryptopay.PaymentWaiting, zero, "answered in btc on bitcoin"},
		{"another payAmount", func(q *cryptopay.Payment) {
			forged(cryptopay.PaymentPaid, "1")(q)
			q.PayAmount = decimal.RequireFromString("1")
		}, cryptopay.PaymentWaiting, zero, "payAmount 1"},
		{"paid below payAmount", forged(cryptopay.PaymentPaid, "0.01"), cryptopay.PaymentWaiting, zero, "a success below the amount due"},
		{"paid_over below payAmount", forged(cryptopay.PaymentPaidOver, "9.99"), cryptopay.PaymentWaiting, zero, "a success below the amount due"},
		{"paid_over at payAmount", forged(cryptopay.PaymentPaidOver, "10"), cryptopay.PaymentPaidOver, ten, "paid_over with 10 paid of 10 due"},
		{"paid_partial at payAmount", forged(cryptopay.PaymentPaidPartial, "10"), cryptopay.PaymentPaidPartial, ten, "paid_partial with 10 paid of 10 due"},
		{"expiredAt moved to 1970", func(q *cryptopay.Payment) { q.ExpiredAt = epoch }, cryptopay.PaymentWaiting, zero, "expiredAt 1970-01-01T00:00:00Z"},
		{"expiredAt moved, and paid_partial at payAmount", func(q *cryptopay.Payment) { // the first flag must not hide the second
			forged(cryptopay.PaymentPaidPartial, "10")(q)
			q.ExpiredAt = epoch
		}, cryptopay.PaymentPaidPartial, ten, "paid_partial with 10 paid of 10 due"},
	}
	r := newTRig(t)
	forges := map[string]func(*cryptopay.Payment){}
	for i, tt := range tests {
		forges[fmt.Sprintf("ord-check-%d", i)] = tt.forge
	}
	r.mu.Lock()
	r.forge = func(q *cryptopay.Payment) { forges[q.OrderID](q) }
	r.mu.Unlock()
	tr := r.start(t, 1) // the backstop reads every 300 ms; no webhook needed
	tracked := map[string]*cryptopay.Payment{}
	for order := range forges {
		tracked[order] = r.create(t, order, "10")
		r.track(t, tr, tracked[order])
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order := fmt.Sprintf("ord-check-%d", i)
			var tp *pgstore.TrackedPayment
			trackWaitFor(t, order+" flagged", func() bool {
				var err error
				tp, err = tr.Get(context.Background(), order)
				return err == nil && tp.Anomaly != ""
			})
			assert.Contains(t, tp.Anomaly, tt.anomaly)
			assert.True(t, tp.NeedsAction)
			assert.Equal(t, tt.recorded, tp.Status)
			booked := r.ledger(t)[order]
			assert.True(t, booked.Equal(tt.booked), "booked %s, want %s", booked, tt.booked)
			assert.True(t, tp.ExpiredAt.Equal(tracked[order].ExpiredAt), "the tracked expiredAt is kept: %v", tp.ExpiredAt)
			if !tt.recorded.IsFinal() && !tt.recorded.IsSuccess() {
				assert.Equal(t, pgstore.TrackOpen, tp.State, "still polled")
				assert.False(t, tp.NextAt.IsZero(), "still polled")
			}
		})
	}
}

// forged makes an answer say st with paid paid.
func forged(st cryptopay.PaymentStatus, paid string) func(*cryptopay.Payment) {
	return func(q *cryptopay.Payment) {
		q.Status, q.PaidAmount = st, decimal.NewNullDecimal(decimal.RequireFromString(paid))
	}
}

// gateAPI holds the tracker's first read until release is closed (the
// worker then holds the payment's lease, mid-read), then answers from the
// fake.
type gateAPI struct {
	r                *trig
	started, release chan struct{}
	once             atomic.Bool
}

func newGateAPI(r *trig) *gateAPI {
	return &gateAPI{r: r, started: make(chan struct{}), release: make(chan struct{})}
}

func (a *gateAPI) GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error) {
	if a.once.CompareAndSwap(false, true) {
		close(a.started)
		<-a.release
	}
	return a.r.GetPayment(ctx, id, opts...)
}

// raceDuringRead tracks p, makes it due with the row as set (an UPDATE's
// SET list), runs a tracker whose first read waits at the gate, calls
// during() while the worker holds the payment mid-read, then lets the read
// finish and waits for the worker's write (the lease released).
func (r *trig) raceDuringRead(t *testing.T, p *cryptopay.Payment, set string, during func(tr *pgstore.Tracker)) *pgstore.TrackedPayment {
	t.Helper()
	gate := newGateAPI(r)
	tr := r.start(t, 0, func(c *pgstore.TrackerConfig) {
		c.OpenEvery = time.Hour
		pgstore.WithTrackerAPI(c, gate)
	})
	r.track(t, tr, p)
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.table+" SET next_at = now(), "+set+" WHERE order_id = $1", p.OrderID)
	require.NoError(t, err)
	t.Cleanup(runTracker(tr))
	<-gate.started
	during(tr)
	close(gate.release)
	waitWritten(t, r.pool, r.table, p.OrderID)
	tp, err := tr.Get(context.Background(), p.OrderID)
	require.NoError(t, err)
	return tp
}

// A worker's routine write never puts back the anomaly it read when it
// claimed the payment: a flag a webhook set during its read stays, and an
// anomaly an operator cleared during its read stays cleared.
func TestTrackerAnomalyRaces(t *testing.T) {
	// The read shows what the row holds (waiting, nothing paid): no change,
	// the worker's routine schedule write.
	const unchanged = "status = 'waiting', paid_amount = 0"
	t.Run("a webhook's flag set during a read stays", func(t *testing.T) {
		r := newTRig(t)
		p := r.create(t, "ord-race-flag", "10")
		second := r.create(t, "ord-race-flag", "10") // the customer paid a second payment of the order
		tp := r.raceDuringRead(t, p, unchanged, func(tr *pgstore.Tracker) {
			require.NoError(t, tr.PaymentChanged(context.Background(), second))
			got, err := tr.Get(context.Background(), "ord-race-flag")
			require.NoError(t, err)
			require.Contains(t, got.Anomaly, second.ID, "flagged while the worker reads")
		})
		assert.Contains(t, tp.Anomaly, second.ID, "the worker's write kept the flag")
		assert.True(t, tp.NeedsAction)
	})
	t.Run("an anomaly cleared during a read stays cleared", func(t *testing.T) {
		r := newTRig(t)
		p := r.create(t, "ord-race-clear", "10")
		tp := r.raceDuringRead(t, p, unchanged+", anomaly = 'an old flag', needs_action = true", func(tr *pgstore.Tracker) {
			cleared, err := tr.ClearAnomaly(context.Background(), "ord-race-clear", "ops", "looked, all fine")
			require.NoError(t, err)
			require.Equal(t, "an old flag", cleared)
		})
		assert.Empty(t, tp.Anomaly, "the worker's write did not bring the cleared anomaly back")
		assert.False(t, tp.NeedsAction)
		assert.Contains(t, tp.Note, "looked, all fine")
	})
}

// An order tracked by orderId alone has no status until it is first seen;
// Track with its create answer then completes it, the answer its first
// state (waiting).
func TestTrackCompletesTrackOrder(t *testing.T) {
	r := newTRig(t)
	tr, err := pgstore.NewTracker(context.Background(), r.config())
	require.NoError(t, err)
	p := r.create(t, "ord-complete", "10")
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		_, err := tr.TrackOrder(context.Background(), tx, "ord-complete")
		return err
	}))
	got, err := tr.Get(context.Background(), "ord-complete")
	require.NoError(t, err)
	assert.Empty(t, got.Status, "not seen yet")
	assert.False(t, r.track(t, tr, p), "completed, not created")
	got, err = tr.Get(context.Background(), "ord-complete")
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.PaymentID)
	assert.Equal(t, cryptopay.PaymentWaiting, got.Status, "the create answer is the first state")
	assert.Equal(t, pgstore.TrackOpen, got.State)
}

// runTracker runs tr until the returned stop is called; stop returns once
// Run has (every payment in hand done with).
func runTracker(tr *pgstore.Tracker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// waitWritten waits until no worker holds orderID's payment: the read in
// hand has been written (or the lease given back).
func waitWritten(t testing.TB, pool *pgxpool.Pool, table, orderID string) {
	t.Helper()
	trackWaitFor(t, orderID+" written", func() bool {
		var free bool
		err := pool.QueryRow(context.Background(), "SELECT lease_token IS NULL FROM "+table+" WHERE order_id = $1", orderID).Scan(&free)
		return err == nil && free
	})
}

// TestTrackerExpiredAtPrecision: a server whose times carry more digits
// than PostgreSQL keeps (.NET writes seven, 100 ns ticks) sends the same
// expiredAt on every read, yet the tracked one, stored to the
// microsecond, is not Equal to it. That is not an expiredAt that moves:
// the payment is followed to paid with no anomaly and nothing for a
// person to do.
func TestTrackerExpiredAtPrecision(t *testing.T) {
	r := newTRig(t)
	r.drop.Store(true) // the backstop's reads only
	r.mu.Lock()
	r.forge = func(q *cryptopay.Payment) { q.ExpiredAt = q.ExpiredAt.Add(700 * time.Nanosecond) }
	r.mu.Unlock()
	tr := r.start(t, 1)
	p := r.create(t, "ord-ticks", "10")
	p.ExpiredAt = p.ExpiredAt.Add(700 * time.Nanosecond) // the create answer's seven digits
	r.track(t, tr, p)
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount))
	tp := r.waitStatus(t, "ord-ticks", cryptopay.PaymentPaid)
	assert.Empty(t, tp.Anomaly)
	assert.False(t, tp.NeedsAction)
	assert.True(t, r.ledger(t)["ord-ticks"].Equal(p.PayAmount), "booked %s", r.ledger(t)["ord-ticks"])
}

// TestTrackerByOrderIDHostileKeys: a payment tracked by orderId alone
// takes its currency and network from the first answer it records. An
// answer whose currency holds a NUL and 64 KiB of text is refused
// (flagged, nothing booked, the row not bloated) instead of failing every
// write in silence; the next honest answer is recorded and booked.
func TestTrackerByOrderIDHostileKeys(t *testing.T) {
	r := newTRig(t)
	r.mu.Lock()
	r.forge = func(q *cryptopay.Payment) { q.Currency = "usdt\x00" + strings.Repeat("x", 64<<10) }
	r.mu.Unlock()
	tr := r.start(t, 1)
	p := r.create(t, "ord-keys", "10")
	require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
		_, err := tr.TrackOrder(context.Background(), tx, "ord-keys")
		return err
	}))
	require.NoError(t, r.fake.Pay(p.ID, p.PayAmount)) // its webhook gives the id
	tp := flagged(t, tr, "ord-keys")
	assert.Contains(t, tp.Anomaly, "not a currency or network key")
	assert.Less(t, len(tp.Anomaly), 4<<10)
	assert.Empty(t, tp.Currency)
	assert.Empty(t, string(tp.Status))
	assert.True(t, tp.NeedsAction)
	assert.True(t, r.ledger(t)["ord-keys"].IsZero(), "nothing booked")

	r.mu.Lock()
	r.forge = nil
	r.mu.Unlock()
	require.NoError(t, tr.PaymentChanged(context.Background(), p))
	tp = r.waitStatus(t, "ord-keys", cryptopay.PaymentPaid)
	assert.Equal(t, "usdt", tp.Currency)
	assert.True(t, r.ledger(t)["ord-keys"].Equal(p.PayAmount))
}

// flagged waits until orderID's tracked payment carries an anomaly.
func flagged(t testing.TB, tr *pgstore.Tracker, orderID string) *pgstore.TrackedPayment {
	t.Helper()
	var tp *pgstore.TrackedPayment
	trackWaitFor(t, orderID+" flagged", func() bool {
		var err error
		tp, err = tr.Get(context.Background(), orderID)
		return err == nil && tp.Anomaly != ""
	})
	return tp
}
