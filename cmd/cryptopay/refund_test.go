package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// TestPaymentRefund: an overpayment, tracked from the fake, refunded from
// the CLI with a claim link; the same key again makes nothing; a refund
// above what was paid is refused; the payment is resolved as refunded.
func TestPaymentRefund(t *testing.T) {
	f, pool, table := setupTracked(t)
	ctx := context.Background()
	tr := trackerOn(t, pool, table, f.srv.Client())
	queueTable, refundsTable := pgstoretest.Name("intents"), pgstoretest.Name("refunds")
	q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: queueTable, CreateTable: true})
	require.NoError(t, err)
	_, err = pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: refundsTable, CreateTable: true})
	require.NoError(t, err)
	p := f.createPayment("o-rf-over", "10", "")
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tr.Track(ctx, tx, p); return err }))
	require.NoError(t, f.srv.Pay(p.ID, decimal.RequireFromString("10.75")))
	runTrackerUntil(t, tr, "o-rf-over", "paid_over", func(tp *pgstore.TrackedPayment) bool {
		return tp.Status == cryptopay.PaymentPaidOver
	})
	f.env[envClaimKey] = "cli-claim-key-0123456789abcdef-012345"
	cli := func(args ...string) result {
		r := f.run(append(args, "--tracker-table", table, "--queue-table", queueTable, "--refunds-table", refundsTable, "--actor", "alice")...)
		assertClean(t, r)
		return r
	}
	refund := func(args ...string) (refundOut, result) {
		r := cli(append([]string{"payment", "refund", "o-rf-over", "--customer-id", "c-1", "--claim-url", "https://shop.example/refund",
			"--output", "json"}, args...)...)
		var o refundOut
		if r.code == 0 {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &o), r.stdout)
		}
		return o, r
	}
	o, r := refund("--rule", "excess", "--idempotency-key", "ticket-1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "0.75", o.Amount)
	assert.True(t, o.Created)
	assert.Equal(t, string(pgstore.RefundAwaitingClaim), o.State)
	assert.True(t, strings.HasPrefix(o.ClaimLink, "https://shop.example/refund?t="), o.ClaimLink)
	assert.NotContains(t, r.stdout, f.env[envClaimKey])

	first := o.ID
	again, r := refund("--rule", "excess", "--idempotency-key", "ticket-1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, again.Created)
	assert.Equal(t, o.ID, again.ID)

	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"above what is left", []string{"--rule", "amount", "--amount", "10.000001", "--idempotency-key", "t2"}, exitNo, "would exceed"},
		{"nothing left of the excess", []string{"--rule", "excess", "--idempotency-key", "t3"}, exitNo, "nothing left"},
		{"not a rule", []string{"--rule", "most", "--idempotency-key", "t4"}, exitUsage, "is one of excess, all_paid, amount"},
		{"an address of another network", []string{"--rule", "amount", "--amount", "1", "--idempotency-key", "t5", "--wallet",
			"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "--customer-ip", "203.0.113.9"}, exitUsage, "--wallet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := refund(tt.args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.says)
		})
	}
	r = f.run("payment", "refund", "o-rf-over", "--rule", "excess", "--idempotency-key", "k", "--customer-id", "c", "--refunds-table", refundsTable)
	assert.Equal(t, exitUsage, r.code, "no --claim-url without --wallet")
	assert.Contains(t, r.stderr, "--claim-url")

	// With the address: the payout is enqueued at once, held.
	o, r = refund("--rule", "amount", "--amount", "10", "--idempotency-key", "t6", "--wallet", "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G",
		"--customer-ip", "203.0.113.9")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, string(pgstore.StateNeedsApproval), o.PayoutState)
	assert.Empty(t, o.ClaimLink)

	r = cli("payment", "resolve", "o-rf-over", "--as", "refunded", "--refund", o.ID, "--note", "refunded in full")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "resolved as refunded")
	r = cli("payment", "resolve", "o-rf-over", "--as", "accepted")
	assert.Equal(t, exitUsage, r.code, "no note")
	r = cli("payment", "tracked", "write-off", "o-rf-over", "--note", "the claim was never made")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "resolved as written_off")
	kinds := func() (out []string) {
		rows, err := pool.Query(ctx, "SELECT kind || ' ' || refund_id || ' ' || actor_id FROM "+refundsTable+"_resolutions ORDER BY id")
		require.NoError(t, err)
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, []string{"refunded " + first + " alice", "refunded " + o.ID + " alice", "refunded " + o.ID + " alice", "written_off  alice"}, kinds(),
		"each refund resolved the payment naming it (once, however often retried), then the resolutions given")
}
