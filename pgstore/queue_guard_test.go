package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

func withAmount(p cryptopay.CreatePayoutParams, amount string) cryptopay.CreatePayoutParams {
	p.Amount = decimal.RequireFromString(amount)
	return p
}

func withAddress(p cryptopay.CreatePayoutParams, addr string) cryptopay.CreatePayoutParams {
	p.WalletAddress = addr
	return p
}

// Each blocking guardrail stops its intent before anything is sent: the
// intent is blocked (final, with the rule in LastError and its effect
// committed), the others are paid.
func TestQueueGuardrailsBlock(t *testing.T) {
	tests := []struct {
		name    string
		guard   pgstore.Guardrails
		stopped cryptopay.CreatePayoutParams
		want    string
	}{
		{"max amount", pgstore.Guardrails{MaxAmount: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)}},
			withAmount(payoutParams(2), "100.01"), "max_amount"},
		{"allow-list", pgstore.Guardrails{AllowedAddresses: []string{"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"}},
			withAddress(payoutParams(2), "TMMrY9omJaWVFfuHpCxgDmWX5T6z6H5c6D"), "not on the allow-list"},
		{"check function", pgstore.Guardrails{CheckAddress: func(_ context.Context, p cryptopay.CreatePayoutParams) error {
			if p.WalletAddress == "TQtTaUkzJwkLr82sD4kbePVjn7EaCyrj8q" {
				return errors.New("address on the sanctions list")
			}
			return nil
		}}, withAddress(payoutParams(2), "TQtTaUkzJwkLr82sD4kbePVjn7EaCyrj8q"), "sanctions list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newQRig(t)
			q := r.queue(t, func(c *pgstore.QueueConfig) { c.Guardrails = tt.guard })
			ok := withAmount(payoutParams(1), "100")
			r.enqueue(t, q, ok, tt.stopped)
			r.payAll(t)
			run(t, q)
			// Blocked at enqueue: its OnFinal runs when a worker claims its
			// due callback, which may come after the other's payment.
			waitFor(t, q, "one paid, one blocked, both effects", func(c map[pgstore.IntentState]int) bool {
				return c[pgstore.StatePaid] == 1 && c[pgstore.StateBlocked] == 1 && len(r.effectCounts(t)) == 2
			})
			in, err := q.Get(context.Background(), tt.stopped.OrderID)
			require.NoError(t, err)
			assert.Equal(t, pgstore.StateBlocked, in.State)
			assert.Contains(t, in.LastError, tt.want)
			assert.Zero(t, in.Attempts, "never attempted")
			assert.Zero(t, r.fake.PayoutsWithOrderID(tt.stopped.OrderID))
			assert.Equal(t, 1, r.fake.PayoutsWithOrderID(ok.OrderID))
			assert.Equal(t, map[string]int{ok.OrderID: 1, tt.stopped.OrderID: 1}, r.effectCounts(t))
		})
	}
}

// The rolling cap holds across replicas: three queues (each its own pool,
// as on three machines) race for ten intents of 30 under a cap of 100, and
// exactly three are sent; the rest wait, queued, with the reason.
func TestQueueVelocityAcrossReplicas(t *testing.T) {
	r := newQRig(t)
	guard := pgstore.Guardrails{Velocity: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(100)}, VelocityWindow: time.Hour}
	var queues []*pgstore.Queue
	for range 3 {
		pool := r.srv.Pool(t, 8)
		queues = append(queues, r.queue(t, func(c *pgstore.QueueConfig) { c.Pool, c.Guardrails = pool, guard }))
	}
	const n = 10
	ps := make([]cryptopay.CreatePayoutParams, n)
	for i := range ps {
		ps[i] = withAmount(payoutParams(i), "30")
	}
	r.enqueue(t, queues[0], ps...)
	r.payAll(t)
	for _, q := range queues {
		run(t, q)
	}
	q := queues[0]
	// Wait until every held intent has been refused by the cap at least
	// once, after the three were paid.
	waitFor(t, q, "3 paid, 7 held", func(c map[pgstore.IntentState]int) bool {
		if c[pgstore.StatePaid] != 3 || c[pgstore.StateQueued] != n-3 {
			return false
		}
		held, err := q.List(context.Background(), pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateQueued}})
		if err != nil {
			return false
		}
		for _, in := range held {
			if !strings.Contains(in.LastError, "velocity") {
				return false
			}
		}
		return true
	})
	assert.Equal(t, 3, r.fake.PayoutCount(), "90 of a 100 cap sent; the fourth 30 would pass it")
	stops, err := q.CheckGuardrails(context.Background(), []cryptopay.CreatePayoutParams{withAmount(payoutParams(99), "10"), withAmount(payoutParams(98), "1")})
	require.NoError(t, err)
	require.Len(t, stops, 1, "dry run: 10 fits (90+10), then 1 more does not")
	assert.Equal(t, 1, stops[0].Index)
	assert.Equal(t, "velocity", stops[0].Err.Rule)
}

// Above the threshold an intent waits for approval, through a worker
// restart; once approved by another instance it is paid; a rejected one
// is final with its effect and never sent.
func TestQueueApprovalAcrossRestart(t *testing.T) {
	r := newQRig(t)
	guard := func(c *pgstore.QueueConfig) {
		c.Guardrails = pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1000)}}
	}
	q := r.queue(t, guard)
	small := withAmount(payoutParams(1), "1000")
	big := withAmount(payoutParams(2), "1000.01")
	bad := withAmount(payoutParams(3), "50000")
	r.enqueue(t, q, small, big, bad)
	r.payAll(t)
	stop := run(t, q)
	waitFor(t, q, "the small one paid", func(c map[pgstore.IntentState]int) bool {
		return c[pgstore.StatePaid] == 1 && c[pgstore.StateNeedsApproval] == 2
	})
	stop() // the worker goes away; the approvals wait in the table
	assert.Zero(t, r.fake.PayoutsWithOrderID(big.OrderID), "not sent without approval")

	q2 := r.queue(t, guard) // another process, after a restart
	ctx := context.Background()
	waiting, err := q2.List(ctx, pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateNeedsApproval}})
	require.NoError(t, err)
	require.Len(t, waiting, 2)
	assert.ErrorIs(t, q2.Retry(ctx, big.OrderID, "ops", "x"), pgstore.ErrIntentState)
	require.NoError(t, q2.Approve(ctx, big.OrderID, "alice", "KYC checked"))
	require.NoError(t, q2.Approve(ctx, big.OrderID, "bob", "second pair of eyes"))
	require.NoError(t, q2.Reject(ctx, bad.OrderID, "bob", "unknown customer\r\nno\x07KYC on file"))
	assert.ErrorIs(t, q2.Approve(ctx, bad.OrderID, "alice", "x"), pgstore.ErrIntentState, "a rejected intent stays rejected")
	run(t, q2)
	waitFor(t, q2, "approved paid, rejected final", func(c map[pgstore.IntentState]int) bool {
		return c[pgstore.StatePaid] == 2 && c[pgstore.StateRejected] == 1
	})
	in, err := q2.Get(ctx, big.OrderID)
	require.NoError(t, err)
	assert.Equal(t, "second pair of eyes", in.Note)
	in, err = q2.Get(ctx, bad.OrderID)
	require.NoError(t, err)
	assert.Equal(t, "unknown customer\nno KYC on file", in.Note, "a note's lines kept (\\r\\n as \\n), another control character a space")
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(big.OrderID))
	assert.Zero(t, r.fake.PayoutsWithOrderID(bad.OrderID))
	assert.Equal(t, map[string]int{small.OrderID: 1, big.OrderID: 1, bad.OrderID: 1}, r.effectCounts(t))

	stops, err := q2.CheckGuardrails(ctx, []cryptopay.CreatePayoutParams{small, big})
	require.NoError(t, err)
	require.Len(t, stops, 1)
	assert.Equal(t, "approval", stops[0].Err.Rule)
	assert.Equal(t, big.OrderID, stops[0].OrderID)
}

func TestQueueConfigInvalid(t *testing.T) {
	r := newQRig(t)
	tests := []struct {
		name string
		edit func(*pgstore.QueueConfig)
	}{
		{"no pool", func(c *pgstore.QueueConfig) { c.Pool = nil }},
		{"bad table", func(c *pgstore.QueueConfig) { c.Table = "Robert'); DROP TABLE x" }},
		{"lease too short", func(c *pgstore.QueueConfig) { c.Lease = 2 * c.SendTimeout }},
		{"negative cap", func(c *pgstore.QueueConfig) {
			c.Guardrails.MaxAmount = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(-1)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := r.config(r.fake.Client())
			tt.edit(&cfg)
			_, err := pgstore.NewQueue(context.Background(), cfg)
			assert.ErrorIs(t, err, pgstore.ErrInvalidOption)
		})
	}
}

// A queue without a Client (an operator's tool) enqueues, reads and moves
// intents, and refuses to Run.
func TestQueueWithoutClient(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.queue(t, func(c *pgstore.QueueConfig) {
		c.Client = nil
		c.Guardrails.ApprovalAbove = map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1)}
	})
	tx, err := r.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, tx, payoutParams(1))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, q.Approve(ctx, payoutParams(1).OrderID, "alice", ""))
	require.NoError(t, q.Approve(ctx, payoutParams(1).OrderID, "bob", ""))
	in, err := q.Get(ctx, payoutParams(1).OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State)
	assert.ErrorIs(t, q.Run(ctx), pgstore.ErrInvalidOption)
	assert.Equal(t, 0, r.fake.PayoutCount())
}

// Approval holds whatever process enqueued the intent: enqueued by a
// process without the threshold (as the CLI's payout batch does), the
// intent is held by the worker that would send it, observed like any
// transition; the approval is a column, so a worker started after it
// sends the intent, exactly once.
func TestQueueApprovalByWorker(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	plain := r.queue(t) // the enqueuing process: no guardrails
	small := withAmount(payoutParams(1), "1000")
	big := withAmount(payoutParams(2), "1000.01")
	r.enqueue(t, plain, small, big)
	in, err := plain.Get(ctx, big.OrderID)
	require.NoError(t, err)
	require.Equal(t, pgstore.StateQueued, in.State, "the enqueuing process knows no threshold")

	var mu sync.Mutex
	var held []pgstore.Transition
	guard := func(c *pgstore.QueueConfig) {
		c.Guardrails = pgstore.Guardrails{ApprovalAbove: map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1000)}}
		c.Observer = func(tr pgstore.Transition) {
			if tr.To == pgstore.StateNeedsApproval {
				mu.Lock()
				held = append(held, tr)
				mu.Unlock()
			}
		}
	}
	r.payAll(t)
	stop := run(t, r.queue(t, guard))
	waitFor(t, plain, "the small one paid, the big one held", func(c map[pgstore.IntentState]int) bool {
		return c[pgstore.StatePaid] == 1 && c[pgstore.StateNeedsApproval] == 1
	})
	stop()
	assert.Zero(t, r.fake.PayoutsWithOrderID(big.OrderID), "not sent without approval")
	in, err = plain.Get(ctx, big.OrderID)
	require.NoError(t, err)
	assert.Zero(t, in.Attempts, "no attempt committed")
	assert.Contains(t, in.LastError, "approval threshold")
	assert.True(t, in.ApprovedAt.IsZero())
	mu.Lock()
	assert.Equal(t, []pgstore.Transition{{OrderID: big.OrderID, From: pgstore.StateQueued, To: pgstore.StateNeedsApproval,
		Err: in.LastError}}, held)
	mu.Unlock()

	require.NoError(t, plain.Approve(ctx, big.OrderID, "alice", ""))
	require.NoError(t, plain.Approve(ctx, big.OrderID, "bob", "")) // an operator's tool, no guardrails
	q2 := r.queue(t, guard)                                        // a worker restarted after the approval
	run(t, q2)
	waitFor(t, q2, "both paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 2 })
	in, err = q2.Get(ctx, big.OrderID)
	require.NoError(t, err)
	assert.False(t, in.ApprovedAt.IsZero())
	assert.Equal(t, 1, in.Attempts)
	assert.Equal(t, map[string]int{small.OrderID: 1, big.OrderID: 1}, r.payoutsPerOrder())
	assert.Equal(t, map[string]int{small.OrderID: 1, big.OrderID: 1}, r.effectCounts(t))
}

// A table created before the approval column gets it from CreateTable.
func TestQueueCreateTableAddsApproval(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	ctx := context.Background()
	_, err := r.pool.Exec(ctx, "ALTER TABLE "+q.Table()+" DROP COLUMN approved_at")
	require.NoError(t, err)
	_, err = q.Get(ctx, "none")
	require.Error(t, err, "the reads need the column")
	require.NoError(t, q.CreateTable(ctx))
	_, err = q.Get(ctx, "none")
	require.ErrorIs(t, err, pgstore.ErrIntentNotFound)
}
