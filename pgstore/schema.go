package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchema: a Queue's or a Tracker's table is missing, or lacks columns
// this version needs. See *SchemaError.
var ErrSchema = errors.New("pgstore: table missing or out of date")

// SchemaError says which table is missing or out of date, in which
// database, and how to fix it. It matches ErrSchema.
type SchemaError struct {
	// Table is the table, quoted for SQL.
	Table string
	// Missing lists the columns the table lacks; empty when the table
	// itself is missing.
	Missing []string
	// Host and Database name the database (never the password).
	Host, Database string
	// Config is the configuration type: "QueueConfig" or "TrackerConfig".
	Config string
}

// Error names the table, the database and both fixes.
func (e *SchemaError) Error() string {
	what := "does not exist"
	if len(e.Missing) > 0 {
		what = "lacks the columns " + strings.Join(e.Missing, ", ") + " (made by an older version)"
	}
	return fmt.Sprintf("pgstore: table %s %s in database %q on %s: create or upgrade it with %s.CreateTable "+
		"(or the CreateTable method), or run the statements of DDL() in a migration", e.Table, what, e.Database, e.Host, e.Config)
}

// Is matches ErrSchema.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// schema checks a Queue's or a Tracker's tables once: the first call that
// finds every table and column of its DDL makes the later ones free.
type schema struct {
	ok     atomic.Bool
	pool   *pgxpool.Pool
	config string
	ddl    func() string
}

// checkSchema finds, in one query, every table and column of the DDL that
// the database lacks (its catalog only: q may be the caller's transaction,
// which a missing table does not abort).
const checkSchema = `SELECT c.rel, c.col, to_regclass(c.rel) IS NULL
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c(rel, col, n)
WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = to_regclass(c.rel) AND a.attname = c.col AND NOT a.attisdropped)
ORDER BY c.n`

// check returns a *SchemaError for the first table that is missing or
// lacks columns, nil if none does, or the query's error.
func (s *schema) check(ctx context.Context, q querier) error {
	if s.ok.Load() {
		return nil
	}
	rels, cols := ddlColumns(s.ddl())
	rows, err := q.Query(ctx, checkSchema, rels, cols)
	if err != nil {
		return fmt.Errorf("pgstore: checking the tables: %w", err)
	}
	var missing *SchemaError
	var rel, col string
	var noTable bool
	_, err = pgx.ForEachRow(rows, []any{&rel, &col, &noTable}, func() error {
		switch {
		case missing == nil:
			cc := s.pool.Config().ConnConfig
			missing = &SchemaError{Table: rel, Host: cc.Host, Database: cc.Database, Config: s.config}
		case missing.Table != rel:
			return nil
		}
		if !noTable {
			missing.Missing = append(missing.Missing, col)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgstore: checking the tables: %w", err)
	}
	if missing != nil {
		return missing
	}
	s.ok.Store(true)
	return nil
}

// ddlColumns lists every column the DDL makes, as (table, column) pairs:
// the columns of its CREATE TABLE statements and of its ADD COLUMN ones.
func ddlColumns(ddl string) (rels, cols []string) {
	var table string
	for line := range strings.Lines(ddl) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && f[0] == "CREATE" && f[1] == "TABLE":
			table = f[5]
		case len(f) >= 9 && f[0] == "ALTER" && f[3] == "ADD":
			rels, cols = append(rels, f[2]), append(cols, f[8])
		case strings.HasPrefix(line, ")"):
			table = ""
		case table != "" && len(f) > 1 && strings.HasPrefix(line, "    ") && strings.ToLower(f[0]) == f[0]:
			rels, cols = append(rels, table), append(cols, f[0])
		}
	}
	return rels, cols
}

// awaitSchema is a worker's schema check at the start of Run: a
// *SchemaError (the tables are missing or out of date) is returned, but a
// database that cannot be asked (down, restarting, unreachable) is a
// database error like any other in the worker loop: logged once per
// window and asked again every poll until it answers, so a worker started
// during an outage starts working once PostgreSQL is back. It returns
// ctx's error if ctx ends first.
func awaitSchema(ctx context.Context, check func(context.Context) error, w *watch, poll time.Duration) error {
	for {
		err := check(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || errors.Is(err, ErrSchema) {
			return err
		}
		w.warn(ctx, "pgstore: checking the tables", slog.String("error", err.Error()))
		timer := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}
