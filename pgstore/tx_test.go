package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

var secret = []byte("pgstore-test-webhook-secret-0123456789")

// event is one payment webhook: its body and the URL it is posted to.
type event struct {
	id, orderID, status string
	body                []byte
	url                 string
}

func paymentEvent(t *testing.T, status string) event {
	t.Helper()
	ev := event{id: uuid.NewString(), orderID: "order-" + uuid.NewString()[:8], status: status}
	var err error
	ev.body, err = json.Marshal(map[string]string{"paymentId": ev.id, "orderId": ev.orderID, "status": status})
	require.NoError(t, err)
	ev.url, err = webhook.URL("http://merchant.test/hooks", secret, ev.orderID)
	require.NoError(t, err)
	return ev
}

func (ev event) key() string { return "payment/" + ev.id + "/" + ev.status }

// post delivers ev to h and returns the answer's status code.
func post(ctx context.Context, h http.Handler, ev event) int {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, ev.url, bytes.NewReader(ev.body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// merchant is the merchant's own table: one row per credit, with no
// constraint, so a double effect shows as two rows.
type merchant struct {
	f     *fixture
	table string
}

func (f *fixture) merchant(t *testing.T) *merchant {
	t.Helper()
	m := &merchant{f: f, table: pgtest.Name("credits")}
	_, err := f.pool.Exec(context.Background(), "CREATE TABLE "+m.table+" (payment_id text NOT NULL, status text NOT NULL)")
	require.NoError(t, err)
	return m
}

// credit is the merchant's write for a payment.
func (m *merchant) credit(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+m.table+" VALUES ($1, $2)", p.ID, string(p.Status))
	return err
}

func (m *merchant) count(t *testing.T, id string) int {
	t.Helper()
	var n int
	require.NoError(t, m.f.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+m.table+" WHERE payment_id = $1", id).Scan(&n))
	return n
}

// state reads the event's dedupe row: "none", "busy" or "done".
func (f *fixture) state(t *testing.T, key string) string {
	t.Helper()
	var done bool
	err := f.pool.QueryRow(context.Background(), "SELECT done FROM "+f.table+" WHERE key = $1", []byte(key)).Scan(&done)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "none"
	case err != nil:
		t.Fatal(err)
	case done:
		return "done"
	}
	return "busy"
}

// handler is a webhook handler with the transactional callback fn on st.
func handler(t *testing.T, st *pgstore.DedupeStore, fn func(context.Context, pgx.Tx, *cryptopay.Payment) error) *webhook.Handler {
	t.Helper()
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret, Dedupe: st, OnPayment: pgstore.OnPayment(st, fn),
	})
	require.NoError(t, err)
	return h
}

func TestTxDelivery(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// after runs in the callback after the merchant's write; it may
		// fail, panic, cancel the request or kill the connection.
		after     func(ctx context.Context, tx pgx.Tx, f *fixture, cancel context.CancelFunc) error
		wantCode  int
		wantWrite int
		wantState string
	}{
		{"commits the write and the done mark", func(context.Context, pgx.Tx, *fixture, context.CancelFunc) error { return nil }, 200, 1, "done"},
		{"error after the write", func(context.Context, pgx.Tx, *fixture, context.CancelFunc) error { return boom }, 500, 0, "none"},
		{"panic after the write", func(context.Context, pgx.Tx, *fixture, context.CancelFunc) error { panic("boom") }, 500, 0, "none"},
		{"request cancelled mid-transaction", func(ctx context.Context, tx pgx.Tx, _ *fixture, cancel context.CancelFunc) error {
			cancel()
			_, err := tx.Exec(ctx, "SELECT 1")
			return err
		}, 500, 0, "none"},
		{"request cancelled, callback ignores it", func(_ context.Context, _ pgx.Tx, _ *fixture, cancel context.CancelFunc) error {
			cancel()
			return nil
		}, 500, 0, "none"},
		{"connection killed mid-transaction", func(ctx context.Context, tx pgx.Tx, f *fixture, _ context.CancelFunc) error {
			pid := tx.Conn().PgConn().PID()
			_, err := f.pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
			if err != nil {
				return err
			}
			return nil
		}, 500, 0, "none"},
		{"connection closed by the client mid-transaction", func(ctx context.Context, tx pgx.Tx, _ *fixture, _ context.CancelFunc) error {
			return tx.Conn().Close(ctx)
		}, 500, 0, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			m := f.merchant(t)
			st := f.store(t, pgstore.WithLease(5*time.Second))
			var calls atomic.Int32
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := handler(t, st, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
				if calls.Add(1) > 1 {
					return m.credit(ctx, tx, p) // a redelivery behaves
				}
				if err := m.credit(ctx, tx, p); err != nil {
					return err
				}
				return tc.after(ctx, tx, f, cancel)
			})
			ev := paymentEvent(t, "paid")

			assert.Equal(t, tc.wantCode, post(ctx, h, ev))
			assert.Equal(t, tc.wantWrite, m.count(t, ev.id), "merchant rows after the first delivery")
			assert.Equal(t, tc.wantState, f.state(t, ev.key()), "dedupe row after the first delivery")

			// The sender redelivers (to another replica): exactly one
			// write in the end, and the event is done.
			other := handler(t, f.store(t), func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
				calls.Add(1)
				return m.credit(ctx, tx, p)
			})
			assert.Equal(t, http.StatusOK, post(context.Background(), other, ev))
			assert.Equal(t, http.StatusOK, post(context.Background(), other, ev))
			assert.Equal(t, 1, m.count(t, ev.id), "merchant rows after redeliveries")
			assert.Equal(t, "done", f.state(t, ev.key()))
			wantCalls := int32(2)
			if tc.wantWrite == 1 {
				wantCalls = 1
			}
			assert.Equal(t, wantCalls, calls.Load(), "callback runs")
		})
	}
}

// Concurrent deliveries of one event, each on its own replica's store and
// some bypassing the handler's claim altogether, write once.
func TestTxConcurrentDeliveries(t *testing.T) {
	f := setup(t)
	m := f.merchant(t)
	ev := paymentEvent(t, "paid")
	var calls atomic.Int32
	slowCredit := func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
		calls.Add(1)
		if err := m.credit(ctx, tx, p); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // widen the window
		return nil
	}
	const n = 16
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[int]int{}
		errs  []error
		start = make(chan struct{})
	)
	for i := range n {
		st := f.store(t)
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				code := post(context.Background(), handler(t, st, slowCredit), ev)
				mu.Lock()
				codes[code]++
				mu.Unlock()
				return
			}
			// Straight to the transactional callback, with no claim.
			err := pgstore.OnPayment(st, slowCredit)(context.Background(), &cryptopay.Payment{ID: ev.id, OrderID: ev.orderID, Status: cryptopay.PaymentPaid})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, 1, m.count(t, ev.id), "merchant rows")
	assert.Equal(t, "done", f.state(t, ev.key()))
	assert.Equal(t, int32(1), calls.Load(), "the callback ran once: the others found the event done under the lock")
	assert.Zero(t, codes[http.StatusInternalServerError], "answers: %v", codes)
	assert.Equal(t, n/2, codes[http.StatusOK]+codes[http.StatusServiceUnavailable], "answers: %v", codes)
}

// The store's Complete after a transactional callback only forgets the
// claim; the handler does not log a lost lease.
func TestTxCompleteAfterCommit(t *testing.T) {
	f := setup(t)
	m := f.merchant(t)
	st := f.store(t)
	ev := paymentEvent(t, "paid")
	ctx := context.Background()
	claim, err := st.Claim(ctx, ev.key())
	require.NoError(t, err)
	require.Equal(t, webhook.DedupeClaimed, claim)
	p := &cryptopay.Payment{ID: ev.id, OrderID: ev.orderID, Status: cryptopay.PaymentPaid}
	require.NoError(t, pgstore.OnPayment(st, m.credit)(ctx, p))
	require.NoError(t, st.Complete(ctx, ev.key()), "Complete after the transaction")
	assert.ErrorIs(t, st.Complete(ctx, ev.key()), webhook.ErrDedupeLeaseLost, "a second Complete: the claim is gone")
	claim, err = st.Claim(ctx, ev.key())
	require.NoError(t, err)
	assert.Equal(t, webhook.DedupeSeen, claim)
}

func TestTxMisuse(t *testing.T) {
	f := setup(t)
	st := f.store(t)
	ctx := context.Background()
	p := &cryptopay.Payment{ID: uuid.NewString(), Status: cryptopay.PaymentPaid}
	assert.ErrorIs(t, pgstore.OnPayment(nil, func(context.Context, pgx.Tx, *cryptopay.Payment) error { return nil })(ctx, p), pgstore.ErrInvalidOption)
	assert.ErrorIs(t, pgstore.OnPayment(st, nil)(ctx, p), pgstore.ErrInvalidOption)
	assert.Error(t, pgstore.OnPayment(st, func(context.Context, pgx.Tx, *cryptopay.Payment) error { return nil })(ctx, nil))
	assert.ErrorIs(t, pgstore.OnPayout(nil, func(context.Context, pgx.Tx, *cryptopay.Payout) error { return nil })(ctx, &cryptopay.Payout{}), pgstore.ErrInvalidOption)
	assert.Error(t, pgstore.OnPayout(st, func(context.Context, pgx.Tx, *cryptopay.Payout) error { return nil })(ctx, nil))
}

// A payout event goes through OnPayout the same way.
func TestTxPayout(t *testing.T) {
	f := setup(t)
	st := f.store(t)
	tbl := pgtest.Name("payouts")
	ctx := context.Background()
	_, err := f.pool.Exec(ctx, "CREATE TABLE "+tbl+" (payout_id text, status text)")
	require.NoError(t, err)
	fn := pgstore.OnPayout(st, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payout) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1, $2)", p.ID, string(p.Status))
		return err
	})
	p := &cryptopay.Payout{ID: "po_" + uuid.NewString(), Status: cryptopay.PayoutPaid}
	require.NoError(t, fn(ctx, p))
	require.NoError(t, fn(ctx, p))
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&n))
	assert.Equal(t, 1, n)
	assert.Equal(t, "done", f.state(t, "payout/"+p.ID+"/paid"))
}

// Crash points of a replica delivering an event transactionally, each
// simulated by a child process that exits (os.Exit: no deferred code, no
// Release, connections dropped) at that point.
var crashPoints = []struct {
	name      string
	wantWrite int // merchant rows right after the crash
}{
	{"after-claim", 0},
	{"after-write", 0},
	{"after-commit", 1},
	{"after-complete", 1},
}

const crashEnv = "PGSTORE_CRASH"

// crashStore exits the process at a chosen point around the store calls.
type crashStore struct {
	*pgstore.DedupeStore
	point string
}

func (s crashStore) Claim(ctx context.Context, key string) (webhook.DedupeClaim, error) {
	c, err := s.DedupeStore.Claim(ctx, key)
	if s.point == "after-claim" {
		os.Exit(7)
	}
	return c, err
}

func (s crashStore) Complete(ctx context.Context, key string) error {
	if s.point == "after-commit" {
		os.Exit(7)
	}
	err := s.DedupeStore.Complete(ctx, key)
	if s.point == "after-complete" {
		os.Exit(7)
	}
	return err
}

// TestTxCrash runs a child process per crash point, then redelivers the
// event like the sender would, to another replica, until it is
// acknowledged: the merchant's write happens exactly once.
func TestTxCrash(t *testing.T) {
	if point := os.Getenv(crashEnv); point != "" {
		crashChild(t, point)
		return
	}
	for _, cp := range crashPoints {
		t.Run(cp.name, func(t *testing.T) {
			f := setup(t)
			m := f.merchant(t)
			ev := paymentEvent(t, "paid")
			const lease = 300 * time.Millisecond
			cmd := exec.Command(os.Args[0], "-test.run=^TestTxCrash$", "-test.count=1")
			cmd.Env = append(f.srv.ChildEnv(), crashEnv+"="+cp.name,
				"PGSTORE_TABLE="+f.table, "PGSTORE_MERCHANT="+m.table,
				"PGSTORE_EVENT="+string(ev.body), "PGSTORE_URL="+ev.url, fmt.Sprintf("PGSTORE_LEASE=%d", lease))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "child output:\n%s", out)
			require.Equal(t, 7, exit.ExitCode(), "the child did not crash where asked; output:\n%s", out)
			assert.Equal(t, cp.wantWrite, m.count(t, ev.id), "merchant rows right after the crash")

			// The sender retries on another replica until it gets a 200.
			h := handler(t, f.store(t, pgstore.WithLease(lease)), m.credit)
			deadline := time.Now().Add(10 * time.Second)
			code := 0
			for time.Now().Before(deadline) {
				if code = post(context.Background(), h, ev); code == http.StatusOK {
					break
				}
				time.Sleep(25 * time.Millisecond)
			}
			require.Equal(t, http.StatusOK, code, "the redelivery was never acknowledged")
			assert.Equal(t, 1, m.count(t, ev.id), "merchant rows after the redelivery: no double effect, no lost event")
			assert.Equal(t, "done", f.state(t, ev.key()))
		})
	}
}

func crashChild(t *testing.T, point string) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 4)
	var lease time.Duration
	_, err := fmt.Sscan(os.Getenv("PGSTORE_LEASE"), &lease)
	require.NoError(t, err)
	st, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(os.Getenv("PGSTORE_TABLE")), pgstore.WithLease(lease))
	require.NoError(t, err)
	tbl := os.Getenv("PGSTORE_MERCHANT")
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Dedupe: crashStore{DedupeStore: st, point: point},
		OnPayment: pgstore.OnPayment(st, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
			if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1, $2)", p.ID, string(p.Status)); err != nil {
				return err
			}
			if point == "after-write" {
				os.Exit(7)
			}
			return nil
		}),
	})
	require.NoError(t, err)
	ev := event{body: []byte(os.Getenv("PGSTORE_EVENT")), url: os.Getenv("PGSTORE_URL")}
	code := post(context.Background(), h, ev)
	t.Fatalf("the child was meant to crash at %s, but the delivery ended with %d", point, code)
}

// While a transactional callback holds its event's row lock, another
// replica's Claim of the same event answers in progress without waiting.
func TestTxClaimDuringCallback(t *testing.T) {
	f := setup(t)
	m := f.merchant(t)
	st, other := f.store(t), f.store(t)
	ev := paymentEvent(t, "paid")
	var (
		got    webhook.DedupeClaim
		gotErr error
	)
	h := handler(t, st, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
		// A bound for a Claim that would wait on the row lock (the
		// callback then never ends): long enough that a slow answer on a
		// loaded machine is not taken for one.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		got, gotErr = other.Claim(cctx, ev.key())
		return m.credit(ctx, tx, p)
	})
	require.Equal(t, http.StatusOK, post(context.Background(), h, ev))
	require.NoError(t, gotErr)
	assert.Equal(t, webhook.DedupeInProgress, got)
}
