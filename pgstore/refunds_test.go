package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// Addresses: a valid tron one, a valid bitcoin one, a tron one whose
// checksum fails.
const (
	tronAddr  = "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"
	btcAddr   = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
	badTronTx = "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2H" // one digit off: the checksum fails
)

// frig is a refund test's world: the queue, the tracker (no API: the
// tests write the payments' rows as a tracker's worker would) and the
// refunds, on fresh tables.
type frig struct {
	pool    *pgxpool.Pool
	queue   *pgstore.Queue
	tracker *pgstore.Tracker
	refunds *pgstore.Refunds
	tables  [3]string // queue, tracker, refunds
}

func newFRig(t testing.TB, pool *pgxpool.Pool, tables [3]string, create bool) *frig {
	t.Helper()
	ctx := context.Background()
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: tables[0], CreateTable: create})
	require.NoError(t, err)
	tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: tables[1], CreateTable: create})
	require.NoError(t, err)
	rf, err := pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: tables[2], CreateTable: create})
	require.NoError(t, err)
	return &frig{pool: pool, queue: q, tracker: tr, refunds: rf, tables: tables}
}

func freshFRig(t testing.TB) *frig {
	srv := pgtest.Need(t)
	return newFRig(t, srv.Pool(t, 16), [3]string{pgtest.Name("intents"), pgtest.Name("tracked"), pgtest.Name("refunds")}, true)
}

// track writes orderID's payment as the tracker records it: status, pay
// and paid amounts in usdt on tron; late adds a history change after
// expiredAt that raised the paid amount.
func (r *frig) track(t testing.TB, orderID string, status cryptopay.PaymentStatus, pay, paid string, late bool) {
	t.Helper()
	ctx := context.Background()
	_, err := r.pool.Exec(ctx, "INSERT INTO "+r.tables[1]+` (order_id, payment_id, pay_amount, currency, network, state, status,
paid_amount, needs_action, changes) VALUES ($1, $2, $3::numeric, 'usdt', 'tron', 'closed', $4, $5::numeric, $6, 1)`,
		orderID, "pay-"+orderID, pay, string(status), paid, status.NeedsAction() || late)
	require.NoError(t, err)
	_, err = r.pool.Exec(ctx, "INSERT INTO "+r.tables[1]+`_history (order_id, seq, payment_id, from_status, to_status, from_paid,
to_paid, late) VALUES ($1, 1, $2, 'expired', $3, 0, $4::numeric, $5)`, orderID, "pay-"+orderID, string(status), paid, late)
	require.NoError(t, err)
}

// rows counts the rows of the refunds table and the queue's.
func (r *frig) rows(t testing.TB) (refunds, intents int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT count(*) FROM "+r.tables[2]).Scan(&refunds))
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT count(*) FROM "+r.tables[0]).Scan(&intents))
	return refunds, intents
}

// sum is the sum of orderID's refunds and of their intents, as text.
func (r *frig) sum(t testing.TB, orderID string) (refunds, intents, total string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT COALESCE(sum(amount), 0)::text FROM "+r.tables[2]+" WHERE order_id = $1",
		orderID).Scan(&refunds))
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT COALESCE(sum(i.amount), 0)::text FROM "+r.tables[0]+" i JOIN "+r.tables[2]+
		" f ON f.id = i.order_id WHERE f.order_id = $1", orderID).Scan(&intents))
	require.NoError(t, r.pool.QueryRow(ctx, "SELECT COALESCE((SELECT refunded::text FROM "+r.tables[2]+"_totals WHERE order_id = $1), '0')",
		orderID).Scan(&total))
	norm := func(s string) string { return decimal.RequireFromString(s).String() } // 100.000000 is 100
	return norm(refunds), norm(intents), norm(total)
}

// claimable makes a refund of orderID's excess that awaits its claim.
func (r *frig) claimable(t testing.TB, orderID, key string) *pgstore.Refund {
	t.Helper()
	p := refundTo(orderID, key, pgstore.RefundExcess)
	p.WalletAddress, p.CustomerIP = "", ""
	f, _, err := r.refunds.Create(context.Background(), p)
	require.NoError(t, err)
	return f
}

func refundTo(orderID, key string, rule pgstore.RefundRule) pgstore.RefundParams {
	return pgstore.RefundParams{OrderID: orderID, Key: key, Rule: rule, WalletAddress: tronAddr, CustomerID: "cust-1",
		CustomerIP: "203.0.113.7", Actor: "alice", Note: "customer asked"}
}

func TestRefundRules(t *testing.T) {
	r := freshFRig(t)
	r.track(t, "over", cryptopay.PaymentPaidOver, "100", "100.500001", false)
	r.track(t, "partial", cryptopay.PaymentPaidPartial, "100", "40.123456", false)
	r.track(t, "late", cryptopay.PaymentPaid, "100", "100", true)
	r.track(t, "expired", cryptopay.PaymentExpired, "100", "3.5", false)
	r.track(t, "places", cryptopay.PaymentPaid, "100", "100", false)
	r.track(t, "ontime", cryptopay.PaymentPaid, "100", "100", false)
	amount := func(o, key, a string) pgstore.RefundParams {
		p := refundTo(o, key, pgstore.RefundAmount)
		p.Amount = decimal.RequireFromString(a)
		return p
	}
	tests := []struct {
		name    string
		p       pgstore.RefundParams
		want    string // the refund's amount, or "" when refused
		wantErr error
	}{
		{"the excess of an overpayment", refundTo("over", "k1", pgstore.RefundExcess), "0.500001", nil},
		{"the excess again: nothing left", refundTo("over", "k2", pgstore.RefundExcess), "", pgstore.ErrNothingToRefund},
		{"all of a partial payment", refundTo("partial", "k1", pgstore.RefundAllPaid), "40.123456", nil},
		{"all of a late payment", refundTo("late", "k1", pgstore.RefundAllPaid), "100", nil},
		{"all of an expired payment with money on it", refundTo("expired", "k1", pgstore.RefundAllPaid), "3.5", nil},
		{"all of a payment paid in time: not this rule", refundTo("ontime", "k1", pgstore.RefundAllPaid), "", pgstore.ErrRefundRule},
		{"an excess where none was paid", refundTo("ontime", "k2", pgstore.RefundExcess), "", pgstore.ErrRefundRule},
		{"an amount given", amount("ontime", "k3", "99.999999"), "99.999999", nil},
		{"one digit above what is left", amount("ontime", "k4", "0.000002"), "", pgstore.ErrRefundExceedsPaid},
		{"exactly what is left", amount("ontime", "k5", "0.000001"), "0.000001", nil},
		{"of the excess, after an amount took more of the paid", amount("over", "k3", "100.5"), "", pgstore.ErrRefundExceedsPaid},
		{"a payment not tracked", refundTo("nobody", "k1", pgstore.RefundAllPaid), "", pgstore.ErrNotTracked},
		{"more places than usdt on tron has", amount("places", "k9", "0.0000001"), "", &cryptopay.ValidationError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beforeF, beforeI := r.rows(t)
			f, created, err := r.refunds.Create(context.Background(), tt.p)
			afterF, afterI := r.rows(t)
			if tt.want == "" {
				if ve, ok := tt.wantErr.(*cryptopay.ValidationError); ok {
					require.ErrorAs(t, err, &ve)
				} else {
					require.ErrorIs(t, err, tt.wantErr)
				}
				assert.Equal(t, [2]int{beforeF, beforeI}, [2]int{afterF, afterI}, "a refusal writes nothing")
				return
			}
			require.NoError(t, err)
			assert.True(t, created)
			assert.Equal(t, tt.want, f.Amount.String())
			assert.Equal(t, pgstore.RefundEnqueued, f.State)
			assert.Equal(t, [2]int{beforeF + 1, beforeI + 1}, [2]int{afterF, afterI}, "one refund, one intent")
			in, err := r.queue.Get(context.Background(), f.ID)
			require.NoError(t, err)
			assert.Equal(t, pgstore.StateNeedsApproval, in.State, "held for approval")
			assert.Equal(t, tt.want, in.Params.Amount.String())
			assert.Equal(t, "usdt", in.Params.Currency)
			assert.Equal(t, "tron", in.Params.Network)
			assert.Equal(t, "alice", in.EnqueuedBy)
		})
	}
	for o, want := range map[string]string{"over": "0.500001", "partial": "40.123456", "late": "100", "ontime": "100"} {
		refunds, intents, total := r.sum(t, o)
		assert.Equal(t, [3]string{want, want, want}, [3]string{refunds, intents, total}, "order %s: refunds, intents, total", o)
	}
}

func TestRefundRefusesBadParams(t *testing.T) {
	r := freshFRig(t)
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "12", false)
	edit := func(f func(*pgstore.RefundParams)) pgstore.RefundParams {
		p := refundTo("o1", "k", pgstore.RefundExcess)
		f(&p)
		return p
	}
	tests := []struct {
		name, field string
		p           pgstore.RefundParams
	}{
		{"an address of another network", "WalletAddress", edit(func(p *pgstore.RefundParams) { p.WalletAddress = btcAddr })},
		{"an address whose checksum fails", "WalletAddress", edit(func(p *pgstore.RefundParams) { p.WalletAddress = badTronTx })},
		{"no key", "Key", edit(func(p *pgstore.RefundParams) { p.Key = "" })},
		{"no actor", "actor", edit(func(p *pgstore.RefundParams) { p.Actor = "" })},
		{"no customer", "CustomerID", edit(func(p *pgstore.RefundParams) { p.CustomerID = "" })},
		{"an amount with the excess rule", "Amount", edit(func(p *pgstore.RefundParams) { p.Amount = decimal.NewFromInt(1) })},
		{"an address without the customer's IP", "CustomerIP", edit(func(p *pgstore.RefundParams) { p.CustomerIP = "" })},
		{"no rule", "Rule", edit(func(p *pgstore.RefundParams) { p.Rule = "" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := r.refunds.Create(context.Background(), tt.p)
			var ve *cryptopay.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.field, ve.Field)
			f, i := r.rows(t)
			assert.Equal(t, [2]int{0, 0}, [2]int{f, i}, "nothing written")
		})
	}
}

func TestRefundIdempotentAndFourEyes(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "12", false)
	p := refundTo("o1", "ticket-7", pgstore.RefundExcess)
	p.Actor = "Alice" // recorded in its canonical form
	first, created, err := r.refunds.Create(ctx, p)
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, pgstore.RefundID("o1", "ticket-7"), first.ID)
	assert.Equal(t, "alice", first.ActorID)

	again, created, err := r.refunds.Create(ctx, p) // the retried request
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, "2", again.Amount.String())

	other := p
	other.Rule, other.Amount = pgstore.RefundAmount, decimal.NewFromInt(1)
	_, _, err = r.refunds.Create(ctx, other)
	require.ErrorIs(t, err, pgstore.ErrRefundConflict)
	f, i := r.rows(t)
	assert.Equal(t, [2]int{1, 1}, [2]int{f, i})

	// Four eyes: the asker's approval does not count, in any case or
	// width; one principal counts once, whatever actor id it names; two
	// others do.
	in, err := r.queue.Get(ctx, first.ID)
	require.NoError(t, err)
	assert.Equal(t, "alice", in.EnqueuedBy)
	for _, asker := range []string{"alice", "ALICE", "\uff41lice"} {
		require.ErrorIs(t, r.queue.Approve(ctx, first.ID, asker, ""), pgstore.ErrApprovalNotCounted, asker)
	}
	require.NoError(t, r.queue.Approve(ctx, first.ID, "bob", ""))
	_, err = approveBy(ctx, r.queue, first.ID, pgstore.Operator{ID: "dave", Login: "Bob"}, "")
	require.ErrorIs(t, err, pgstore.ErrApprovalNotCounted, "bob's principal again, as dave")
	in, err = r.queue.Get(ctx, first.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State, "one approval of two")
	require.NoError(t, r.queue.Approve(ctx, first.ID, "carol", ""))
	got, err := r.refunds.Get(ctx, first.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, got.PayoutState)
}

func TestRefundReleasedByRejection(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidPartial, "10", "4", false)
	f, _, err := r.refunds.Create(ctx, refundTo("o1", "k1", pgstore.RefundAllPaid))
	require.NoError(t, err)
	_, _, err = r.refunds.Create(ctx, refundTo("o1", "k2", pgstore.RefundAllPaid))
	require.ErrorIs(t, err, pgstore.ErrNothingToRefund)

	require.NoError(t, r.queue.Reject(ctx, f.ID, "bob", "wrong address"))
	got, err := r.refunds.Get(ctx, f.ID)
	require.NoError(t, err)
	assert.False(t, got.Holds(got.CreatedAt), "a rejected payout holds nothing")
	again, created, err := r.refunds.Create(ctx, refundTo("o1", "k2", pgstore.RefundAllPaid))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, "4", again.Amount.String())
	_, _, total := r.sum(t, "o1")
	assert.Equal(t, "4", total, "the running total holds the live refund only")
}

func TestRefundClaim(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "12.25", false)
	f := r.claimable(t, "o1", "k1")
	assert.Equal(t, pgstore.RefundAwaitingClaim, f.State)
	assert.False(t, f.ClaimUntil.IsZero())
	_, intents := r.rows(t)
	require.Equal(t, 0, intents, "nothing is enqueued before the claim")
	_, _, err := r.refunds.Create(ctx, refundTo("o1", "k2", pgstore.RefundExcess))
	require.ErrorIs(t, err, pgstore.ErrNothingToRefund, "an open claim holds its amount")

	_, err = r.refunds.Claim(ctx, f.ID, btcAddr, "198.51.100.1")
	var ve *cryptopay.ValidationError
	require.ErrorAs(t, err, &ve, "a bitcoin address for a tron refund")
	got, err := r.refunds.Get(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.RefundAwaitingClaim, got.State)

	c, err := r.refunds.Claim(ctx, f.ID, tronAddr, "198.51.100.1")
	require.NoError(t, err)
	assert.Equal(t, pgstore.RefundEnqueued, c.State)
	in, err := r.queue.Get(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Equal(t, "2.25", in.Params.Amount.String())
	assert.Equal(t, tronAddr, in.Params.WalletAddress)
	assert.Equal(t, "198.51.100.1", in.Params.CustomerIP)
	assert.Equal(t, f.ActorID, in.EnqueuedBy, "enqueued in the asker's name, whoever claimed")
	require.NotEmpty(t, f.ActorID)
	require.ErrorIs(t, r.queue.Approve(ctx, f.ID, strings.ToUpper(f.ActorID), ""), pgstore.ErrApprovalNotCounted,
		"the asker's approval of a claimed refund never counts")

	_, err = r.refunds.Claim(ctx, f.ID, tronAddr, "198.51.100.2")
	require.ErrorIs(t, err, pgstore.ErrClaimClosed, "a second claim")
	in2, err := r.queue.Get(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, "198.51.100.1", in2.Params.CustomerIP, "unchanged")
}

func TestRefundClaimExpired(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "11", false)
	f := r.claimable(t, "o1", "k1")
	_, err := r.pool.Exec(ctx, "UPDATE "+r.tables[2]+" SET claim_until = now() - interval '1 second' WHERE id = $1", f.ID)
	require.NoError(t, err)

	_, err = r.refunds.Claim(ctx, f.ID, tronAddr, "198.51.100.1")
	require.ErrorIs(t, err, pgstore.ErrClaimClosed)
	_, intents := r.rows(t)
	assert.Equal(t, 0, intents, "an expired claim enqueues nothing")
	again, _, err := r.refunds.Create(ctx, refundTo("o1", "k2", pgstore.RefundExcess))
	require.NoError(t, err, "a closed claim holds nothing")
	assert.Equal(t, "1", again.Amount.String())
}

func TestResolutions(t *testing.T) {
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "11", false)
	r.track(t, "o2", cryptopay.PaymentPaidPartial, "10", "9.99", false)
	r.track(t, "o3", cryptopay.PaymentPaid, "10", "10", false)
	f, _, err := r.refunds.Create(ctx, refundTo("o1", "k1", pgstore.RefundExcess))
	require.NoError(t, err)

	un, err := r.refunds.Unresolved(ctx, "", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"o1", "o2"}, un, "the payments that need action")

	tests := []struct {
		name           string
		order          string
		kind           pgstore.ResolutionKind
		refund, note   string
		wantErr        error
		wantValidation string
	}{
		{"refunded by its refund", "o1", pgstore.ResolutionRefunded, f.ID, "excess returned", nil, ""},
		{"refunded by another payment's refund", "o2", pgstore.ResolutionRefunded, f.ID, "x", pgstore.ErrRefundNotFound, ""},
		{"refunded without a refund", "o2", pgstore.ResolutionRefunded, "", "x", nil, "refundID"},
		{"accepted naming a refund", "o2", pgstore.ResolutionAccepted, f.ID, "x", nil, "refundID"},
		{"no note", "o2", pgstore.ResolutionAccepted, "", "", nil, "note"},
		{"an unknown kind", "o2", "forgiven", "", "x", nil, "kind"},
		{"not tracked", "o9", pgstore.ResolutionWrittenOff, "", "x", pgstore.ErrNotTracked, ""},
		{"accepted as paid", "o2", pgstore.ResolutionAccepted, "", "one cent short, let go", nil, ""},
		{"then written off: appended", "o2", pgstore.ResolutionWrittenOff, "", "ledger says so", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.refunds.Resolve(ctx, tt.order, tt.kind, tt.refund, "bob", tt.note)
			switch {
			case tt.wantValidation != "":
				var ve *cryptopay.ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, tt.wantValidation, ve.Field)
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			default:
				require.NoError(t, err)
			}
		})
	}
	got, err := r.refunds.Resolutions(ctx, "o2")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []pgstore.ResolutionKind{pgstore.ResolutionAccepted, pgstore.ResolutionWrittenOff}, []pgstore.ResolutionKind{got[0].Kind, got[1].Kind})
	assert.Equal(t, "bob", got[1].ActorID)
	got, err = r.refunds.Resolutions(ctx, "o1")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, f.ID, got[0].RefundID)
	un, err = r.refunds.Unresolved(ctx, "", 0)
	require.NoError(t, err)
	assert.Empty(t, un)
}

// The race: raceProcs processes, each with two pools of its own, each
// pool with raceWorkers goroutines, ask for refunds of raceAmount on one
// payment (every process also retries raceShared requests with the same
// keys). The payment paid racePaid: at most 14 refunds fit.
const (
	raceChildEnv = "PGSTORE_REFUND_RACE"
	raceProcs    = 3
	raceWorkers  = 4
	raceTries    = 3 // each goroutine's own keys
	raceShared   = 4 // keys every process tries
	racePaid     = "100.000007"
	raceAmount   = "7.000001"
)

func TestRefundRace(t *testing.T) {
	if tables := os.Getenv(raceChildEnv); tables != "" {
		refundRaceChild(t, tables)
		return
	}
	srv := pgtest.Need(t)
	r := freshFRig(t)
	r.track(t, "race", cryptopay.PaymentPaidOver, "50", racePaid, false)
	tables := strings.Join(r.tables[:], ",")
	var wg sync.WaitGroup
	outs := make([]string, raceProcs)
	errs := make([]error, raceProcs)
	for i := range raceProcs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRefundRace$", "-test.count=1", "-test.v")
			cmd.Env = append(srv.ChildEnv(), raceChildEnv+"="+tables, "PGSTORE_REFUND_PROC="+strconv.Itoa(i))
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	created := 0
	for i := range raceProcs {
		require.NoError(t, errs[i], "child %d:\n%s", i, outs[i])
		var n int
		_, err := fmt.Sscanf(outs[i][strings.Index(outs[i], "created=")+len("created="):], "%d", &n)
		require.NoError(t, err, "child %d:\n%s", i, outs[i])
		created += n
	}
	// 14 × 7.000001 = 98.000014 ≤ 100.000007 < 15 × 7.000001.
	refunds, intents, total := r.sum(t, "race")
	assert.Equal(t, "98.000014", refunds, "the refunds' sum, to the digit")
	assert.Equal(t, "98.000014", intents, "the payout intents' sum")
	assert.Equal(t, "98.000014", total, "the running total")
	f, i := r.rows(t)
	assert.Equal(t, [3]int{14, 14, 14}, [3]int{f, i, created}, "refunds, intents, creations reported")

	// What is left, to the digit, and not one unit more.
	p := refundTo("race", "rest", pgstore.RefundAmount)
	p.Amount = decimal.RequireFromString("1.999994")
	_, _, err := r.refunds.Create(context.Background(), p)
	require.ErrorIs(t, err, pgstore.ErrRefundExceedsPaid)
	p.Key, p.Amount = "rest2", decimal.RequireFromString("1.999993")
	_, _, err = r.refunds.Create(context.Background(), p)
	require.NoError(t, err)
	refunds, _, total = r.sum(t, "race")
	assert.Equal(t, [2]string{racePaid, racePaid}, [2]string{refunds, total})

	// The database's own check: no statement takes the total above paid.
	_, err = r.pool.Exec(context.Background(), "UPDATE "+r.tables[2]+"_totals SET refunded = paid + 0.000001 WHERE order_id = 'race'")
	require.ErrorContains(t, err, "SQLSTATE 23514")
}

// Two customers' browsers (or a double click) post one claim at once, on
// separate pools: one claim, one payout intent.
func TestRefundClaimRace(t *testing.T) {
	srv := pgtest.Need(t)
	r := freshFRig(t)
	ctx := context.Background()
	r.track(t, "o1", cryptopay.PaymentPaidOver, "10", "12", false)
	f := r.claimable(t, "o1", "k1")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		other := newFRig(t, srv.Pool(t, 2), r.tables, false)
		wg.Go(func() { _, errs[i] = other.refunds.Claim(ctx, f.ID, tronAddr, fmt.Sprintf("198.51.100.%d", i+1)) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, pgstore.ErrClaimClosed)
	}
	assert.Equal(t, 1, won)
	refunds, intents := r.rows(t)
	assert.Equal(t, [2]int{1, 1}, [2]int{refunds, intents})
}

// refundRaceChild is one process of TestRefundRace: it prints how many
// refunds it created, and fails on any answer but a refund or a refusal
// for exceeding the paid amount.
func refundRaceChild(t *testing.T, tables string) {
	srv := pgtest.Need(t)
	var names [3]string
	copy(names[:], strings.Split(tables, ","))
	proc := os.Getenv("PGSTORE_REFUND_PROC")
	var created sync.Map
	var wg sync.WaitGroup
	for pool := range 2 {
		r := newFRig(t, srv.Pool(t, raceWorkers), names, false)
		for w := range raceWorkers {
			wg.Go(func() {
				keys := make([]string, 0, raceShared+raceTries)
				for k := range raceShared {
					keys = append(keys, fmt.Sprintf("shared-%d", k))
				}
				for k := range raceTries {
					keys = append(keys, fmt.Sprintf("p%s-%d-%d-%d", proc, pool, w, k))
				}
				for _, key := range keys {
					p := refundTo("race", key, pgstore.RefundAmount)
					p.Amount = decimal.RequireFromString(raceAmount)
					f, isNew, err := r.refunds.Create(context.Background(), p)
					switch {
					case err == nil && isNew:
						created.Store(f.ID, true)
					case err == nil: // a retry of a key another made
					default:
						assert.ErrorIs(t, err, pgstore.ErrRefundExceedsPaid)
					}
				}
			})
		}
	}
	wg.Wait()
	n := 0
	created.Range(func(any, any) bool { n++; return true })
	fmt.Printf("created=%d\n", n)
}
