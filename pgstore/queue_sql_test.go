package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// syncCommit raises synchronous_commit to on for the rest of the
// transaction, whatever the session says, keeps remote_apply (stronger),
// and leaves the session's own setting alone once the transaction ends.
func TestSyncCommitAtLeastOn(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1)
	ctx := context.Background()
	for _, tc := range []struct{ session, inTx string }{
		{"off", "on"},
		{"local", "on"},
		{"remote_write", "on"},
		{"on", "on"},
		{"remote_apply", "remote_apply"},
	} {
		t.Run(tc.session, func(t *testing.T) {
			conn, err := pool.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release()
			_, err = conn.Exec(ctx, "SET synchronous_commit = "+tc.session)
			require.NoError(t, err)
			defer func() { _, _ = conn.Exec(ctx, "RESET synchronous_commit") }()
			var got, after string
			require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT "+syncCommit); err != nil {
					return err
				}
				return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
			}))
			require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after))
			assert.Equal(t, tc.inTx, got, "in the transaction")
			assert.Equal(t, tc.session, after, "after it")
		})
	}
}
