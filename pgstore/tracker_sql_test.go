package pgstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// Every tracker statement is non-empty and parses and plans against the
// tables the tracker creates: PostgreSQL prepares each one, resolving its
// columns and the types of its parameters.
func TestTrackerSQLPrepares(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 1)
	ctx := context.Background()
	tr, err := NewTracker(ctx, TrackerConfig{Pool: pool, Table: "tracker_sql_check", CreateTable: true})
	require.NoError(t, err)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	v := reflect.ValueOf(tr.sql)
	typ := v.Type()
	require.Equal(t, 16, v.NumField(), "a statement added to trackerSQL is checked here too")
	for i := range v.NumField() {
		name, stmt := typ.Field(i).Name, v.Field(i).String()
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, stmt)
			_, err := conn.Conn().Prepare(ctx, "", stmt)
			assert.NoError(t, err, stmt)
		})
	}
}
