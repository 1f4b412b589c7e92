// Package replicatest is the multi-replica conformance suite for a
// webhook.DedupeStore shared by several processes, and for a
// cryptopay.WakeupBus. It runs three replicas, each with its own
// cryptopay.Client, webhook handler and store instance on your one backing
// server, behind a round-robin load balancer on loopback, all fed by the
// cryptopaytest fake; redisstore and pgstore run it on their servers. Run
// cryptopaytest/dedupetest first (one store's contract, call by call);
// this suite then checks the store end to end, at volume:
//
//	func TestReplicas(t *testing.T) {
//		replicatest.Run(t, replicatest.Config{
//			NewStore: func(t *testing.T, replica int) webhook.DedupeStore {
//				return mystore.New(sharedBackend, mystore.WithLease(3*time.Second))
//			},
//			Restart: restartSharedBackend, // optional
//			Lease:   3 * time.Second,
//		})
//	}
//
//	func TestWakeupAcrossReplicas(t *testing.T) {
//		replicatest.WakeupLatencies(t, func(tb testing.TB, replica int) cryptopay.WakeupBus {
//			return mybus.New(sharedBackend)
//		}, 5)
//	}
//
// Each call of NewStore (or of a WakeupLatencies newBus) stands for one
// replica: return a new instance, with its own connection, on the same
// backing server. Order ids are unique per run, so the server need not be
// emptied between runs. The runs take seconds and the loopback ports of a
// few servers; they are tests, not benchmarks, though Stats and the
// WakeupRig give figures for reports.
package replicatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Replicas is how many replicas a run has: NewStore and ClientOptions
// are called with replica 0 to Replicas-1.
const Replicas = 3

// Config describes the store under test. NewStore is required; every other
// field may be left zero.
type Config struct {
	// NewStore returns replica i's own store instance, called once per
	// replica and run. Every instance must use the same backing server
	// (that is what is being tested).
	NewStore func(t *testing.T, replica int) webhook.DedupeStore
	// ClientOptions, when set, returns extra options for replica i's
	// Client (cryptopay.WithWakeupBus, for example, so that every
	// handler's re-read also publishes a hint on your bus during the run).
	ClientOptions func(t *testing.T, replica int) []cryptopay.Option
	// Events is how many webhook events the delivery run makes (default
	// 2000): half are payments paid, half are payouts moved to processing
	// and then to paid. The run fails if making them takes more than two
	// minutes, or if their deliveries (retries included) have not ended a
	// minute later.
	Events int
	// Restart, when set, is called once, a third of the way through the
	// delivery run, while events keep flowing: it must stop the backing
	// server and start it again with its data (so completed keys survive),
	// and return once it is back. Handlers answer 503 meanwhile. The
	// stores' lease must outlast the outage (plus the store's own
	// reconnect delay): a claim that lapses while Complete cannot reach
	// the server lets a redelivery run the callback again, which the run
	// reports as a double delivery. Unless StoresHideRestart is set, the
	// run also requires that at least one store call returned an error:
	// the sign that the restart reached the stores at all.
	Restart func() error
	// StoresHideRestart declares that the stores ride out a restart of
	// their server inside their calls (they wait and retry) and return no
	// error for it, which skips the check that a store call failed.
	StoresHideRestart bool
	// Lease is the stores' lease length: how long a claim whose replica
	// died holds its key. It enables the killed-replica run, which waits
	// for the dead replica's lease to expire (up to about twice Lease,
	// given the sender's doubling retry waits, and at most the minute the
	// deliveries have to end): give the stores a lease of a few seconds.
	// 0 skips that run.
	Lease time.Duration
	// KillEvents is how many events the killed-replica run makes (default
	// 200).
	KillEvents int
}

// secret is the webhook secret every replica shares.
var secret = []byte("replicatest-webhook-secret-0123456789")

// Stats counts what a delivery run did, for the test's log and reports.
type Stats struct {
	Events     int            // events the fake made
	Callbacks  int            // callbacks that returned nil, all replicas
	StoreCalls map[string]int // calls of each store method: "Claim", "Complete", "Release"
	StoreErrs  int            // store calls that returned an error
	FanOut     map[int]int    // HTTP status of the extra direct deliveries (0: no answer)
	Attempts   int            // webhook attempts made by the fake
	Duration   time.Duration  // the run's wall time, events made to deliveries ended
}

// Run runs RunDelivery and, when cfg.Lease is set, RunKilledReplica, as
// the subtests ExactlyOnce and KilledReplica, each on its own replicas and
// fake.
func Run(t *testing.T, cfg Config) {
	t.Run("ExactlyOnce", func(t *testing.T) {
		st := RunDelivery(t, cfg)
		t.Logf("delivery run: %+v", st)
	})
	t.Run("KilledReplica", func(t *testing.T) {
		if cfg.Lease <= 0 {
			t.Skip("no Lease: the store's claims do not expire")
		}
		RunKilledReplica(t, cfg)
	})
}

// cluster is a fake API, three replicas and the forwarder.
type cluster struct {
	t        *testing.T
	srv      *cryptopaytest.Server
	replicas []*replica
	fwd      *httptest.Server
	next     atomic.Uint64
	hc       *http.Client

	mu        sync.Mutex
	delivered map[string][]int // kind/id/status -> replicas whose callback returned nil
	fanCodes  map[int]int
}

type replica struct {
	idx    int
	client *cryptopay.Client
	store  *countingStore
	srv    *httptest.Server
	dead   atomic.Bool
	kill   context.CancelFunc
	killed context.Context
	// onCallback, when set, runs at the start of each callback; it may
	// block (a "killed" replica).
	onCallback atomic.Pointer[func(key string)]
}

func newCluster(t *testing.T, cfg Config) *cluster {
	t.Helper()
	if cfg.NewStore == nil {
		t.Fatal("replicatest: Config.NewStore is nil")
	}
	c := &cluster{
		t:         t,
		delivered: map[string][]int{},
		fanCodes:  map[int]int{},
		hc: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     10 * time.Second,
		}, Timeout: 30 * time.Second},
	}
	t.Cleanup(c.hc.CloseIdleConnections)
	c.srv = cryptopaytest.NewServer(
		cryptopaytest.WithWebhookRetry(30, 10*time.Millisecond),
		cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1_000_000_000)),
	)
	t.Cleanup(c.srv.Close)
	for i := range Replicas {
		c.replicas = append(c.replicas, c.newReplica(t, cfg, i))
	}
	c.fwd = httptest.NewServer(http.HandlerFunc(c.forward))
	t.Cleanup(c.fwd.Close)
	return c
}

func (c *cluster) newReplica(t *testing.T, cfg Config, i int) *replica {
	r := &replica{idx: i, store: &countingStore{inner: cfg.NewStore(t, i), calls: map[string]int{}}}
	r.killed, r.kill = context.WithCancel(context.Background())
	t.Cleanup(r.kill)
	var opts []cryptopay.Option
	if cfg.ClientOptions != nil {
		opts = cfg.ClientOptions(t, i)
	}
	r.client = c.srv.Client(opts...)
	t.Cleanup(func() { _ = r.client.Close() })
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: r.client,
		Dedupe: r.store,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			return c.callback(r, "payment/"+strings.ToLower(p.ID)+"/"+string(p.Status))
		},
		OnPayout: func(_ context.Context, p *cryptopay.Payout) error {
			return c.callback(r, "payout/"+p.ID+"/"+string(p.Status))
		},
	})
	require.NoError(t, err)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.dead.Load() {
			panic(http.ErrAbortHandler) // a dead process: the connection drops
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (c *cluster) callback(r *replica, key string) error {
	if fn := r.onCallback.Load(); fn != nil {
		(*fn)(key)
	}
	c.mu.Lock()
	c.delivered[key] = append(c.delivered[key], r.idx)
	c.mu.Unlock()
	return nil
}

// send posts body to replica r at target's path and query; a killed
// replica's requests are cut off at once, as a dead process's would be.
func (c *cluster) send(ctx context.Context, r *replica, pathQuery string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.killed, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+pathQuery, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, out, err
}

// forward is the load balancer: round robin over the live replicas.
func (c *cluster) forward(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var r *replica
	for range Replicas {
		cand := c.replicas[c.next.Add(1)%Replicas]
		if !cand.dead.Load() {
			r = cand
			break
		}
	}
	if r == nil {
		http.Error(w, "no replica", http.StatusBadGateway)
		return
	}
	code, out, err := c.send(req.Context(), r, req.URL.RequestURI(), body)
	if err != nil {
		http.Error(w, "replica unreachable", http.StatusBadGateway)
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

// webhookURL is the URL given to the API: the forwarder's.
func (c *cluster) webhookURL(orderID string) string {
	u, err := webhook.URL(c.fwd.URL+"/hooks/cryptopay", secret, orderID)
	if err != nil {
		panic(err)
	}
	return u
}

// rawStatus reads the object's status response as the API writes it: the
// body a webhook carries.
func (c *cluster) rawStatus(ctx context.Context, kind, id string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.srv.URL+"/v1/"+kind+"/"+id+"/status", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", c.srv.APIKey)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s status: %d", kind, resp.StatusCode)
	}
	return b, err
}

// fanOut delivers the object's current state to every replica at once,
// besides the fake's own delivery through the forwarder.
func (c *cluster) fanOut(ctx context.Context, kind, id, orderID string) error {
	body, err := c.rawStatus(ctx, kind, id)
	if err != nil {
		return err
	}
	u, err := webhook.URL("http://replica/hooks/cryptopay", secret, orderID)
	if err != nil {
		return err
	}
	pathQuery := strings.TrimPrefix(u, "http://replica")
	var wg sync.WaitGroup
	for _, r := range c.replicas {
		wg.Go(func() {
			code, _, _ := c.send(ctx, r, pathQuery, body)
			c.mu.Lock()
			c.fanCodes[code]++
			c.mu.Unlock()
		})
	}
	wg.Wait()
	return nil
}

// object is one payment or payout the run drives.
type object struct {
	kind, id, orderID string
	final             string
}

// drive creates object n and moves it to its final status, fanning out
// each event; it returns the events made.
func (c *cluster) drive(ctx context.Context, n int, payout bool) (object, int, error) {
	orderID := fmt.Sprintf("order-%d-%d", time.Now().UnixNano(), n)
	if !payout {
		p, err := c.replicas[n%Replicas].client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
			Amount: decimal.NewFromInt(int64(10 + n%90)), Currency: "usdt", Network: "tron",
			CustomerID: "cust", CustomerIP: "203.0.113.7", OrderID: orderID, WebhookURL: c.webhookURL(orderID),
		})
		if err != nil {
			return object{}, 0, err
		}
		o := object{kind: "payment", id: strings.ToLower(p.ID), orderID: orderID, final: string(cryptopay.PaymentPaid)}
		if err := c.srv.Pay(p.ID, p.PayAmount); err != nil {
			return o, 0, err
		}
		return o, 1, c.fanOut(ctx, "payment", p.ID, orderID)
	}
	p, err := c.replicas[n%Replicas].client.CreatePayout(ctx, cryptopay.CreatePayoutParams{
		WalletAddress: "TRrsE4ZRKJ5VYNZdrGm3Rm9k1sWRQKG6FN", Amount: decimal.NewFromInt(int64(1 + n%50)),
		Currency: "usdt", Network: "tron", CustomerID: "cust", CustomerIP: "203.0.113.7",
		OrderID: orderID, WebhookURL: c.webhookURL(orderID),
	})
	if err != nil {
		return object{}, 0, err
	}
	o := object{kind: "payout", id: p.ID, orderID: orderID, final: string(cryptopay.PayoutPaid)}
	for _, st := range []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutPaid} {
		if err := c.srv.SetPayoutStatus(p.ID, st); err != nil {
			return o, 0, err
		}
		if err := c.fanOut(ctx, "payout", p.ID, orderID); err != nil {
			return o, 0, err
		}
	}
	return o, 2, nil
}

// generate drives objects until events events were made, with a few
// workers: half payments and half payouts, or only payments. at is called
// each time an object is done, with the running count of events.
func (c *cluster) generate(ctx context.Context, events int, onlyPayments bool, at func(done int)) ([]object, int, error) {
	const workers = 32
	var (
		mu      sync.Mutex
		objs    []object
		made    int
		errs    []error
		nextObj atomic.Int64
		wg      sync.WaitGroup
	)
	payments := events / 2
	payouts := (events - payments) / 2
	if onlyPayments {
		payments, payouts = events, 0
	}
	total := int64(payments + payouts)
	for range workers {
		wg.Go(func() {
			for {
				n := nextObj.Add(1) - 1
				if n >= total || ctx.Err() != nil {
					return
				}
				o, k, err := c.drive(ctx, int(n), n >= int64(payments))
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("object %d: %w", n, err))
				} else {
					objs = append(objs, o)
				}
				made += k
				done := made
				mu.Unlock()
				if at != nil {
					at(done)
				}
			}
		})
	}
	wg.Wait()
	return objs, made, errors.Join(errs...)
}

// settle waits for the fake's deliveries (retries included) to end.
func (c *cluster) settle(t *testing.T, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	require.NoError(t, c.srv.WaitWebhooksIdle(ctx), "the fake's webhooks did not settle")
}

// check asserts nothing lost and nothing doubled; it returns the stats.
func (c *cluster) check(t *testing.T, objs []object) Stats {
	t.Helper()
	// Every event the fake sent was acknowledged in the end.
	last := map[string]cryptopaytest.WebhookDelivery{}
	hooks := c.srv.Webhooks()
	for _, d := range hooks {
		k := d.Kind + "/" + d.ObjectID + "/" + d.Status
		if prev, ok := last[k]; !ok || d.Attempt > prev.Attempt {
			last[k] = d
		}
	}
	var undelivered []string
	for k, d := range last {
		if !d.Delivered() {
			undelivered = append(undelivered, fmt.Sprintf("%s (attempt %d: %d %s)", k, d.Attempt, d.StatusCode, d.Err))
		}
	}
	sort.Strings(undelivered)
	assert.Empty(t, undelivered, "events the sender gave up on")

	c.mu.Lock()
	defer c.mu.Unlock()
	var twice []string
	for k, rs := range c.delivered {
		if len(rs) != 1 {
			twice = append(twice, fmt.Sprintf("%s by replicas %v", k, rs))
		}
	}
	sort.Strings(twice)
	assert.Empty(t, twice, "events delivered to callbacks more than once")
	var lost []string
	for _, o := range objs {
		if len(c.delivered[o.kind+"/"+o.id+"/"+o.final]) == 0 {
			lost = append(lost, o.kind+"/"+o.id+"/"+o.final)
		}
	}
	assert.Empty(t, lost, "final statuses that never reached a callback")

	st := Stats{StoreCalls: map[string]int{}, FanOut: map[int]int{}, Attempts: len(hooks)}
	for _, rs := range c.delivered {
		st.Callbacks += len(rs)
	}
	for code, n := range c.fanCodes {
		st.FanOut[code] = n
	}
	for _, r := range c.replicas {
		r.store.mu.Lock()
		for m, n := range r.store.calls {
			st.StoreCalls[m] += n
		}
		st.StoreErrs += r.store.errs
		r.store.mu.Unlock()
	}
	return st
}

// RunDelivery is the exactly-once run: the fake sends cfg.Events events
// through the load balancer, and each is also posted to every replica at
// once; cfg.Restart, when set, restarts the backing server a third of the
// way through. It fails t if any (kind, id, status) reached a callback
// more than once across the replicas, unless every object's final status
// reached one, and unless the fake's last attempt of every event was
// answered 2xx. A status passed before its event arrived may reach no
// callback (the handler re-reads the object). It returns what the run did.
func RunDelivery(t *testing.T, cfg Config) Stats {
	events := cfg.Events
	if events <= 0 {
		events = 2000
	}
	c := newCluster(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()

	var (
		restartOnce sync.Once
		restartErr  = make(chan error, 1)
		restarted   atomic.Bool
	)
	at := func(done int) {
		if cfg.Restart != nil && done >= events/3 {
			restartOnce.Do(func() {
				go func() {
					restarted.Store(true)
					restartErr <- cfg.Restart()
				}()
			})
		}
	}
	objs, made, err := c.generate(ctx, events, false, at)
	require.NoError(t, err)
	if cfg.Restart != nil {
		require.True(t, restarted.Load(), "the restart hook never ran")
		require.NoError(t, <-restartErr, "restart hook")
	}
	generated := time.Since(start)
	c.settle(t, time.Minute)
	t.Logf("events generated in %v, all delivered after %v", generated, time.Since(start))
	st := c.check(t, objs)
	st.Events, st.Duration = made, time.Since(start)
	assert.GreaterOrEqual(t, st.Callbacks, len(objs), "every object's final status reached a callback")
	if cfg.Restart != nil && !cfg.StoresHideRestart {
		assert.Positive(t, st.StoreErrs, "the store never noticed the restart: the run proves nothing about it")
	}
	return st
}

// RunKilledReplica kills replica 1 inside a callback, after it delivered a
// few events: the callback never returns and its claim is never released,
// and the replica answers nothing from then on. It fails t unless the
// event it held reaches exactly one callback on another replica once
// cfg.Lease expires, and every other of the cfg.KillEvents events is
// delivered exactly once. It needs cfg.Lease.
func RunKilledReplica(t *testing.T, cfg Config) {
	if cfg.Lease <= 0 {
		t.Fatal("replicatest: RunKilledReplica needs Config.Lease, the stores' lease")
	}
	events := cfg.KillEvents
	if events <= 0 {
		events = 200
	}
	c := newCluster(t, cfg)
	victim := c.replicas[1]
	release := make(chan struct{})
	var (
		seen     atomic.Int32
		heldOnce sync.Once
		held     string
	)
	hook := func(key string) {
		if !victim.dead.Load() && seen.Add(1) < 5 {
			return
		}
		heldOnce.Do(func() {
			held = key
			victim.dead.Store(true)
			victim.kill()
		})
		<-release
		runtime.Goexit() // never returns to the handler: no Complete, no Release
	}
	victim.onCallback.Store(&hook)
	t.Cleanup(func() { close(release) }) // runs before the replica's server closes

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Payments only: each has one event, so the held event's status is
	// still the API's when another replica redelivers it.
	objs, _, err := c.generate(ctx, events, true, nil)
	require.NoError(t, err)
	c.settle(t, time.Minute)
	require.True(t, victim.dead.Load(), "the victim replica was never killed")
	c.check(t, objs)

	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, held)
	assert.Len(t, c.delivered[held], 1, "the event held by the killed replica was delivered once, elsewhere")
	for _, r := range c.delivered[held] {
		assert.NotEqual(t, victim.idx, r, "the killed replica cannot have delivered it")
	}
}

// countingStore counts a store's calls and errors.
type countingStore struct {
	inner webhook.DedupeStore
	mu    sync.Mutex
	calls map[string]int
	errs  int
}

func (s *countingStore) count(m string, err error) {
	s.mu.Lock()
	s.calls[m]++
	if err != nil {
		s.errs++
	}
	s.mu.Unlock()
}

func (s *countingStore) Claim(ctx context.Context, key string) (webhook.DedupeClaim, error) {
	c, err := s.inner.Claim(ctx, key)
	s.count("Claim", err)
	return c, err
}

func (s *countingStore) Complete(ctx context.Context, key string) error {
	err := s.inner.Complete(ctx, key)
	s.count("Complete", err)
	return err
}

func (s *countingStore) Release(ctx context.Context, key string) error {
	err := s.inner.Release(ctx, key)
	s.count("Release", err)
	return err
}
