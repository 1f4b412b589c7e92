package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// waitCount polls n until it reaches at least want (a generous bound on a
// hang, not a measurement).
func waitCount(t *testing.T, what string, want int, n func() int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n() < want {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d, want %d", what, n(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Attempts are bounded: a server that never shows the payout in its list
// (every create dropped, and the list says "not created" each time) gets
// MaxAttempts create requests, then the intent is parked with
// HoldMaxAttempts for a person; later reconciliations send nothing.
// Before, the queue sent again after every "not created", without bound.
func TestQueueMaxAttempts(t *testing.T) {
	for _, max := range []int{1, 3} {
		t.Run("", func(t *testing.T) {
			r := newQRig(t)
			q := r.queue(t, func(c *pgstore.QueueConfig) { c.MaxAttempts = max })
			r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true, Times: 1 << 20})
			p := payoutParams(1)
			r.enqueue(t, q, p)
			run(t, q)
			in := waitIntent(t, q, p.OrderID, "parked at the bound", func(in *pgstore.Intent) bool {
				return in.State == pgstore.StateParked && in.Hold == pgstore.HoldMaxAttempts
			})
			lists := r.fake.Requests(cryptopaytest.RouteListPayouts)
			waitCount(t, "more reconciliations", lists+3, func() int { return r.fake.Requests(cryptopaytest.RouteListPayouts) })
			assert.Equal(t, max, r.fake.Requests(cryptopaytest.RouteCreatePayout), "MaxAttempts create requests")
			assert.Equal(t, max, in.Attempts)
			assert.Equal(t, "not_created", in.Verdict)
			assert.Contains(t, in.LastError, "MaxAttempts")
		})
	}
}

// Velocity counts every attempt that may have created a payout, not each
// intent once: under a cap of 25, an intent of 10 whose creates are all
// dropped is sent twice (20), and the third attempt (30) is held by the
// cap. Before, the intent counted 10 however often it was sent.
func TestQueueVelocityCountsAttempts(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.MaxAttempts = 10
		c.Guardrails = pgstore.Guardrails{Velocity: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(25)}, VelocityWindow: time.Hour}
	})
	r.fake.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Drop: true, Times: 1 << 20})
	p := withAmount(payoutParams(1), "10")
	r.enqueue(t, q, p)
	run(t, q)
	in := waitIntent(t, q, p.OrderID, "held by the cap", func(in *pgstore.Intent) bool {
		return in.State == pgstore.StateQueued && in.Attempts > 0
	})
	assert.Contains(t, in.LastError, "velocity")
	assert.Contains(t, in.LastError, "to 30")
	assert.Equal(t, 2, r.fake.Requests(cryptopaytest.RouteCreatePayout))
	assert.Equal(t, 2, in.Attempts)
}

// Guardrails compare canonical keys: a cap keyed "USDT" or "usdt " is
// refused at NewQueue with the canonical spelling named, and an intent
// whose currency or network is not canonical is refused at Enqueue, so no
// spelling slips past a cap, a sum or a lock. Before, "usdt " matched no
// cap and was paid whatever its amount.
func TestQueueCanonicalKeys(t *testing.T) {
	r := newQRig(t)
	for _, key := range []string{"USDT", "usdt ", "Usdt"} {
		for name, g := range map[string]pgstore.Guardrails{
			"MaxAmount":     {MaxAmount: map[string]decimal.Decimal{key: decimal.NewFromInt(1)}},
			"Velocity":      {Velocity: map[string]decimal.Decimal{key: decimal.NewFromInt(1)}},
			"ApprovalAbove": {ApprovalAbove: map[string]decimal.Decimal{key: decimal.NewFromInt(1)}},
		} {
			cfg := r.config(nil)
			cfg.Guardrails = g
			_, err := pgstore.NewQueue(context.Background(), cfg)
			assert.ErrorIs(t, err, pgstore.ErrInvalidOption, "%s[%q]", name, key)
			assert.ErrorContains(t, err, `"usdt"`, "the canonical spelling is named")
		}
	}
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails = pgstore.Guardrails{MaxAmount: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)}}
	})
	tests := []struct {
		field string
		edit  func(*cryptopay.CreatePayoutParams)
	}{
		{"Currency", func(p *cryptopay.CreatePayoutParams) { p.Currency = "usdt " }},
		{"Currency", func(p *cryptopay.CreatePayoutParams) { p.Currency = "USDT" }},
		{"Network", func(p *cryptopay.CreatePayoutParams) { p.Network = "Tron" }},
	}
	for i, tt := range tests {
		p := withAmount(payoutParams(i), "5000")
		tt.edit(&p)
		err := pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error {
			_, err := q.Enqueue(context.Background(), tx, p)
			return err
		})
		var ve *cryptopay.ValidationError
		require.ErrorAs(t, err, &ve, "%q/%q", p.Currency, p.Network)
		assert.Equal(t, tt.field, ve.Field)
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	}
	counts, err := q.Counts(context.Background())
	require.NoError(t, err)
	assert.Empty(t, counts, "nothing enqueued")
}

// The velocity lock is the table's identity in the database, not its
// spelling: a queue on "public.x" and one on "x" take the same lock, so
// the second waits for the first. Before, the two spellings took two
// locks and both replicas could pass the cap together.
func TestQueueVelocityLockByTableIdentity(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q1 := r.queue(t, func(c *pgstore.QueueConfig) { c.Table = "public." + r.table })
	q2 := r.queue(t, func(c *pgstore.QueueConfig) { c.Table, c.CreateTable = r.table, false })
	p, limit := payoutParams(1), decimal.NewFromInt(100)

	tx1, err := r.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(ctx) }()
	require.NoError(t, pgstore.VelocityCheck(ctx, q1, tx1, p, limit))

	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		done <- pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error { return pgstore.VelocityCheck(ctx, q2, tx, p, limit) })
	})
	waiting := func() int {
		var n int
		_ = r.pool.QueryRow(ctx, "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&n)
		select {
		case <-done:
			return -1 << 30 // finished without waiting: the lock was another
		default:
		}
		return n
	}
	waitCount(t, "the second spelling waiting on the first's lock", 1, waiting)
	require.NoError(t, tx1.Rollback(ctx))
	wg.Wait()
	assert.NoError(t, <-done)
}

// Every guardrail is checked at Enqueue by the code the worker runs: an
// intent above MaxAmount is blocked at once, never offered for approval
// (an operator would approve a payout that can never be sent), and
// CheckGuardrails says the same. Before, it waited in needs_approval.
func TestQueueMaxAmountAtEnqueue(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Guardrails = pgstore.Guardrails{
			MaxAmount:     map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)},
			ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(50)},
		}
	})
	big, mid := withAmount(payoutParams(1), "200"), withAmount(payoutParams(2), "60")
	stops, err := q.CheckGuardrails(context.Background(), []cryptopay.CreatePayoutParams{big, mid})
	require.NoError(t, err)
	require.Len(t, stops, 2)
	assert.Equal(t, "max_amount", stops[0].Err.Rule)
	assert.Equal(t, "approval", stops[1].Err.Rule)
	r.enqueue(t, q, big, mid)
	in, err := q.Get(context.Background(), big.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateBlocked, in.State)
	assert.Contains(t, in.LastError, "max_amount")
	assert.True(t, in.CallbackDue, "its callback is due")
	in, err = q.Get(context.Background(), mid.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)

	run(t, q) // with OnFinal: the blocked intent's callback runs once
	waitIntent(t, q, big.OrderID, "callback run", func(in *pgstore.Intent) bool { return !in.CallbackDue })
	assert.Equal(t, map[string]int{big.OrderID: 1}, r.effectCounts(t))
	assert.Zero(t, r.fake.Requests(cryptopaytest.RouteCreatePayout))
}

// sqlTexts is a pgx tracer that keeps every statement's text.
type sqlTexts struct {
	mu    sync.Mutex
	texts []string
}

func (s *sqlTexts) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	s.texts = append(s.texts, d.SQL)
	s.mu.Unlock()
	return ctx
}

func (s *sqlTexts) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sqlTexts) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	for _, q := range d.Batch.QueuedQueries {
		s.texts = append(s.texts, q.SQL)
	}
	s.mu.Unlock()
	return ctx
}

func (s *sqlTexts) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (s *sqlTexts) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// No SQL text is built from a value: through enqueue, send, follow and the
// final transaction with OnFinal, neither the orderId nor the payout id
// nor an error text ever appears in a statement's text; they travel as
// parameters. Before, the final transaction's BEGIN carried them as
// literals quoted by hand.
func TestQueueNoValuesInSQL(t *testing.T) {
	r := newQRig(t)
	var seen sqlTexts
	cfg, err := pgxpool.ParseConfig(r.srv.DSN())
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = &seen
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q := r.queue(t, func(c *pgstore.QueueConfig) { c.Pool = pool })
	p := payoutParams(1)
	p.OrderID = "wd-plain-value-0001" // a literal quoted by hand would still show it
	r.enqueue(t, q, p)
	r.payAll(t)
	run(t, q)
	in := waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	seen.mu.Lock()
	defer seen.mu.Unlock()
	require.NotEmpty(t, seen.texts)
	for _, sql := range seen.texts {
		assert.NotContains(t, sql, p.OrderID)
		assert.NotContains(t, sql, in.PayoutID)
	}
	assert.Equal(t, map[string]int{p.OrderID: 1}, r.effectCounts(t))
}

// The Observer reports exactly the committed state changes: the enqueue
// (From ""), queued -> sending, and every later move, each once, chained
// (each From is the previous To); a follow poll that finds the payout
// still processing is none. The history holds the same changes, in the
// same order, with an operator's action and its note. Before, every
// follow poll was a created -> created transition, and neither the
// enqueue nor queued -> sending was reported.
func TestQueueObserverAndHistory(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	var obs transitions
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Observer = obs.observe
		c.Guardrails = pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(50)}}
	})
	ps := []cryptopay.CreatePayoutParams{payoutParams(1), payoutParams(2), withAmount(payoutParams(3), "60")}
	r.enqueue(t, q, ps...)
	run(t, q)
	for _, p := range ps[:2] {
		waitIntent(t, q, p.OrderID, "created", func(in *pgstore.Intent) bool { return in.State == pgstore.StateCreated })
	}
	polls := r.fake.Requests(cryptopaytest.RouteGetPayout)
	waitCount(t, "follow polls", polls+10, func() int { return r.fake.Requests(cryptopaytest.RouteGetPayout) })
	require.NoError(t, q.Approve(ctx, ps[2].OrderID, "alice", "KYC checked"))
	require.NoError(t, q.Approve(ctx, ps[2].OrderID, "bob", "KYC checked"))
	r.payAll(t)
	for _, p := range ps {
		waitIntent(t, q, p.OrderID, "paid", func(in *pgstore.Intent) bool { return in.State == pgstore.StatePaid })
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	per := map[string][]pgstore.Transition{}
	for _, tr := range obs.ts {
		assert.NotEqual(t, tr.From, tr.To, "a transition changes the state: %+v", tr)
		per[tr.OrderID] = append(per[tr.OrderID], tr)
	}
	for i, p := range ps {
		trs := per[p.OrderID]
		require.NotEmpty(t, trs, p.OrderID)
		assert.Equal(t, pgstore.IntentState(""), trs[0].From, "the enqueue is reported")
		for k := 1; k < len(trs); k++ {
			assert.Equal(t, trs[k-1].To, trs[k].From, "%s: chained", p.OrderID)
		}
		assert.Equal(t, pgstore.StatePaid, trs[len(trs)-1].To)
		var moves [][2]pgstore.IntentState
		for _, tr := range trs {
			moves = append(moves, [2]pgstore.IntentState{tr.From, tr.To})
		}
		assert.Contains(t, moves, [2]pgstore.IntentState{pgstore.StateQueued, pgstore.StateSending})

		hist, err := q.History(ctx, p.OrderID)
		require.NoError(t, err)
		var hmoves [][2]pgstore.IntentState
		for _, e := range hist {
			assert.False(t, e.At.IsZero())
			if e.From == e.To {
				continue // an action on record: the first of two approvals
			}
			hmoves = append(hmoves, [2]pgstore.IntentState{e.From, e.To})
		}
		assert.Equal(t, moves, hmoves, "%s: the history holds the Observer's transitions", p.OrderID)
		if i == 2 {
			assert.Equal(t, pgstore.StateNeedsApproval, hist[0].To)
			for k, who := range []string{"alice", "bob"} {
				e := hist[1+k]
				assert.Equal(t, "operator", e.Actor)
				assert.Equal(t, who, e.ActorID, "each approval names its approver")
				assert.Equal(t, fmt.Sprintf("approval %d of 2: KYC checked", k+1), e.Note)
			}
			assert.Equal(t, pgstore.StateNeedsApproval, hist[1].To, "one approval holds it still")
			assert.Equal(t, pgstore.StateQueued, hist[2].To, "the second approval queues it")
		}
	}
}

// QueueConfig.Addresses reaches Enqueue: a Checker that refuses an address
// the built-ins accept (or a network they do not check) refuses it in the
// merchant's transaction, with ErrInvalidParams naming WalletAddress, and
// nothing is queued; the zero value checks with the built-ins.
func TestQueueAddressChecker(t *testing.T) {
	r := newQRig(t)
	blocked := errors.New("on the merchant's block list")
	checker := address.Checker{}.
		With("tron", func(a string) error {
			if a == "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G" {
				return blocked
			}
			return address.Tron(a)
		}).
		With("solana", func(a string) error { return errors.New("not a solana address") })
	custom := r.queue(t, func(c *pgstore.QueueConfig) { c.Addresses = checker })
	builtin := r.queue(t)
	solana := payoutParams(3)
	solana.Network, solana.WalletAddress = "solana", "anything"
	tests := []struct {
		name    string
		q       *pgstore.Queue
		p       cryptopay.CreatePayoutParams
		refused bool
	}{
		{"custom refuses a valid tron address", custom, payoutParams(1), true},
		{"built-ins accept it", builtin, payoutParams(2), false},
		{"custom checks a network the built-ins do not know", custom, solana, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := r.pool.Begin(context.Background())
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(context.Background()) }()
			_, err = tt.q.Enqueue(context.Background(), tx, tt.p)
			if !tt.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, cryptopay.ErrInvalidParams)
			var ve *cryptopay.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, "WalletAddress", ve.Field)
		})
	}
}
