package pgstore

import (
	"context"
	"iter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// SetQueueHook makes q call fn at its named points ("attempt-committed",
// "answer-read", "follow-read"): the crash tests kill the worker there,
// and the wake-up test wakes the intent there.
func SetQueueHook(q *Queue, fn func(point string)) { q.hook = fn }

// Claim claims up to n due intents for q and reports how many it got (the
// leases are then left to expire).
func Claim(ctx context.Context, q *Queue, n int) (int, error) {
	b, err := q.claim(ctx, n)
	return len(b), err
}

// ClaimSQL returns q's claim statement (for EXPLAIN).
func ClaimSQL(q *Queue) string { return q.sql.claim }

// VelocityCheck runs q's velocity check for p in tx (taking the
// currency's advisory lock until tx ends) under a cap of limit.
func VelocityCheck(ctx context.Context, q *Queue, tx pgx.Tx, p cryptopay.CreatePayoutParams, limit decimal.Decimal) error {
	_, err := q.velocityCheck(ctx, tx, p, limit)
	return err
}

// CreateBooksTable creates the books check's snapshot table as a Run with
// BooksConfig.CreateTable does.
func CreateBooksTable(ctx context.Context, pool *pgxpool.Pool, table string) error {
	t, err := parseTable(table)
	if err != nil {
		return err
	}
	return createTables(ctx, pool, t, (&Books{cfg: BooksConfig{BalanceTable: table}}).DDL())
}

// FailureOf sorts err as a worker does.
func FailureOf(err error) Failure { return failureOf(err) }

// FlushWebhookRefusals writes the refusals WebhookRefused counted since
// the last write, now (the tests need not wait for the timer).
func FlushWebhookRefusals(ctx context.Context, tr *Tracker, q *Queue) error {
	if tr != nil {
		return tr.refusals.flush(ctx)
	}
	return q.refusals.flush(ctx)
}

// SetBooksScan makes b read the payout list from scan instead of its
// client's ScanPayouts.
func SetBooksScan(b *Books, scan func(context.Context, cryptopay.ScanPayoutsParams) iter.Seq2[cryptopay.PayoutListItem, error]) {
	b.scan = scan
}
