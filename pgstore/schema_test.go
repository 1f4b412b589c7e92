package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// engine is what the schema test needs of a Queue or a Tracker.
type engine interface {
	CheckSchema(ctx context.Context) error
	CreateTable(ctx context.Context) error
	Table() string
}

// A Queue or Tracker built without CreateTable on a database that lacks
// its tables, or has them from an older version without its columns, says
// so at its first use with a *SchemaError naming the table, the database
// and both fixes; the caller's transaction is not aborted by the check;
// calling CreateTable after the constructor (as the guides did) still
// works, and upgrades an old table. Before, the constructor returned nil
// and the first statement failed with `relation "..." does not exist`.
func TestSchemaChecked(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 4)
	ctx := context.Background()
	builders := map[string]func(table string) (engine, func() error){
		"queue": func(table string) (engine, func() error) {
			q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return q, func() error {
				_, err := q.List(ctx, pgstore.ListFilter{})
				return err
			}
		},
		"tracker": func(table string) (engine, func() error) {
			tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: table})
			require.NoError(t, err)
			return tr, func() error {
				_, err := tr.List(ctx, pgstore.TrackFilter{})
				return err
			}
		},
	}
	for name, build := range builders {
		t.Run(name+" missing", func(t *testing.T) {
			e, use := build(pgtest.Name(name))
			err := use()
			var se *pgstore.SchemaError
			require.ErrorAs(t, err, &se)
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			assert.Equal(t, e.Table(), se.Table)
			assert.Empty(t, se.Missing, "the table itself is missing")
			assert.Equal(t, "postgres", se.Database)
			assert.Equal(t, "127.0.0.1", se.Host)
			for _, want := range []string{e.Table(), "does not exist", `database "postgres"`, "CreateTable", "DDL()"} {
				assert.Contains(t, err.Error(), want)
			}
			require.NoError(t, e.CreateTable(ctx), "New, then CreateTable")
			assert.NoError(t, use())
		})
		t.Run(name+" from an older version", func(t *testing.T) {
			table := pgtest.Name(name)
			e, _ := build(table)
			require.NoError(t, e.CreateTable(ctx))
			_, err := pool.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN fail_count, DROP COLUMN fail_text")
			require.NoError(t, err)
			e, use := build(table)
			var se *pgstore.SchemaError
			require.ErrorAs(t, use(), &se)
			assert.Equal(t, []string{"fail_text", "fail_count"}, se.Missing)
			assert.Contains(t, se.Error(), "lacks the columns fail_text, fail_count")
			require.NoError(t, e.CreateTable(ctx), "CreateTable upgrades it")
			assert.NoError(t, e.CheckSchema(ctx))
			assert.NoError(t, use())

			// A column of the CREATE TABLE is checked too.
			_, err = pool.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN note")
			require.NoError(t, err)
			_, use = build(table)
			require.ErrorAs(t, use(), &se)
			assert.Equal(t, []string{"note"}, se.Missing)
		})
	}
	t.Run("in the caller's transaction", func(t *testing.T) {
		q, err := pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Table: pgtest.Name("queue")})
		require.NoError(t, err)
		tr, err := pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Table: pgtest.Name("tracker")})
		require.NoError(t, err)
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := q.Enqueue(ctx, tx, payoutParams(1))
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			_, err = tr.TrackOrder(ctx, tx, "ord-1")
			assert.ErrorIs(t, err, pgstore.ErrSchema)
			var one int
			return tx.QueryRow(ctx, "SELECT 1").Scan(&one) // the transaction still works
		})
		assert.NoError(t, err)
		assert.False(t, errors.Is(err, pgstore.ErrSchema))
	})
}
