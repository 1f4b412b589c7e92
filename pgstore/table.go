package pgstore

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The tables of the dedupe store, the payout queue and the payment
// tracker: their names, the pieces their DDL is made of, and CreateTable.

var identRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// parseTable checks a "name" or "schema.name" table name.
func parseTable(name string) (pgx.Identifier, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%w: table %q: want name or schema.name", ErrInvalidOption, name)
	}
	for i, p := range parts {
		// An index name adds a suffix to the table name: the dedupe
		// store's "_expires_at_idx" (15) fits PostgreSQL's 63-byte
		// identifiers; PostgreSQL cuts the queue's "_history_order_idx"
		// (18) and the tracker's "_moves_order_idx" (16) after a name of
		// over 45 or 47 bytes, which leaves them distinct and the same on
		// every CreateTable.
		maxLen := 48
		if i == 0 && len(parts) == 2 {
			maxLen = 63
		}
		if !identRe.MatchString(p) || len(p) > maxLen {
			return nil, fmt.Errorf("%w: table %q: each part must match [a-z_][a-z0-9_]* (the name at most 48 bytes)", ErrInvalidOption, name)
		}
	}
	return pgx.Identifier(parts), nil
}

// sibling is the table in table's schema named table's name + suffix (the
// history table, the moves table).
func sibling(table pgx.Identifier, suffix string) pgx.Identifier {
	s := append(pgx.Identifier{}, table...)
	s[len(s)-1] += suffix
	return s
}

// tableDDL creates the table name (quoted) with columns, one indented
// line each, if it does not exist.
func tableDDL(name, columns string) string {
	return "CREATE TABLE IF NOT EXISTS " + name + " (\n" + columns + "\n);\n"
}

// addColumnsDDL adds to the table name (quoted) the columns ("name type
// ...") a table made by an older version lacks.
func addColumnsDDL(name string, columns ...string) string {
	var b strings.Builder
	for _, c := range columns {
		b.WriteString("ALTER TABLE " + name + " ADD COLUMN IF NOT EXISTS " + c + ";\n")
	}
	return b.String()
}

// index is one index of a table: its name is the owning table's name +
// suffix, on is what follows "ON table" (the columns, a WHERE clause).
type index struct{ suffix, on string }

// indexDDL creates the indexes of the table name (quoted), named after
// owner (the queue's or the tracker's table, whose schema they share).
func indexDDL(owner pgx.Identifier, name string, indexes ...index) string {
	var b strings.Builder
	for _, ix := range indexes {
		id := pgx.Identifier{owner[len(owner)-1] + ix.suffix}
		b.WriteString("CREATE INDEX IF NOT EXISTS " + id.Sanitize() + " ON " + name + " " + ix.on + ";\n")
	}
	return b.String()
}

// createTable is the CreateTable method of the dedupe store, the queue
// and the tracker: ddl, run by createTables; an error names the table.
func createTable(ctx context.Context, pool *pgxpool.Pool, table pgx.Identifier, ddl string) error {
	if err := createTables(ctx, pool, table, ddl); err != nil {
		return fmt.Errorf("pgstore: creating %s: %w", table.Sanitize(), err)
	}
	return nil
}

// createTables runs ddl, the statements that create table and the tables
// and indexes that go with it, in one implicit transaction that first
// takes a transaction-level advisory lock keyed on the table's name as it
// resolves (its schema, else the first schema of the search_path). So
// replicas that call CreateTable at once run the DDL one after the other:
// without the lock two could deadlock (a CREATE INDEX's SHARE lock, then
// an ALTER TABLE wanting ACCESS EXCLUSIVE) or, on a fresh table, one could
// fail (both insert the same catalog row: a unique violation).
func createTables(ctx context.Context, pool *pgxpool.Pool, table pgx.Identifier, ddl string) error {
	schema := "current_schema()"
	if len(table) == 2 {
		schema = sqlLiteral(table[0])
	}
	lock := fmt.Sprintf("SELECT pg_advisory_xact_lock(hashtextextended('cryptopay_ddl:' || %s || '.' || %s, 0));\n",
		schema, sqlLiteral(table[len(table)-1]))
	_, err := pool.Exec(ctx, lock+ddl)
	return err
}

// sqlLiteral quotes s as an SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlList is a list of SQL string literals of constant words (never
// data).
func sqlList[S ~string](words ...S) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + string(w) + "'"
	}
	return strings.Join(q, ", ")
}
