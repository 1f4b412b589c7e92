package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// chaosN is how many intents the chaos test queues. The default keeps the
// test short on a small machine; the figure is 5,000:
//
//	go test -run TestQueueChaos -queue.chaos.n=5000 ./pgstore
var chaosN = flag.Int("queue.chaos.n", 600, "intents in TestQueueChaos")

// The windows a worker is killed in: after the attempt's commit and before
// the POST; after the POST was written and before its answer; after the
// answer and before its commit; inside the final-status callback.
var chaosPoints = []string{"attempt-committed", "post-written", "answer-read", "in-callback"}

const (
	chaosWorkers   = 3
	chaosWorkerEnv = "QUEUE_CHAOS_WORKER" // the child's slot number
)

// Three worker processes share the intents; each is SIGKILLed (by itself,
// at a test hook) at least once in every window that matters, and started
// again. The fake drops ~10% of POSTs after reading them and answers 500
// to ~5% after processing them, and its payout list lags behind creation.
// PostgreSQL runs with synchronous_commit off (and a WAL writer that
// sleeps 10 s), and goes down three times mid-run: a clean restart, a
// crash (SIGKILL of every process) and an immediate shutdown, the last
// two losing every commit not forced to disk. Every orderId must end with
// exactly one payout at the fake, every intent in a final state, and
// every final effect committed exactly once.
func TestQueueChaos(t *testing.T) {
	if os.Getenv(chaosWorkerEnv) != "" {
		chaosWorker(t)
		return
	}
	n := *chaosN
	start := time.Now()
	r := newQRigOn(t, startCrashServer(t), cryptopaytest.WithPayoutListLag(100*time.Millisecond))
	var sc string
	require.NoError(t, r.pool.QueryRow(context.Background(), "SHOW synchronous_commit").Scan(&sc))
	require.Equal(t, "off", sc, "the server acknowledges commits before their WAL is written")
	q := r.queue(t, chaosConfig)
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = payoutParams(i)
	}
	r.enqueue(t, q, ps...)

	// The POST faults, in a random order: a drop before processing (10%),
	// a 500 after processing (5%), else a normal answer. Resent intents
	// draw again.
	drops, fives := 0, 0
	for range 2 * n {
		switch x := rand.IntN(100); {
		case x < 10:
			r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true})
			drops++
		case x < 15:
			r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Status: http.StatusInternalServerError})
			fives++
		default:
			r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{})
		}
	}
	r.payAll(t)

	api := newStrikingAPI(t, r.fake)
	killLog := t.TempDir() + "/kills"
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, chaosWorkers)
	for slot := range chaosWorkers {
		wg.Go(func() { errs[slot] = r.chaosSlot(ctx, slot, api.URL, killLog) })
	}
	// PostgreSQL goes down three times and comes back on the same port and
	// data: crashed (SIGKILL) once a third of the create requests are in,
	// shut down in immediate mode at two thirds, and restarted cleanly once
	// three quarters of the intents are final. Before the crash and the
	// immediate shutdown its WAL writer is paused, as if it were late, so
	// every asynchronous commit from then on is lost; they strike inside
	// the 20th create request after that, once the fake created the payout
	// and before it answers: a score of attempts were committed and sent
	// meanwhile, and the last answer is never recorded.
	outages := []struct {
		name   string
		down   func(*pgtest.Server) error
		posts  int // strike inside a create request once this many came in; else
		finals int // go down once this many intents are final
	}{
		{name: "crash (SIGKILL) inside a create request", down: (*pgtest.Server).Crash, posts: n / 3},
		{name: "immediate shutdown inside a create request", down: (*pgtest.Server).StopImmediate, posts: 2 * n / 3},
		{name: "clean restart", down: (*pgtest.Server).Stop, finals: 3 * n / 4},
	}
	strikeAfter := int64(max(1, min(20, n/20)))
	var outagesDone []string
	var outageErr error
	workersDone := make(chan struct{})
	var outageWG sync.WaitGroup
	outageWG.Go(func() {
		wait := func(cond func() bool) bool {
			for !cond() {
				select {
				case <-workersDone:
					return false
				case <-time.After(20 * time.Millisecond):
				}
			}
			return true
		}
		for _, o := range outages {
			var err error
			if o.posts > 0 {
				if !wait(func() bool { return api.posts.Load() >= int64(o.posts) }) {
					return
				}
				if outageErr = r.srv.PauseWALWriter(); outageErr != nil {
					return
				}
				downed := make(chan error, 1)
				api.strike = func() { downed <- o.down(r.srv) }
				api.armed.Store(strikeAfter)
				select {
				case err = <-downed:
				case <-workersDone:
					return
				}
			} else {
				if !wait(func() bool { return final(r.countsOrNil(q)) >= o.finals }) {
					return
				}
				err = o.down(r.srv)
			}
			if outageErr = errors.Join(err, r.srv.Start()); outageErr != nil {
				return
			}
			outagesDone = append(outagesDone, o.name)
		}
	})
	wg.Wait()
	close(workersDone)
	outageWG.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, outageErr)
	require.Len(t, outagesDone, len(outages), "PostgreSQL went down mid-run: %v", outagesDone)

	counts, err := q.Counts(context.Background())
	require.NoError(t, err)
	per := r.payoutsPerOrder()
	eff := r.effectCounts(t)
	kills := readKills(t, killLog)
	var notOne, effNotOne int
	for _, p := range ps {
		if per[p.OrderID] != 1 {
			notOne++
		}
		if eff[p.OrderID] != 1 {
			effNotOne++
		}
	}
	var attempts, verdicts = 0, map[string]int{}
	for after := ""; ; {
		page, err := q.List(context.Background(), pgstore.ListFilter{After: after, Limit: 1000})
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for _, in := range page {
			attempts += in.Attempts
			verdicts[in.Verdict]++
		}
		after = page[len(page)-1].Params.OrderID
	}
	t.Logf("chaos: %d intents, %d workers, in %v; POST faults queued: %d drops, %d 500s; PostgreSQL (synchronous_commit off) down: %v",
		n, chaosWorkers, time.Since(start).Round(time.Millisecond), drops, fives, strings.Join(outagesDone, ", "))
	t.Logf("chaos: kills per slot and point: %v", kills)
	t.Logf("chaos: final states %v; attempts %d (%d resends); verdicts %v", counts, attempts, attempts-n, verdicts)
	t.Logf("chaos: payouts at the fake %d; orderIds without exactly one payout: %d; effects %d; orderIds without exactly one effect: %d",
		r.fake.PayoutCount(), notOne, len(eff), effNotOne)

	for _, p := range ps {
		if per[p.OrderID] != 1 {
			r.logOrder(t, q, p.OrderID)
			api.mu.Lock()
			t.Logf("chaos: %s: create requests (arrived-ended): %v", p.OrderID, api.seen[p.OrderID])
			api.mu.Unlock()
		}
	}
	assert.Equal(t, n, counts[pgstore.StatePaid], "every intent paid: %v", counts)
	assert.Zero(t, notOne, "every orderId has exactly one payout")
	assert.Equal(t, n, r.fake.PayoutCount())
	assert.Zero(t, effNotOne, "every final effect committed exactly once")
	for slot := range chaosWorkers {
		for _, p := range chaosPoints {
			assert.Positive(t, kills[fmt.Sprintf("%d/%s", slot, p)], "slot %d killed at %s", slot, p)
		}
	}
}

// chaosConfig are the chaos run's timings: a lease short enough that a
// killed worker's intents are taken over soon, long enough for a
// reconciliation that walks thousands of payouts on a loaded machine, and
// the SDK's default settle time. The settle time is the queue's one
// assumption about the API: a create request the client gave up on
// (SendTimeout) is acted on, and listed, within it. 400 ms (above the
// fake's list lag) was not enough at load average 26 under -race: the
// fake created a payout 3.5 s after the request arrived, 1.6 s after
// the worker gave up on it, and the reconciliation before that found
// nothing and sent again (1 to 4 orderIds with two payouts in 3 runs of
// 12). The queue kept its rule; the test's world broke the assumption.
func chaosConfig(c *pgstore.QueueConfig) {
	c.Lease = 10 * time.Second
	c.SendTimeout = 2 * time.Second
	c.ReconcileSettleTime = cryptopay.DefaultReconcileSettleTime
	c.FollowEvery = 200 * time.Millisecond
	c.BackoffMin, c.BackoffMax = 100*time.Millisecond, time.Second
	// Drops and kills force resends, some intents several times: the
	// attempt bound (TestQueueMaxAttempts) would park them for a person.
	c.MaxAttempts = 1000
}

func final(counts map[pgstore.IntentState]int) int {
	n := 0
	for st, c := range counts {
		if st.IsFinal() {
			n += c
		}
	}
	return n
}

func (r *qrig) countsOrNil(q *pgstore.Queue) map[pgstore.IntentState]int {
	c, _ := q.Counts(context.Background())
	return c
}

// chaosSlot runs one worker slot: its first incarnations are each told to
// kill themselves at one window (a different one each time, at a random
// hit), the last runs until every intent is final.
func (r *qrig) chaosSlot(ctx context.Context, slot int, apiURL, killLog string) error {
	for life := 0; ; life++ {
		env := append(r.srv.ChildEnv(),
			chaosWorkerEnv+"="+strconv.Itoa(slot),
			"QUEUE_CHAOS_TABLE="+r.table, "QUEUE_CHAOS_EFFECTS="+r.effects,
			"QUEUE_CHAOS_URL="+apiURL, "QUEUE_CHAOS_KEY="+r.fake.APIKey, "QUEUE_CHAOS_LOG="+killLog)
		if life < len(chaosPoints) {
			env = append(env, "QUEUE_CHAOS_KILL_AT="+chaosPoints[(slot+life)%len(chaosPoints)],
				"QUEUE_CHAOS_KILL_AFTER="+strconv.Itoa(1+rand.IntN(8)))
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestQueueChaos$", "-test.count=1")
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // none outlives the test
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			if life < len(chaosPoints) {
				return fmt.Errorf("slot %d life %d ended before reaching its kill point; output:\n%s", slot, life, out)
			}
			return nil
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL && ctx.Err() == nil:
			continue
		default:
			return fmt.Errorf("slot %d life %d: %v; output:\n%s", slot, life, err, out)
		}
	}
}

// strikingAPI serves the fake's API to the workers; once armed with k, the
// k-th create request from then on is handled by the fake (the payout
// exists), then strike runs (PostgreSQL goes down) before the answer
// leaves.
type strikingAPI struct {
	*httptest.Server
	posts  atomic.Int64 // create requests received
	armed  atomic.Int64
	strike func() // set before armed
	mu     sync.Mutex
	seen   map[string][]string // orderId: each create request's arrival and end
}

func newStrikingAPI(t *testing.T, fake *cryptopaytest.Server) *strikingAPI {
	a := &strikingAPI{seen: map[string][]string{}}
	inner := fake.Handler()
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/v1/payout" {
			a.posts.Add(1)
			defer a.note(req)()
			if a.armed.Load() > 0 && a.armed.Add(-1) == 0 {
				inner.ServeHTTP(w, req) // the answer stays buffered until return
				a.strike()
				return
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(a.Close)
	return a
}

// note records a create request's orderId and arrival; the func it
// returns records its end.
func (a *strikingAPI) note(req *http.Request) func() {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	var p struct {
		OrderID string `json:"orderId"`
	}
	_ = json.Unmarshal(body, &p)
	arrived := time.Now()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.seen[p.OrderID] = append(a.seen[p.OrderID], arrived.Format("15:04:05.000")+"-"+time.Now().Format("15:04:05.000"))
	}
}

// readKills counts the kill log's lines ("slot/point").
func readKills(t *testing.T, path string) map[string]int {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		out[l]++
	}
	return out
}

// chaosWorker is one worker process: it works the queue until every
// intent is final, and SIGKILLs itself at the k-th hit of its kill point.
func chaosWorker(t *testing.T) {
	srv := pgtest.Need(t)
	slot := os.Getenv(chaosWorkerEnv)
	killAt := os.Getenv("QUEUE_CHAOS_KILL_AT")
	killAfter, _ := strconv.Atoi(os.Getenv("QUEUE_CHAOS_KILL_AFTER"))
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
		f, err := os.OpenFile(os.Getenv("QUEUE_CHAOS_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			_, _ = f.WriteString(slot + "/" + point + "\n")
			_ = f.Close()
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	hc := &http.Client{Transport: hookTransport{base: http.DefaultTransport.(*http.Transport).Clone(), hook: hook}}
	client, err := cryptopay.NewClient(os.Getenv("QUEUE_CHAOS_URL"), os.Getenv("QUEUE_CHAOS_KEY"), cryptopay.WithHTTPClient(hc))
	require.NoError(t, err)
	r := &qrig{srv: srv, pool: srv.Pool(t, 24), table: os.Getenv("QUEUE_CHAOS_TABLE"), effects: os.Getenv("QUEUE_CHAOS_EFFECTS")}
	cfg := r.config(client)
	chaosConfig(&cfg)
	cfg.CreateTable = false
	cfg.OnFinal = func(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
		if err := r.onFinal(ctx, tx, in); err != nil {
			return err
		}
		hook("in-callback")
		return nil
	}
	q, err := pgstore.NewQueue(context.Background(), cfg)
	require.NoError(t, err)
	pgstore.SetQueueHook(q, hook)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- q.Run(ctx) }()
	for {
		c, err := q.Counts(context.Background())
		if err == nil && final(c) == total(c) {
			break
		}
		select {
		case err := <-ended: // a worker that stopped early must not pass for one that ran out of work
			t.Fatalf("Run returned before every intent was final: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	require.ErrorIs(t, <-ended, context.Canceled)
}

func total(counts map[pgstore.IntentState]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// hookTransport calls hook("post-written") once a POST's request has been
// written, before its answer is read.
type hookTransport struct {
	base *http.Transport
	hook func(string)
}

func (h hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { h.hook("post-written") }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	return h.base.RoundTrip(req)
}

// logOrder logs what the queue recorded for orderID and the fake's payouts
// for it: the evidence for an orderId that did not end with one payout.
func (r *qrig) logOrder(t *testing.T, q *pgstore.Queue, orderID string) {
	in, err := q.Get(context.Background(), orderID)
	if err != nil {
		t.Logf("chaos: %s: %v", orderID, err)
		return
	}
	t.Logf("chaos: %s: state %s, attempts %d, attempted at %s, verdict %q, payout %s, last error %q, note %q",
		orderID, in.State, in.Attempts, in.AttemptedAt.Format(time.RFC3339Nano), in.Verdict, in.PayoutID, in.LastError, in.Note)
	rows, err := r.pool.Query(context.Background(), "SELECT to_char(at, 'HH24:MI:SS.MS'), actor, from_state, to_state, attempts, verdict, error FROM "+
		r.table+"_history WHERE order_id = $1 ORDER BY id", orderID)
	if err == nil {
		var at, actor, from, to, verdict, text string
		var attempts int
		_, err = pgx.ForEachRow(rows, []any{&at, &actor, &from, &to, &attempts, &verdict, &text}, func() error {
			t.Logf("chaos: %s: history %s %s %s->%s attempts %d verdict %q error %q", orderID, at, actor, from, to, attempts, verdict, text)
			return nil
		})
	}
	if err != nil {
		t.Logf("chaos: %s: history: %v", orderID, err)
	}
	for _, p := range r.fake.Payouts() {
		if p.OrderID == orderID {
			t.Logf("chaos: %s: payout %s created at %s, status %s", orderID, p.ID, p.CreatedAt.Format(time.RFC3339Nano), p.Status)
		}
	}
}
