package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

func TestCanonicalActor(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"alice@shop.example", "alice@shop.example"},
		{"Alice@Shop.example", "alice@shop.example"},
		{"jos\u00e9", "jos\u00e9"},  // NFC
		{"jose\u0301", "jos\u00e9"}, // NFD
		{"\uff41lice", "alice"},     // fullwidth a
		{"ops-1_x+y.z", "ops-1_x+y.z"},
		{"\u212a", "k"}, // Kelvin sign
	} {
		got, err := pgstore.CanonicalActor(c.in)
		require.NoError(t, err, "%q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
	for _, bad := range []string{"", "alice smith", "a\u202eb", "a\u200db", "a\x00b", strings.Repeat("a", 129)} {
		_, err := pgstore.CanonicalActor(bad)
		var ve *cryptopay.ValidationError
		require.ErrorAs(t, err, &ve, "%q", bad)
		assert.Equal(t, "actor", ve.Field)
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
	}
}

// Four eyes counts people, not spellings: an id that differs from the
// enqueuer's or an earlier approver's only in case, width or Unicode
// normalization is the same person, in Approve, ApproveMany and the
// history; so are ids recorded, as they were spelt, before ids were
// canonical.
func TestApproveActorOnePerson(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	for i, c := range []struct {
		name              string
		enqueuer, first   string // first: an approval before the second ("" none)
		second            string
		recordedRaw       bool // the row and its approvals were written as spelt, before canonical ids
		bulk              bool
		wantEnqueuer      string
		wantApprovedAfter []string
	}{
		{name: "case", enqueuer: "ops", first: "alice@shop.example", second: "Alice@Shop.example",
			wantEnqueuer: "ops", wantApprovedAfter: []string{"alice@shop.example"}},
		{name: "NFC and NFD", enqueuer: "ops", first: "jos\u00e9", second: "jose\u0301",
			wantEnqueuer: "ops", wantApprovedAfter: []string{"jos\u00e9"}},
		{name: "fullwidth", enqueuer: "ops", first: "alice", second: "\uff41lice",
			wantEnqueuer: "ops", wantApprovedAfter: []string{"alice"}},
		{name: "enqueuer", enqueuer: "carol@shop.example", second: "Carol@Shop.example",
			wantEnqueuer: "carol@shop.example"},
		{name: "enqueuer in bulk", enqueuer: "carol@shop.example", second: "CAROL@shop.example", bulk: true,
			wantEnqueuer: "carol@shop.example"},
		{name: "approver in bulk", enqueuer: "ops", first: "alice", second: "\uff21LICE", bulk: true,
			wantEnqueuer: "ops", wantApprovedAfter: []string{"alice"}},
		{name: "rows written before", enqueuer: "Carol@Shop.example", first: "Alice@Shop.example", second: "alice@shop.example",
			recordedRaw: true, wantEnqueuer: "carol@shop.example", wantApprovedAfter: []string{"alice@shop.example"}},
		{name: "enqueuer written before", enqueuer: "Carol@Shop.example", second: "carol@shop.example",
			recordedRaw: true, wantEnqueuer: "carol@shop.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := payoutParams(i)
			r.enqueueBy(t, q, "ops", p)
			if c.recordedRaw { // as an older version wrote it: the id as given
				_, err := r.pool.Exec(ctx, "UPDATE "+q.Table()+" SET enqueued_by = $2, approved_by = $3 WHERE order_id = $1",
					p.OrderID, c.enqueuer, nonNil(c.first))
				require.NoError(t, err)
			} else {
				_, err := r.pool.Exec(ctx, "UPDATE "+q.Table()+" SET enqueued_by = $2 WHERE order_id = $1", p.OrderID, c.enqueuer)
				require.NoError(t, err)
				if c.first != "" {
					require.NoError(t, q.Approve(ctx, p.OrderID, c.first, ""))
				}
			}
			if c.bulk {
				res, err := q.ApproveMany(ctx, []string{p.OrderID}, c.second, "")
				require.NoError(t, err)
				assert.Equal(t, 0, res.Done)
				assert.Equal(t, []string{p.OrderID}, res.Skipped)
			} else {
				require.ErrorIs(t, q.Approve(ctx, p.OrderID, c.second, ""), pgstore.ErrApprovalNotCounted)
			}
			in, err := q.Get(ctx, p.OrderID)
			require.NoError(t, err)
			assert.Equal(t, pgstore.StateNeedsApproval, in.State)
			assert.Equal(t, c.wantApprovedAfter, in.ApprovedBy)
			assert.Equal(t, c.wantEnqueuer, in.EnqueuedBy)
		})
	}
}

func nonNil(s string) []string {
	if s == "" {
		return []string{}
	}
	return []string{s}
}

// Every move records the canonical form, so the history names one person
// once, whatever spelling they typed.
func TestActorHistoryCanonical(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	p := payoutParams(1)
	r.enqueueBy(t, q, "Carol@Shop.example", p)
	require.NoError(t, q.Approve(ctx, p.OrderID, "\uff21lice", ""))
	require.NoError(t, q.Reject(ctx, p.OrderID, "BOB", "no"))
	hist, err := q.History(ctx, p.OrderID)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, []string{"carol@shop.example", "alice", "bob"}, []string{hist[0].ActorID, hist[1].ActorID, hist[2].ActorID})
	err = q.Retry(ctx, p.OrderID, "alice smith", "x")
	require.ErrorIs(t, err, cryptopay.ErrInvalidParams, "an id the profile refuses is refused before anything")
}
