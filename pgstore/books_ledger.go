package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
)

// The merchant's ledgers: the payment side (BooksConfig.LedgerSQL or
// LedgerFunc, against the tracker's credits, in checkPayments) and the
// payout side (PayoutLedgerSQL or PayoutLedgerFunc, against the queue's
// paid intents, here), and what both share: the orderIds a ledger holds
// that our records do not know.

// booksLedgerJoin is the join of a ledger query (its rows of one orderId
// summed) to the table aliased "on", and the column it adds ("" ledger:
// none, NULL).
func booksLedgerJoin(ledger, on string) (join, col string) {
	if ledger == "" {
		return "", "NULL::text"
	}
	// Summed per orderId: a query that returns one row per booking (an
	// order booked twice: two rows) is compared whole, and the order is
	// reported once. The line break ends a trailing -- comment.
	return "LEFT JOIN (SELECT l0.order_id, sum(l0.amount::numeric) AS amount FROM (" + ledger +
		"\n) AS l0 (order_id, amount) GROUP BY l0.order_id) AS l ON l.order_id = " + on + ".order_id", "l.amount::text"
}

// booksLedgerOnlySQL sums the ledger's rows per orderId the table does
// not know.
func booksLedgerOnlySQL(table, ledger string) string {
	return `SELECT l0.order_id, sum(l0.amount::numeric)::text FROM (` + ledger + "\n" + `) AS l0 (order_id, amount)
WHERE NOT EXISTS (SELECT 1 FROM ` + table + ` t WHERE t.order_id = l0.order_id) GROUP BY l0.order_id ORDER BY 1`
}

// ledgerOnly emits, with a ledger query (sql), one BooksLedgerOnly item of
// section per orderId the ledger holds and table (whose) does not know (a
// ledger in Go cannot list its orderIds: nothing).
func ledgerOnly(ctx context.Context, pool *pgxpool.Pool, table, sql, section, whose string, out func(BooksItem) error) (string, error) {
	if sql == "" {
		return "", nil
	}
	var emitErr error
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, booksLedgerOnlySQL(table, sql))
		if err != nil {
			return err
		}
		var id string
		var sum *string
		_, err = pgx.ForEachRow(rows, []any{&id, &sum}, func() error {
			v, err := nullDecimal(sum)
			if err != nil || v.Decimal.IsZero() {
				return err
			}
			emitErr = out(BooksItem{Section: section, OrderID: id, Class: BooksLedgerOnly, Theirs: v, Ledger: v, Delta: v.Decimal,
				Detail: "the merchant's ledger books an orderId " + whose + " does not know"})
			return emitErr
		})
		return err
	})
	if emitErr != nil {
		return "", emitErr
	}
	if err != nil {
		return "the merchant's ledger: " + err.Error(), ctx.Err()
	}
	return "", nil
}

// booksPayoutLedgerSQL reads a page of the queue's intents after orderId
// $1, $2 at most: state, amount, whether OnFinal is still due, and with a
// ledger query the merchant's sum for it.
func booksPayoutLedgerSQL(intents, ledger string) string {
	join, col := booksLedgerJoin(ledger, "q")
	return fmt.Sprintf(`SELECT q.order_id, q.state, q.amount::text, q.callback_due, q.currency, q.network, %[3]s
FROM %[1]s q %[2]s WHERE q.order_id > $1 ORDER BY q.order_id LIMIT $2`, intents, join, col)
}

// payoutLedgerRow is an intent as the payout ledger compares it.
type payoutLedgerRow struct {
	orderID, state, amount string
	due                    bool
	currency, network      string
	ledger                 *string
}

// item compares the merchant's payout ledger with the intent: a paid
// intent's amount, 0 for one final and not paid; in flight while OnFinal
// has not run (not final, or its callback due).
func (r *payoutLedgerRow) item() BooksItem {
	it := BooksItem{Section: "payout_ledger", OrderID: r.orderID, OurStatus: r.state, Currency: r.currency, Network: r.network}
	it.Ledger, _ = nullDecimal(r.ledger)
	it.Theirs = decimal.NewNullDecimal(it.Ledger.Decimal)
	ours := decimal.Zero
	if IntentState(r.state) == StatePaid {
		ours, _ = decimal.NewFromString(r.amount)
	}
	it.Ours = decimal.NewNullDecimal(ours)
	it.Delta = it.Theirs.Decimal.Sub(ours)
	switch {
	case !IntentState(r.state).IsFinal() || r.due:
		it.Class, it.Detail = BooksInFlight, "OnFinal has not run for it yet: the ledger books it then"
	case it.Delta.IsZero():
		it.Class = BooksMatched
	default:
		it.Class, it.Detail = BooksLedgerDiffers, "the merchant's payout ledger holds another sum than the queue paid"
	}
	return it
}

// checkPayoutLedger compares the merchant's payout ledger
// (PayoutLedgerSQL or PayoutLedgerFunc) with the queue's intents, a page
// at a time in one read-only snapshot per page, one item per intent, then
// (PayoutLedgerSQL) one per orderId the ledger holds and the queue does
// not know.
func (b *Books) checkPayoutLedger(ctx context.Context, out func(BooksItem) error) (string, error) {
	q := b.cfg.Queue
	if q == nil || (b.cfg.PayoutLedgerSQL == "" && b.cfg.PayoutLedgerFunc == nil) {
		return "", nil
	}
	after := ""
	for {
		var page []payoutLedgerRow
		err := pgx.BeginTxFunc(ctx, q.cfg.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, booksPayoutLedgerSQL(q.Table(), b.cfg.PayoutLedgerSQL), after, booksPageSize)
			if err != nil {
				return err
			}
			page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (payoutLedgerRow, error) {
				var r payoutLedgerRow
				err := row.Scan(&r.orderID, &r.state, &r.amount, &r.due, &r.currency, &r.network, &r.ledger)
				return r, err
			})
			if err != nil || b.cfg.PayoutLedgerFunc == nil {
				return err
			}
			for i := range page {
				sum, ok, err := b.cfg.PayoutLedgerFunc(ctx, tx, page[i].orderID)
				if err != nil {
					return fmt.Errorf("PayoutLedgerFunc for %q: %w", page[i].orderID, err)
				}
				if ok {
					page[i].ledger = nullText(decimal.NewNullDecimal(sum))
				}
			}
			return nil
		})
		if err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
		if len(page) == 0 {
			return ledgerOnly(ctx, q.cfg.Pool, q.Table(), b.cfg.PayoutLedgerSQL, "payout_ledger", "the queue", out)
		}
		for i := range page {
			if err := out(page[i].item()); err != nil {
				return "", err
			}
		}
		after = page[len(page)-1].orderID
	}
}

// booksPageSize is how many tracked payments the check reads from the
// database at once (then from the API, Concurrency at a time).
const booksPageSize = 100
