package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The check's own tables: the balance snapshots, the adjustments and the
// seen payments, their names and their DDL.

// DDL returns the statements that create the check's own tables: its
// balance snapshots (BooksConfig.BalanceTable), its adjustments (that
// name with "_adjustments" appended: append-only, a trigger refuses an
// UPDATE, DELETE or TRUNCATE) and when it first saw a payment's
// difference that only the provider's clock holds in flight ("_seen").
// Amounts are numeric (exact).
func (b *Books) DDL() string {
	return balanceTableDDL(b.balanceTable()) + ";\n" + adjustmentTableDDL(b.adjustmentIdent()) + ";\n" + seenTableDDL(b.seenIdent())
}

// balanceTable is the snapshot table's quoted name.
func (b *Books) balanceTable() string { return b.balanceIdent().Sanitize() }

// balanceIdent is the snapshot table's name.
func (b *Books) balanceIdent() pgx.Identifier {
	t, _ := parseTable(cmpOr(b.cfg.BalanceTable, DefaultBooksBalanceTable)) // checked by NewBooks
	return t
}

// balanceTableDDL creates the check's snapshot table.
func balanceTableDDL(table string) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
    run_at   timestamptz NOT NULL,
    currency text        NOT NULL,
    network  text        NOT NULL,
    balance  numeric     NOT NULL,
    credited numeric     NOT NULL,
    debited  numeric     NOT NULL,
    opening  text,
    PRIMARY KEY (currency, network, run_at)
);
ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS opening text`, table)
}

// adjustmentTableDDL creates the adjustments table and the trigger that
// makes it append-only (an UPDATE, DELETE or TRUNCATE raises).
func adjustmentTableDDL(table pgx.Identifier) string {
	fn := append(pgx.Identifier{}, table...)
	fn[len(fn)-1] += "_append_only"
	t := table.Sanitize()
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
    id       bigserial   PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    section  text        NOT NULL CHECK (section IN ('payouts', 'payments', 'balances')),
    order_id text        NOT NULL DEFAULT '',
    currency text        NOT NULL DEFAULT '',
    network  text        NOT NULL DEFAULT '',
    amount   numeric     NOT NULL CHECK (amount <> 0),
    actor    text        NOT NULL CHECK (actor <> ''),
    note     text        NOT NULL CHECK (note <> '')
);
CREATE OR REPLACE FUNCTION %[2]s() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    RAISE EXCEPTION 'the books adjustments are append-only: book another adjustment instead' USING ERRCODE = '42501';
END
$f$;
DO $d$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = %[3]s::regclass AND tgname = 'append_only') THEN
        CREATE TRIGGER append_only BEFORE UPDATE OR DELETE ON %[1]s FOR EACH ROW EXECUTE PROCEDURE %[2]s();
        CREATE TRIGGER append_only_truncate BEFORE TRUNCATE ON %[1]s FOR EACH STATEMENT EXECUTE PROCEDURE %[2]s();
    END IF;
END $d$`, t, fn.Sanitize(), sqlLiteral(t))
}

// adjustmentIdent is the adjustments table's name: the balance table's
// with "_adjustments" appended, in its schema.
func (b *Books) adjustmentIdent() pgx.Identifier { return b.ownIdent("_adjustments") }

// seenIdent is the table where the check keeps when it first saw a
// payment's difference that only the provider's clock holds in flight.
func (b *Books) seenIdent() pgx.Identifier { return b.ownIdent("_seen") }

// ownIdent is the name of one of the check's own tables: the balance
// table's with suffix appended, in its schema.
func (b *Books) ownIdent(suffix string) pgx.Identifier {
	t := append(pgx.Identifier{}, b.balanceIdent()...)
	t[len(t)-1] += suffix
	return t
}

// seenTableDDL creates the seen table (booksSeenSQL).
func seenTableDDL(table pgx.Identifier) string {
	return `CREATE TABLE IF NOT EXISTS ` + table.Sanitize() + ` (
    order_id   text        PRIMARY KEY,
    what       text        NOT NULL,
    first_seen timestamptz NOT NULL
)`
}

// createTables creates the check's own tables (DDL), under one lock.
func (b *Books) createTables(ctx context.Context) error {
	if err := createTables(ctx, b.pool(), b.balanceIdent(), b.DDL()); err != nil {
		return fmt.Errorf("creating %s and its companions: %w", b.balanceTable(), err)
	}
	return nil
}

// tableExists reports whether table exists.
func (b *Books) tableExists(ctx context.Context, table pgx.Identifier) (bool, error) {
	var exists bool
	err := b.pool().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table.Sanitize()).Scan(&exists)
	return exists, err
}

// pool is the database of the check's own tables: the queue's, else the
// tracker's.
func (b *Books) pool() *pgxpool.Pool {
	if b.cfg.Queue != nil {
		return b.cfg.Queue.cfg.Pool
	}
	return b.cfg.Tracker.cfg.Pool
}

// booksListed is the temporary table the payout list streams into, one
// row per payout, dropped with the check's transaction.
const booksListed = "cryptopay_books_listed"
