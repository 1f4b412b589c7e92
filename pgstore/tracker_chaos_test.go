package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
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
	"github.com/cryptopay/cryptopay-go/webhook"
)

// trackerChaosN is how many payments TestTrackerChaos follows. The default
// keeps CI short on a small machine; the figure is 2,000:
//
//	go test -run TestTrackerChaos -tracker.chaos.n=2000 ./pgstore
var trackerChaosN = flag.Int("tracker.chaos.n", 120, "payments in TestTrackerChaos")

// trackerChaosSeed seeds TestTrackerChaos's plan: how each payment is paid,
// which create answers are lost, and when each process is killed. 0 draws
// a new seed; the test prints it. (The moments things meet, across
// processes and PostgreSQL, are not reproducible; the plan is.)
var trackerChaosSeed = flag.Uint64("tracker.chaos.seed", 0, "seed of TestTrackerChaos's plan (0: a new one, printed)")

// trackerChaosTimed is the kill "at a random moment": the parent SIGKILLs
// the process after a random delay, wherever it is (claiming, reading the
// API, between the read and the record, committing).
const trackerChaosTimed = "timed"

// The windows a tracker process is killed in: the change's row written,
// inside the merchant's callback (its credit written), before the commit.
var trackerChaosPoints = []string{"change-recorded", "in-callback", "before-commit"}

const (
	trackerChaosWorkers = 3
	trackerChaosEnv     = "TRACKER_CHAOS_WORKER"
)

// How a customer pays a chaos payment.
const (
	payFull = iota
	payPartialThenFull
	payAfterExpiry
	payNever
	payPartialConfirmingRest // part, then the processor's confirming, then the rest
	payHows                  // how many ways
)

// Three tracker processes share the payments; each is SIGKILLed in every
// window that matters (by itself, at a test hook, at a random hit of it)
// and up to twice more at random moments (by the test), in a random order
// drawn from the printed seed, and started again each time.
// Customers pay in full, partially then in full, partially then (the
// processor's confirming) the rest, after expiry, or never.
// The merchant's endpoint loses 30% of webhook deliveries for good,
// processes 10% twice and 20% late and out of order; 5% of create answers
// are lost (the fake made the payment; the merchant tracks the orderId
// alone); PostgreSQL crashes once (SIGQUIT: an immediate shutdown, then
// crash recovery). Every payment the fake shows paid must be credited
// exactly once, no unpaid one credited, every late one credited as late,
// every lost-create payment that got a webhook tracked by its id, and the
// merchant's ledger (ToPaid - FromPaid summed over OnChange) must equal
// each payment's paid amount at the fake, to the last digit.
func TestTrackerChaos(t *testing.T) {
	if os.Getenv(trackerChaosEnv) != "" {
		trackerChaosWorker(t)
		return
	}
	n := *trackerChaosN
	seed := *trackerChaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("tracker chaos: seed %d (again with -tracker.chaos.seed=%d)", seed, seed)
	plan := rand.New(rand.NewPCG(seed, 0))
	start := time.Now()
	r := newTRig(t, cryptopaytest.WithPaymentTTL(4*time.Second), cryptopaytest.WithWebhookRetry(8, 50*time.Millisecond))
	tr := r.start(t, 0) // the webhook endpoint only; the children run
	var drops, dups, late atomic.Int64
	var async sync.WaitGroup
	t.Cleanup(async.Wait)
	r.mu.Lock()
	r.chaos = func(w http.ResponseWriter, req *http.Request, h http.Handler) {
		body, _ := io.ReadAll(req.Body)
		again := func(w http.ResponseWriter) {
			rq := req.Clone(context.WithoutCancel(req.Context()))
			rq.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, rq)
		}
		switch x := rand.IntN(100); {
		case x < 30:
			drops.Add(1)
			w.WriteHeader(http.StatusOK) // lost for good
		case x < 40:
			dups.Add(1)
			again(httptest.NewRecorder())
			again(w)
		case x < 60:
			late.Add(1)
			w.WriteHeader(http.StatusOK)
			async.Go(func() {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
				again(httptest.NewRecorder())
			})
		default:
			again(w)
		}
	}
	r.mu.Unlock()

	ps := r.chaosPayments(t, tr, n, plan)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, trackerChaosWorkers)
	for slot := range trackerChaosWorkers {
		kills := trackerChaosKills(rand.New(rand.NewPCG(seed, uint64(slot)+1)))
		t.Logf("tracker chaos: process %d is killed at %v", slot, kills)
		wg.Go(func() { errs[slot] = r.trackerChaosSlot(ctx, slot, dir, kills) })
	}
	var paying sync.WaitGroup
	for _, p := range ps {
		paying.Go(func() { r.customer(t, p) })
	}
	// PostgreSQL crashes once, when a third of the payments have a credit.
	crashed := false
	for range 3000 {
		if r.creditedOrders() >= n/3 {
			crashed = crashPostgres(t, r.srv)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	paying.Wait()
	// Done when every findable payment's tracked status is the fake's.
	// Which payments are findable is taken once per look and the last look
	// is what is verified: a late delivery may still make a lost-create
	// payment findable after it, with the trackers stopping, and that one
	// was never read (it is left out, as one never webhooked is).
	var open int
	var findable map[string]bool
	for range 6000 {
		findable = r.findable(ps)
		if open = r.chaosOpen(ps, findable); open == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644))
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, open, "payments whose tracked status is not the fake's")
	require.True(t, crashed, "PostgreSQL crashed mid-run")
	r.chaosVerify(t, ps, findable, dir)
	t.Logf("tracker chaos: %d payments, %d processes, in %v; webhook deliveries: %d lost for good, %d twice, %d late and out of order; PostgreSQL crashed: %v",
		n, trackerChaosWorkers, time.Since(start).Round(time.Millisecond), drops.Load(), dups.Load(), late.Load(), crashed)
}

// chaosPayment is one payment of the chaos run and how it is paid.
type chaosPayment struct {
	orderID, id string
	due         decimal.Decimal
	how         int
	lost        bool // the create answer was lost
}

// chaosPayments creates n payments (5% with their answer lost) and tracks
// each in a merchant transaction: by id, or by orderId when lost.
func (r *trig) chaosPayments(t *testing.T, tr *pgstore.Tracker, n int, plan *rand.Rand) []*chaosPayment {
	ps := make([]*chaosPayment, n)
	for i := range ps {
		c := &chaosPayment{orderID: fmt.Sprintf("chaos-%05d", i), how: plan.IntN(payHows), lost: plan.IntN(100) < 5}
		if c.lost {
			r.fake.InjectFault(cryptopaytest.RouteCreatePayment, cryptopaytest.Fault{Process: true, Drop: true})
		}
		u, err := webhook.URL(r.shop.URL, r.secret, c.orderID)
		require.NoError(t, err)
		p, err := r.fake.Client().CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
			Amount: decimal.RequireFromString("10"), Currency: "usdt", Network: "tron", CustomerID: "cust-1",
			CustomerIP: "203.0.113.7", OrderID: c.orderID, WebhookURL: u,
		})
		require.NoError(t, pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
			if c.lost {
				require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
				_, err := tr.TrackOrder(context.Background(), tx, c.orderID)
				return err
			}
			require.NoError(t, err)
			_, err := tr.Track(context.Background(), tx, p)
			return err
		}))
		ids := r.fake.PaymentIDsWithOrderID(c.orderID) // the customer's payment link
		require.Len(t, ids, 1)
		c.id = ids[0]
		st, err := r.fake.Client().GetPayment(context.Background(), c.id)
		require.NoError(t, err)
		c.due = st.PayAmount
		ps[i] = c
	}
	return ps
}

// customer pays p its way, at a random moment.
func (r *trig) customer(t *testing.T, p *chaosPayment) {
	time.Sleep(time.Duration(rand.IntN(2000)) * time.Millisecond)
	switch p.how {
	case payFull:
		assert.NoError(t, r.fake.Pay(p.id, p.due))
	case payPartialThenFull:
		part := p.due.Div(decimal.NewFromInt(3)).Round(2)
		assert.NoError(t, r.fake.Pay(p.id, part))
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		assert.NoError(t, r.fake.Pay(p.id, p.due.Sub(part)))
	case payPartialConfirmingRest:
		part := p.due.Div(decimal.NewFromInt(3)).Round(3)
		assert.NoError(t, r.fake.Pay(p.id, part))
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		assert.NoError(t, r.fake.SetPaymentStatus(p.id, cryptopay.PaymentConfirming))
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		assert.NoError(t, r.fake.Pay(p.id, p.due.Sub(part)))
	case payAfterExpiry:
		for range 600 {
			if st, _ := r.fake.PaymentStatus(p.id); st == cryptopay.PaymentExpired {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		assert.NoError(t, r.fake.Pay(p.id, p.due))
	}
}

// findable says, by orderId, which payments the tracker can know now:
// tracked by id, or their create answer was lost and a webhook for them
// reached PaymentChanged.
func (r *trig) findable(ps []*chaosPayment) map[string]bool {
	out := make(map[string]bool, len(ps))
	for _, p := range ps {
		_, seen := r.seen.Load(p.orderID)
		out[p.orderID] = !p.lost || seen
	}
	return out
}

// chaosOpen counts the findable payments whose tracked status is not yet
// the fake's (expiry included: a never-paid payment must read expired).
func (r *trig) chaosOpen(ps []*chaosPayment, findable map[string]bool) int {
	open := 0
	for _, p := range ps {
		if !findable[p.orderID] {
			continue
		}
		want, err := r.fake.PaymentStatus(p.id)
		tp, gerr := r.tracker.Get(context.Background(), p.orderID)
		if err != nil || gerr != nil || tp.Status != want {
			open++
		}
	}
	return open
}

func (r *trig) creditedOrders() int {
	var n int
	_ = r.pool.QueryRow(context.Background(), "SELECT count(DISTINCT order_id) FROM "+r.credits).Scan(&n)
	return n
}

// chaosVerify checks the credits and the merchant's ledger against the
// fake and prints the counts.
func (r *trig) chaosVerify(t *testing.T, ps []*chaosPayment, findable map[string]bool, dir string) {
	var dup int
	require.NoError(t, r.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM (SELECT order_id, seq FROM "+r.credits+" GROUP BY 1, 2 HAVING count(*) > 1) d").Scan(&dup))
	assert.Zero(t, dup, "changes credited more than once")
	type credit struct {
		to   string
		late bool
	}
	rows, err := r.pool.Query(context.Background(), "SELECT order_id, to_status, late FROM "+r.credits+" ORDER BY order_id, seq")
	require.NoError(t, err)
	credits := map[string][]credit{}
	var o, to string
	var lt bool
	_, err = pgx.ForEachRow(rows, []any{&o, &to, &lt}, func() error {
		credits[o] = append(credits[o], credit{to, lt})
		return nil
	})
	require.NoError(t, err)
	booked := r.ledger(t)
	var paid, unpaid, lateCaught, lost, lostTracked, unfindable, bad int
	var bookedSum, paidSum decimal.Decimal
	for _, p := range ps {
		st, err := r.fake.PaymentStatus(p.id)
		require.NoError(t, err)
		cs := credits[p.orderID]
		if p.lost {
			lost++
		}
		if !findable[p.orderID] {
			unfindable++
			continue
		}
		b, pd := r.chaosBooked(t, p, booked)
		bookedSum, paidSum = bookedSum.Add(b), paidSum.Add(pd)
		if p.lost {
			tp, err := r.tracker.Get(context.Background(), p.orderID)
			require.NoError(t, err)
			if assert.True(t, equalFoldID(tp.PaymentID, p.id), "lost-create %s tracked by its id", p.orderID) {
				lostTracked++
			}
		}
		nFinal, nPaid := 0, 0
		for _, c := range cs {
			if c.to == string(st) {
				nFinal++
			}
			if cryptopay.PaymentStatus(c.to).IsSuccess() {
				nPaid++
			}
		}
		switch {
		case st.IsSuccess():
			paid++
			if nFinal != 1 || nPaid != 1 {
				bad++
				t.Errorf("%s (%s at the fake): credits %v, want exactly one %s", p.orderID, st, cs, st)
			}
			if p.how == payAfterExpiry && len(cs) > 0 {
				if cs[len(cs)-1].late {
					lateCaught++
				} else {
					t.Errorf("%s paid after expiry: its credit is not marked late: %v", p.orderID, cs)
				}
			}
		default:
			unpaid++
			if nPaid != 0 {
				bad++
				t.Errorf("%s (%s at the fake) credited as paid: %v", p.orderID, st, cs)
			}
		}
	}
	kills := readKills(t, filepath.Join(dir, "kills"))
	t.Logf("tracker chaos: the merchant's ledger (ToPaid - FromPaid on every OnChange) booked %s of %s paid at the fake", bookedSum, paidSum)
	t.Logf("tracker chaos: paid at the fake %d (each credited once: %v), unpaid %d (none credited as paid: %v), late payments caught %d",
		paid, bad == 0, unpaid, bad == 0, lateCaught)
	t.Logf("tracker chaos: create answers lost %d, tracked by id after a webhook %d, never webhooked (unfindable) %d; kills %v",
		lost, lostTracked, unfindable, kills)
	for _, pt := range trackerChaosPoints {
		total := 0
		for slot := range trackerChaosWorkers {
			total += kills[fmt.Sprintf("%d/%s", slot, pt)]
		}
		assert.Positive(t, total, "a process was killed at %s", pt)
	}
}

// chaosBooked checks the merchant's ledger for p (the sum of ToPaid -
// FromPaid over its OnChange calls) against the paid amount the fake
// reports, to the last digit.
func (r *trig) chaosBooked(t *testing.T, p *chaosPayment, booked map[string]decimal.Decimal) (got, paid decimal.Decimal) {
	q, err := r.client.GetPayment(context.Background(), p.id)
	require.NoError(t, err)
	got, paid = booked[p.orderID], paidOf(q.PaidAmount)
	assert.True(t, got.Equal(paid), "%s (%s at the fake): booked %s, paid %s", p.orderID, q.Status, got, paid)
	return got, paid
}

func equalFoldID(a, b string) bool {
	return len(a) == len(b) && (a == b || bytes.EqualFold([]byte(a), []byte(b)))
}

// crashPostgres stops the server the way a crash does (SIGQUIT to the
// postmaster: pg_ctl's immediate mode, no checkpoint; the restart runs
// crash recovery) and starts it again.
func crashPostgres(t *testing.T, srv *pgtest.Server) bool {
	pid := srv.PID()
	if pid == 0 {
		return false
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		t.Logf("crash: %v", err)
		return false
	}
	for range 600 {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = srv.Stop() // reaps the exited postmaster
	if err := srv.Start(); err != nil {
		t.Errorf("restart after the crash: %v", err)
		return false
	}
	return true
}

// trackerChaosKill is one planned kill of a process: at the after-th hit
// of a test hook point, or (point trackerChaosTimed) after a delay.
type trackerChaosKill struct {
	point string
	after int
	delay time.Duration
}

func (k trackerChaosKill) String() string {
	if k.point == trackerChaosTimed {
		return fmt.Sprintf("%s(%v)", k.point, k.delay)
	}
	return fmt.Sprintf("%s#%d", k.point, k.after)
}

// trackerChaosKills draws one process's kills: each window once, at its
// 1st to 6th hit, and 0 to 2 at a random moment (0.2 to 3 s into a life),
// in a random order. At most 5 kills: the run stays bounded.
func trackerChaosKills(rng *rand.Rand) []trackerChaosKill {
	var ks []trackerChaosKill
	for _, pt := range trackerChaosPoints {
		ks = append(ks, trackerChaosKill{point: pt, after: 1 + rng.IntN(6)})
	}
	for range rng.IntN(3) {
		ks = append(ks, trackerChaosKill{point: trackerChaosTimed, delay: 200*time.Millisecond + time.Duration(rng.IntN(2800))*time.Millisecond})
	}
	rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return ks
}

// trackerChaosSlot runs one tracker process slot: each of its first lives
// is killed as kills plans it, the last runs until the stop file exists.
func (r *trig) trackerChaosSlot(ctx context.Context, slot int, dir string, kills []trackerChaosKill) error {
	for life := 0; ; life++ {
		env := append(r.srv.ChildEnv(),
			trackerChaosEnv+"="+strconv.Itoa(slot),
			"TRACKER_CHAOS_TABLE="+r.table, "TRACKER_CHAOS_CREDITS="+r.credits,
			"TRACKER_CHAOS_URL="+r.fake.URL, "TRACKER_CHAOS_KEY="+r.fake.APIKey, "TRACKER_CHAOS_DIR="+dir)
		var timed time.Duration
		if life < len(kills) {
			if k := kills[life]; k.point == trackerChaosTimed {
				timed = k.delay
			} else {
				env = append(env, "TRACKER_CHAOS_KILL_AT="+k.point, "TRACKER_CHAOS_KILL_AFTER="+strconv.Itoa(k.after))
			}
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTrackerChaos$", "-test.count=1")
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("slot %d life %d: %w", slot, life, err)
		}
		var fired atomic.Bool
		if timed > 0 {
			timer := time.AfterFunc(timed, func() { fired.Store(cmd.Process.Kill() == nil) })
			defer timer.Stop()
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return nil // stopped by the stop file
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL && ctx.Err() == nil:
			if fired.Load() {
				appendKill(dir, strconv.Itoa(slot)+"/"+trackerChaosTimed)
			}
			continue
		default:
			return fmt.Errorf("slot %d life %d: %v; output:\n%s", slot, life, err, out.Bytes())
		}
	}
}

// appendKill notes a kill in dir's kills file.
func appendKill(dir, what string) {
	f, err := os.OpenFile(filepath.Join(dir, "kills"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, _ = f.WriteString(what + "\n")
		_ = f.Close()
	}
}

// trackerChaosWorker is one tracker process: it runs the tracker until the
// stop file exists, and SIGKILLs itself at the k-th hit of its kill point.
func trackerChaosWorker(t *testing.T) {
	srv := pgtest.Need(t)
	slot, dir := os.Getenv(trackerChaosEnv), os.Getenv("TRACKER_CHAOS_DIR")
	killAt := os.Getenv("TRACKER_CHAOS_KILL_AT")
	killAfter, _ := strconv.Atoi(os.Getenv("TRACKER_CHAOS_KILL_AFTER"))
	var mu sync.Mutex
	hits := 0
	hook := func(point string) {
		if point != killAt {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if hits++; hits < killAfter {
			return
		}
		appendKill(dir, slot+"/"+point)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	client, err := cryptopay.NewClient(os.Getenv("TRACKER_CHAOS_URL"), os.Getenv("TRACKER_CHAOS_KEY"))
	require.NoError(t, err)
	r := &trig{srv: srv, pool: srv.Pool(t, 16), table: os.Getenv("TRACKER_CHAOS_TABLE"), credits: os.Getenv("TRACKER_CHAOS_CREDITS")}
	cfg := r.config()
	pgstore.WithTrackerAPI(&cfg, client)
	cfg.CreateTable = false
	cfg.Lease = 3 * time.Second
	cfg.OpenEvery, cfg.LateMin, cfg.LateMax = time.Second, 200*time.Millisecond, time.Second
	cfg.OnChange = func(ctx context.Context, tx pgx.Tx, c *pgstore.PaymentChange) error {
		if err := r.credit(ctx, tx, c); err != nil {
			return err
		}
		hook("in-callback")
		return nil
	}
	tr, err := pgstore.NewTracker(context.Background(), cfg)
	require.NoError(t, err)
	pgstore.SetTrackerHook(tr, hook)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = tr.Run(ctx) })
	for {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}

// trackerLedgerN and trackerLedgerSeed size and seed
// TestTrackerLedgerProperty; CI runs the default, a longer run:
//
//	go test -run TestTrackerLedgerProperty -tracker.ledger.n=500 ./pgstore
var (
	trackerLedgerN    = flag.Int("tracker.ledger.n", 100, "payments in TestTrackerLedgerProperty")
	trackerLedgerSeed = flag.Uint64("tracker.ledger.seed", 0, "seed of TestTrackerLedgerProperty's walks (0: a new one, printed)")
)

// trackerKillPercent is how often a worker of TestTrackerLedgerProperty
// dies at each point it can (mid-read, the change's row written, inside
// the callback, before the commit).
const trackerKillPercent = 6

// The ledger rule, as a property: for random walks of each payment through
// the lifecycle table at the fake (partial transfers, confirming, locked,
// expiry, the rest, more than the rest, failure), with 30% of webhook
// deliveries lost for good and 15% delivered twice, and workers of two
// replicas dying at random (mid-read, with the change's row written, inside
// the merchant's callback, before the commit: the transaction rolls back,
// the lease runs out, another worker reads again), the merchant who books
// ToPaid - FromPaid on every OnChange has booked, for every payment, to the
// digit, the paid amount the API reports; no change is booked twice.
func TestTrackerLedgerProperty(t *testing.T) {
	seed := *trackerLedgerSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("ledger property: seed %d (again with -tracker.ledger.seed=%d)", seed, seed)
	r := newTRig(t)
	var lost, twice, kills atomic.Int64
	r.mu.Lock()
	r.chaos = lossyDelivery(&lost, &twice)
	r.mu.Unlock()
	kill := func(string) {
		if rand.IntN(100) < trackerKillPercent {
			kills.Add(1)
			runtime.Goexit() // the worker dies here; deferred rollbacks run, the lease stays
		}
	}
	edit := func(c *pgstore.TrackerConfig) {
		c.OpenEvery, c.Lease = 200*time.Millisecond, 400*time.Millisecond
		c.OnChange = func(ctx context.Context, tx pgx.Tx, ch *pgstore.PaymentChange) error {
			if err := r.credit(ctx, tx, ch); err != nil {
				return err
			}
			kill("in-callback")
			return nil
		}
		pgstore.WithTrackerAPI(c, killingAPI{r, kill})
	}
	tr := r.start(t, 0, edit) // the webhook endpoint's tracker
	r.ledgerReplicas(t, 2, kill, edit)

	ps := make([]*cryptopay.Payment, *trackerLedgerN)
	for i := range ps {
		ps[i] = r.create(t, fmt.Sprintf("ledger-%04d", i), "10")
		r.track(t, tr, ps[i])
	}
	var walks sync.WaitGroup
	for i, p := range ps {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		walks.Go(func() { assert.NoError(t, ledgerWalk(rng, r.fake, p)) })
	}
	walks.Wait()
	// The last change's webhook may be among those lost, and a paid
	// payment is not polled: wake each once, as its final webhook would.
	for _, p := range ps {
		require.NoError(t, tr.PaymentChanged(context.Background(), p))
	}
	want := r.ledgerConverged(t, tr, ps)
	booked := r.ledger(t)
	for _, p := range ps {
		got := booked[p.OrderID]
		assert.True(t, got.Equal(want[p.OrderID]), "%s: booked %s, the API reports %s paid", p.OrderID, got, want[p.OrderID])
	}
	var dup int
	require.NoError(t, r.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM (SELECT order_id, seq FROM "+r.credits+" GROUP BY 1, 2 HAVING count(*) > 1) d").Scan(&dup))
	assert.Zero(t, dup, "changes booked more than once")
	t.Logf("ledger property: %d payments, webhook deliveries %d lost for good and %d twice, %d workers killed",
		len(ps), lost.Load(), twice.Load(), kills.Load())
}

// lossyDelivery loses webhook deliveries for good (30%) or delivers them
// twice (15%).
func lossyDelivery(lost, twice *atomic.Int64) func(w http.ResponseWriter, req *http.Request, h http.Handler) {
	return func(w http.ResponseWriter, req *http.Request, h http.Handler) {
		body, _ := io.ReadAll(req.Body)
		deliver := func(w http.ResponseWriter) {
			rq := req.Clone(req.Context())
			rq.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, rq)
		}
		switch x := rand.IntN(100); {
		case x < 30:
			lost.Add(1)
			w.WriteHeader(http.StatusOK)
		case x < 45:
			twice.Add(1)
			deliver(httptest.NewRecorder())
			deliver(w)
		default:
			deliver(w)
		}
	}
}

// killingAPI is the trackers' API, whose reader may die mid-read.
type killingAPI struct {
	r    *trig
	kill func(string)
}

func (a killingAPI) GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error) {
	p, err := a.r.GetPayment(ctx, id, opts...)
	a.kill("mid-read")
	return p, err
}

// ledgerReplicas runs n trackers on r's table whose workers die at kill.
func (r *trig) ledgerReplicas(t *testing.T, n int, kill func(string), edit func(*pgstore.TrackerConfig)) {
	cfg := r.config()
	edit(&cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range n {
		rep, err := pgstore.NewTracker(context.Background(), cfg)
		require.NoError(t, err)
		pgstore.SetTrackerHook(rep, kill)
		wg.Go(func() { _ = rep.Run(ctx) })
	}
}

// ledgerConverged waits until every payment's tracked status and paid
// amount are the fake's, and returns the fake's paid amounts.
func (r *trig) ledgerConverged(t *testing.T, tr *pgstore.Tracker, ps []*cryptopay.Payment) map[string]decimal.Decimal {
	want := map[string]decimal.Decimal{}
	for _, p := range ps {
		q, err := r.client.GetPayment(context.Background(), p.ID)
		require.NoError(t, err)
		want[p.OrderID] = paidOf(q.PaidAmount)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			tp, err := tr.Get(context.Background(), p.OrderID)
			require.NoError(t, err)
			if tp.Status == q.Status && paidOf(tp.PaidAmount).Equal(want[p.OrderID]) {
				break
			}
			require.True(t, time.Now().Before(deadline), "%s: tracked %s %s, the fake %s %s", p.OrderID,
				tp.Status, paidOf(tp.PaidAmount), q.Status, want[p.OrderID])
			time.Sleep(20 * time.Millisecond)
		}
	}
	return want
}

func paidOf(d decimal.NullDecimal) decimal.Decimal {
	if !d.Valid {
		return decimal.Zero
	}
	return d.Decimal
}

// ledgerMoves are the moves of ledgerWalk, weighted towards the walks
// that test the books: money in, then a status that is neither terminal
// nor a success (confirming, locked), then more money.
var ledgerMoves = []struct {
	to     cryptopay.PaymentStatus
	weight int
}{
	{cryptopay.PaymentPaidPartial, 4}, {cryptopay.PaymentConfirming, 4}, {cryptopay.PaymentLocked, 2},
	{cryptopay.PaymentPaid, 2}, {cryptopay.PaymentPaidOver, 1}, {cryptopay.PaymentExpired, 1},
	{cryptopay.PaymentFailed, 1}, {cryptopay.PaymentRejected, 1},
}

// ledgerWalk walks payment p at the fake through 1 to 6 random moves the
// lifecycle table allows from where it stands (until a final status):
// transfers of part of the rest (paid_partial), of the rest (paid), of
// more than the rest (paid_over), and the processor's moves (confirming,
// locked, expired, failed, rejected). Amounts have up to 3 decimals.
func ledgerWalk(rng *rand.Rand, fake *cryptopaytest.Server, p *cryptopay.Payment) error {
	due, paid := p.PayAmount, decimal.Zero
	for range 1 + rng.IntN(6) {
		st, err := fake.PaymentStatus(p.ID)
		if err != nil || st.IsFinal() {
			return err
		}
		var moves []cryptopay.PaymentStatus
		for _, m := range ledgerMoves {
			if st.CanMoveTo(m.to) || (st == m.to && m.to == cryptopay.PaymentPaidPartial) {
				moves = append(moves, slices.Repeat([]cryptopay.PaymentStatus{m.to}, m.weight)...)
			}
		}
		rest := due.Sub(paid)
		milli := func(n int64) decimal.Decimal { return decimal.New(n, -3) }
		switch to := moves[rng.IntN(len(moves))]; to {
		case cryptopay.PaymentPaidPartial:
			if m := rest.Shift(3).IntPart(); m > 1 {
				a := milli(1 + rng.Int64N(m-1))
				paid = paid.Add(a)
				err = fake.Pay(p.ID, a)
			}
		case cryptopay.PaymentPaid:
			paid = due
			err = fake.Pay(p.ID, rest)
		case cryptopay.PaymentPaidOver:
			a := rest.Add(milli(1 + rng.Int64N(5000)))
			paid = paid.Add(a)
			err = fake.Pay(p.ID, a)
		default:
			err = fake.SetPaymentStatus(p.ID, to)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.OrderID, err)
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // the tracker may or may not read in between
	}
	return nil
}
