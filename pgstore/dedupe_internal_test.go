package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

func TestTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"serialization", fmt.Errorf("x: %w", &pgconn.PgError{Code: "40001"}), true},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"permission", &pgconn.PgError{Code: "42501"}, false},
		{"EOF", io.ErrUnexpectedEOF, true},
		{"dial", &net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{"cancelled", fmt.Errorf("q: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, transient(tc.err)) })
	}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := retry(ctx, 3, func() error { calls++; return io.EOF })
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 3, calls, "a transient error is retried up to the budget")

	calls = 0
	err = retry(ctx, 3, func() error { calls++; return &pgconn.PgError{Code: "42P01"} })
	assert.Error(t, err)
	assert.Equal(t, 1, calls, "an SQL error is final")

	calls = 0
	err = retry(ctx, 5, func() error {
		if calls++; calls < 3 {
			return io.EOF
		}
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 3, calls)

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = retry(cctx, 100, func() error { calls++; cancel(); return io.EOF })
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 1, calls, "a cancelled context stops the retries")
}

// The map of open claims forgets claims too old for any Complete to come,
// so a callback that never returns does not grow it for ever.
func TestHeldSweep(t *testing.T) {
	s := &DedupeStore{lease: time.Second, held: map[string]*lease{}, sweepAt: 1024}
	for i := range 1023 {
		s.hold(fmt.Sprint("old-", i), []byte{1})
	}
	for _, l := range s.held {
		l.at = l.at.Add(-time.Hour)
	}
	s.hold("young-0", []byte{2})
	assert.Len(t, s.held, 1, "the stale claims were swept when the map reached its mark")
	assert.Equal(t, 1024, s.sweepAt)
	for i := range 2000 {
		s.hold(fmt.Sprint("young-", i), []byte{2})
	}
	assert.Len(t, s.held, 2000, "young claims are kept")
	assert.Equal(t, []byte{2}, s.take("young-5").token)
	assert.Nil(t, s.take("young-5"))
}

// Each statement is safe to repeat with the same token, as a retry after a
// lost answer does: the repeat finds its own first attempt.
func TestStatementsRepeat(t *testing.T) {
	srv := pgtest.Need(t)
	s, err := NewDedupeStore(srv.Pool(t, 2), WithTable(pgtest.Name("repeat")), WithCreateTable())
	require.NoError(t, err)
	ctx := context.Background()
	lease := s.lease.Microseconds()
	tok := newToken()
	claim := func(key string) (inserted, ours bool) {
		var done, expired, o *bool
		require.NoError(t, s.pool.QueryRow(ctx, s.sqlClaim, []byte(key), tok, lease).Scan(&inserted, &done, &expired, &o))
		return inserted, isTrue(o)
	}
	ins, ours := claim("k1")
	assert.True(t, ins)
	assert.False(t, ours)
	ins, ours = claim("k1")
	assert.False(t, ins)
	assert.True(t, ours, "the repeat sees its own claim")

	// An expired row held by someone else: taken over, and the repeat of
	// the take-over finds it.
	_, err = s.pool.Exec(ctx, "INSERT INTO "+s.Table()+" VALUES ($1, $2, false, clock_timestamp() - interval '1 second')", []byte("k2"), newToken())
	require.NoError(t, err)
	for i := range 2 {
		var taken bool
		var done *bool
		require.NoError(t, s.pool.QueryRow(ctx, s.sqlTakeOver, []byte("k2"), tok, lease).Scan(&taken, &done))
		assert.True(t, taken, "take-over attempt %d", i+1)
	}
	for i := range 2 {
		tag, err := s.pool.Exec(ctx, s.sqlComplete, []byte("k1"), tok, s.doneTTL.Microseconds())
		require.NoError(t, err)
		assert.Equal(t, int64(1), tag.RowsAffected(), "complete attempt %d", i+1)
	}
	tag, err := s.pool.Exec(ctx, s.sqlComplete, []byte("k1"), newToken(), s.doneTTL.Microseconds())
	require.NoError(t, err)
	assert.Zero(t, tag.RowsAffected(), "another token cannot complete it")
}
