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
