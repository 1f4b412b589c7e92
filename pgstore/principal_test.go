package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// rolePool is a pool logged in as a new database role that may read and
// move the rig's intents.
func (r *qrig) rolePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	role := pgtest.Name("approver")
	for _, stmt := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT SELECT, UPDATE ON " + r.table + " TO " + role,
		"GRANT SELECT, INSERT ON " + r.table + "_history TO " + role,
	} {
		_, err := r.pool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable", r.srv.Port, role))
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// Four eyes counts principals: one login on one database role gives one
// approval, whatever actor ids it types; another login, or the same
// login on another database role, is another principal.
func TestApprovePrincipalCountsOnce(t *testing.T) {
	r := newQRig(t)
	ctx := context.Background()
	q := r.heldQueue(t)
	other := r.queue(t, func(c *pgstore.QueueConfig) { c.Pool, c.CreateTable = r.rolePool(t), false })
	ps := []cryptopay.CreatePayoutParams{payoutParams(1), payoutParams(2), payoutParams(3)}
	r.enqueueBy(t, q, "ops", ps...)

	// One OS user, one role, two --actor values: one approval.
	in, err := approveBy(ctx, q, ps[0].OrderID, pgstore.Operator{ID: "alice", Login: "deploy"}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{`deploy as database role "postgres"`}, in.ApprovedPrincipals)
	_, err = approveBy(ctx, q, ps[0].OrderID, pgstore.Operator{ID: "bob", Login: "Deploy"}, "")
	require.ErrorIs(t, err, pgstore.ErrApprovalNotCounted)
	assert.Contains(t, err.Error(), `deploy as database role "postgres"`)
	res, err := approveManyBy(ctx, q, []string{ps[0].OrderID}, pgstore.Operator{ID: "carol", Login: "deploy"}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{ps[0].OrderID}, res.Skipped, "in bulk too")
	in, err = q.Get(ctx, ps[0].OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Equal(t, []string{"alice"}, in.ApprovedBy)

	// The same login on another database role is another principal.
	in, err = approveBy(ctx, other, ps[0].OrderID, pgstore.Operator{ID: "bob", Login: "deploy"}, "")
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State)
	assert.Len(t, in.ApprovedPrincipals, 2)

	// Two logins on one role are two principals.
	_, err = approveBy(ctx, q, ps[1].OrderID, pgstore.Operator{ID: "alice", Login: "alice"}, "")
	require.NoError(t, err)
	in, err = approveBy(ctx, q, ps[1].OrderID, pgstore.Operator{ID: "bob", Login: "bob"}, "")
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State)

	// Approve names no login: the actor stands for it (a Go caller that
	// trusts its actor ids), as before.
	require.NoError(t, q.Approve(ctx, ps[2].OrderID, "alice", ""))
	require.NoError(t, q.Approve(ctx, ps[2].OrderID, "bob", ""))
	in, err = q.Get(ctx, ps[2].OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateQueued, in.State)

	_, err = approveBy(ctx, q, ps[0].OrderID, pgstore.Operator{ID: "dave", Login: "two words"}, "")
	var ve *cryptopay.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "login", ve.Field)
}

// approveBy is the approve move by an operator with a login.
func approveBy(ctx context.Context, q *pgstore.Queue, orderID string, by pgstore.Operator, note string) (*pgstore.Intent, error) {
	m, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "approve")
	got, err := m.Do(ctx, pgstore.Stores{Queue: q}, pgstore.MoveInput{OrderID: orderID, By: by, Values: map[string]string{"note": note}})
	return got.Intent, err
}

// approveManyBy is the approve move in bulk by an operator with a login.
func approveManyBy(ctx context.Context, q *pgstore.Queue, ids []string, by pgstore.Operator, note string) (pgstore.BulkResult, error) {
	m, _ := pgstore.MoveNamed(pgstore.ObjectPayout, "approve")
	return m.DoMany(ctx, pgstore.Stores{Queue: q}, ids, by, map[string]string{"note": note})
}
