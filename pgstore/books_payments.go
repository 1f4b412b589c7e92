package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

// booksWindow selects the tracked payments in the window: $1 the Since
// time (NULL: all); with open, every payment the tracker has not closed
// too (it may still bring money in: the balance section needs it read).
func booksWindow(open bool) string {
	if open {
		return `($1::timestamptz IS NULL OR t.tracked_at >= $1 OR t.updated_at >= $1 OR t.` + trackOpenSQL + `)`
	}
	return `($1::timestamptz IS NULL OR t.tracked_at >= $1 OR t.updated_at >= $1)`
}

// booksPaymentsSQL reads a page of tracked payments in the window after
// orderId $2, $3 at most, each with the sum its history credited and, with
// a ledger query, the merchant's sum for it.
// Then the merchantAmount recorded as of $4 (the balance section's start
// less booksClockMargin; NULL: none), the tracker's next read, and whether
// the payment is flagged or its reads fail.
func booksPaymentsSQL(tracked, history, ledger string, open bool) string {
	join, col := booksLedgerJoin(ledger, "t")
	return fmt.Sprintf(`SELECT t.order_id, t.payment_id, t.status, t.paid_amount::text, t.currency, t.network, t.tracked_at,
    (SELECT sum(COALESCE(h.to_paid, 0) - COALESCE(h.from_paid, 0))::text FROM %[2]s h WHERE h.order_id = t.order_id),
    %[4]s,
    (SELECT h.merchant_amount::text FROM %[2]s h WHERE h.order_id = t.order_id AND h.at <= $4 ORDER BY h.seq DESC LIMIT 1),
    t.next_at, t.anomaly <> '' OR t.fail_count > 0
FROM %[1]s t %[3]s
WHERE t.order_id > $2 AND %[5]s
ORDER BY t.order_id LIMIT $3`, tracked, history, join, col, booksWindow(open))
}

// paymentRow is a tracked payment as the check compares it: the
// tracker's record, what its history credited, the merchant's ledger, and
// the provider's answer (p, or err).
type paymentRow struct {
	orderID, paymentID, status string
	paid                       *string
	currency, network          string
	trackedAt                  time.Time
	credited, ledger           *string
	merchantAtStart            *string
	nextAt                     *time.Time // the tracker's next read (nil: not polled)
	troubled                   bool       // an anomaly, or failing reads: a read will not settle it
	p                          *cryptopay.Payment
	err                        error
	readAt                     time.Time
	// seenSince is when the check first saw the difference the provider's
	// updatedAt alone holds in flight (nil: not such a difference, or not
	// known); clockStale: that is longer ago than the settle time.
	seenSince  *time.Time
	clockStale bool
}

// checkPayments reads the tracked payments of the window a page at a
// time, in one read-only snapshot per page, reads each again at the API
// and emits one item per payment, and with a ledger one more per payment
// (section "ledger"), then, with LedgerSQL, one per orderId the ledger
// holds and the tracker does not know. What the window left out is named
// in sum.NotRead.
func (b *Books) checkPayments(ctx context.Context, out func(BooksItem) error, bal *balanceRun, sum *BooksSummary) (why string, err error) {
	t := b.cfg.Tracker
	if t == nil {
		return "", nil
	}
	if err := t.CheckSchema(ctx); err != nil {
		return err.Error(), ctx.Err()
	}
	seen, err := b.tableExists(ctx, b.seenIdent())
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	since := b.since()
	var total, all int
	if err := t.cfg.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE `+booksWindow(b.cfg.Balances)+`), count(*) FROM `+t.Table()+` t`,
		since).Scan(&total, &all); err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	if all > total {
		sum.NotRead["payments"] = fmt.Sprintf("%d tracked payments outside the window (tracked and last changed before %s%s) were not read",
			all-total, b.cfg.Since.UTC().Format(time.RFC3339), map[bool]string{true: ", and closed", false: ""}[b.cfg.Balances])
	}
	after, done := "", 0
	for {
		page, err := b.paymentPage(ctx, since, after, bal)
		if err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
		if len(page) == 0 {
			return ledgerOnly(ctx, t.cfg.Pool, t.Table(), b.cfg.LedgerSQL, "ledger", "the tracker", out)
		}
		b.readPayments(ctx, page)
		stopped := ctx.Err()
		if stopped == nil {
			if err := b.markSeen(ctx, page, seen); err != nil {
				return "the database: " + err.Error(), ctx.Err()
			}
		}
		for i := range page {
			if stopped != nil && page[i].err != nil {
				continue // not decided: its read was stopped, not answered
			}
			bal.paymentMoved(&page[i])
			if err := out(page[i].item(b.cfg.SettleTime)); err != nil {
				return "", err
			}
			if b.hasLedger() {
				if err := out(page[i].ledgerItem()); err != nil {
					return "", err
				}
			}
		}
		if stopped != nil {
			return "", stopped
		}
		done += len(page)
		b.progress("payments", done, total)
		after = page[len(page)-1].orderID
	}
}

func (b *Books) since() *time.Time {
	if b.cfg.Since.IsZero() {
		return nil
	}
	return &b.cfg.Since
}

func (b *Books) hasLedger() bool { return b.cfg.LedgerSQL != "" || b.cfg.LedgerFunc != nil }

// paymentPage reads the next page in a read-only snapshot: the tracker's
// rows, their history's credits and the merchant's ledger agree with one
// another as of one moment.
func (b *Books) paymentPage(ctx context.Context, since *time.Time, after string, bal *balanceRun) ([]paymentRow, error) {
	t := b.cfg.Tracker
	var start *time.Time
	if bal != nil {
		s := bal.start.Add(-booksClockMargin)
		start = &s
	}
	var page []paymentRow
	err := pgx.BeginTxFunc(ctx, t.cfg.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, booksPaymentsSQL(t.Table(), t.history.Sanitize(), b.cfg.LedgerSQL, b.cfg.Balances), since, after, booksPageSize, start)
		if err != nil {
			return err
		}
		page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (paymentRow, error) { return scanPaymentRow(row) })
		if err != nil || b.cfg.LedgerFunc == nil {
			return err
		}
		for i := range page {
			sum, ok, err := b.cfg.LedgerFunc(ctx, tx, page[i].orderID)
			if err != nil {
				return fmt.Errorf("LedgerFunc for %q: %w", page[i].orderID, err)
			}
			if ok {
				page[i].ledger = nullText(decimal.NewNullDecimal(sum))
			}
		}
		return nil
	})
	return page, err
}

// readPayments reads each payment of the page with a known id at the
// API, Concurrency at a time.
func (b *Books) readPayments(ctx context.Context, page []paymentRow) {
	sem := make(chan struct{}, b.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range page {
		r := &page[i]
		if r.paymentID == "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.p, r.err = b.cfg.Client.GetPayment(ctx, r.paymentID)
			r.readAt = time.Now()
		})
	}
	wg.Wait()
}

// item classifies the payment (see the BooksClass constants): the
// provider against the credits, then against the tracker's record. The
// ledger is an item of its own (ledgerItem).
func (r *paymentRow) item(settle time.Duration) BooksItem {
	it := BooksItem{Section: "payments", OrderID: r.orderID, OurStatus: r.status, Currency: r.currency, Network: r.network}
	credited, _ := nullDecimal(r.credited)
	it.Ours = decimal.NewNullDecimal(credited.Decimal)
	it.Ledger, _ = nullDecimal(r.ledger)
	if r.p != nil {
		it.TheirStatus = string(r.p.Status)
		it.Theirs = decimal.NewNullDecimal(r.p.PaidAmount.Decimal)
		it.Currency, it.Network = cmpOr(r.p.Currency, it.Currency), cmpOr(r.p.Network, it.Network)
	}
	it.Delta = it.Theirs.Decimal.Sub(it.Ours.Decimal)
	it.Class, it.Detail = r.classify(&it, settle)
	return it
}

// ledgerItem compares the merchant's ledger with what the tracker's
// history credited (both the merchant's, read in one snapshot: no settle
// time): Ours is the credited sum, Theirs and Ledger the ledger's (no
// entry: 0).
func (r *paymentRow) ledgerItem() BooksItem {
	it := BooksItem{Section: "ledger", OrderID: r.orderID, OurStatus: r.status, Currency: r.currency, Network: r.network}
	credited, _ := nullDecimal(r.credited)
	it.Ours = decimal.NewNullDecimal(credited.Decimal)
	it.Ledger, _ = nullDecimal(r.ledger)
	it.Theirs = decimal.NewNullDecimal(it.Ledger.Decimal)
	it.Delta = it.Theirs.Decimal.Sub(it.Ours.Decimal)
	it.Class = BooksMatched
	if !it.Delta.IsZero() {
		it.Class, it.Detail = BooksLedgerDiffers, "the merchant's ledger holds another sum than the tracker credited"
	}
	return it
}

func (r *paymentRow) classify(it *BooksItem, settle time.Duration) (BooksClass, string) {
	switch {
	case r.paymentID == "" && time.Since(r.trackedAt) < settle:
		return BooksInFlight, "tracked by orderId alone: its payment id is not known yet"
	case r.paymentID == "":
		return BooksUndecided, "tracked by orderId alone past the settle time: its payment cannot be read"
	case r.err != nil:
		return BooksUndecided, scrubText("the payment could not be read: " + r.err.Error())
	}
	recent, awaited := r.timing(settle)
	recent = recent && !r.clockStale
	// The tracker would read it, but its read is overdue past the settle
	// time: no worker has read it. That read records the difference.
	overdue := r.nextAt != nil && !awaited && !r.troubled
	behind := ""
	if overdue {
		behind = "the tracker's read of it is overdue since " + r.nextAt.UTC().Format(time.RFC3339) +
			": no worker has read it; start the tracker's workers, and do not book it by hand: their read books it"
	}
	paid, _ := nullDecimal(r.paid)
	stale := ""
	if r.clockStale {
		stale = "; the provider's updatedAt says it changed within the settle time, but the check has seen this difference since " +
			r.seenSince.UTC().Format(time.RFC3339)
	}
	switch {
	case !it.Theirs.Decimal.Equal(it.Ours.Decimal) && recent:
		return BooksInFlight, "the provider's paid amount changed within the settle time"
	case !it.Theirs.Decimal.Equal(it.Ours.Decimal) && awaited:
		return BooksInFlight, "the tracker's next read of it is still due: " + r.nextAt.UTC().Format(time.RFC3339)
	case !it.Theirs.Decimal.Equal(it.Ours.Decimal) && overdue:
		return BooksTrackerBehind, behind
	case !it.Theirs.Decimal.Equal(it.Ours.Decimal):
		return BooksCreditDiffers, "the tracker credited another amount than the provider says was paid" + stale
	case string(r.p.Status) == r.status && sameAmount(r.p.PaidAmount, paid):
		return BooksMatched, ""
	case recent:
		return BooksInFlight, "the provider's payment changed within the settle time"
	case awaited:
		return BooksInFlight, "the tracker's next read of it is still due: " + r.nextAt.UTC().Format(time.RFC3339)
	case overdue:
		return BooksTrackerBehind, behind
	}
	return BooksTrackerDiffers, "the tracker's record is not what the provider says, past the settle time" + stale
}

// timing says whether the payment changed within the settle time by the
// provider's clock (recent; an updatedAt ahead of ours by more than
// booksClockMargin proves nothing, or one such answer would hold a
// difference in flight forever), and whether the tracker reads it again,
// not overdue past the settle time, with nothing it read so far refused
// or failed (awaited: that read records the difference; a late payment's
// reads space out to LateMax).
func (r *paymentRow) timing(settle time.Duration) (recent, awaited bool) {
	recent = r.p.UpdatedAt.After(r.readAt.Add(-settle)) && !r.p.UpdatedAt.After(r.readAt.Add(booksClockMargin))
	awaited = r.nextAt != nil && r.nextAt.After(r.readAt.Add(-settle)) && !r.troubled
	return recent, awaited
}

// heldByClock reports whether only the provider's updatedAt holds the
// payment's difference in flight, and the difference in words (both
// sides' amounts and statuses): the check measures how long it has seen
// it (markSeen).
func (r *paymentRow) heldByClock(settle time.Duration) (bool, string) {
	if r.p == nil || r.paymentID == "" {
		return false, ""
	}
	recent, awaited := r.timing(settle)
	credited, _ := nullDecimal(r.credited)
	paid, _ := nullDecimal(r.paid)
	differs := !r.p.PaidAmount.Decimal.Equal(credited.Decimal) || string(r.p.Status) != r.status || !sameAmount(r.p.PaidAmount, paid)
	if !differs || !recent || awaited {
		return false, ""
	}
	return true, fmt.Sprintf("%s %s / %s %s %s", r.p.PaidAmount.Decimal, r.p.Status, credited.Decimal, r.status, paid.Decimal)
}

// booksSeenSQL records, for each payment whose difference only the
// provider's clock holds in flight ($1 orderIds, $2 the differences in
// words), when the check first saw that difference (kept while it stays
// the same), and forgets the page's other payments ($3); it returns
// whether each was first seen longer ago than the settle time ($4, in
// microseconds).
func booksSeenSQL(table string) string {
	return fmt.Sprintf(`WITH gone AS (DELETE FROM %[1]s WHERE order_id = ANY($3)),
up AS (INSERT INTO %[1]s AS s (order_id, what, first_seen) SELECT * , now() FROM unnest($1::text[], $2::text[])
    ON CONFLICT (order_id) DO UPDATE SET what = EXCLUDED.what,
        first_seen = CASE WHEN s.what = EXCLUDED.what THEN s.first_seen ELSE EXCLUDED.first_seen END
    RETURNING order_id, first_seen)
SELECT order_id, first_seen, first_seen < now() - $4 * interval '1 microsecond' FROM up`, table)
}

// markSeen measures, for each payment of the page whose difference only
// the provider's updatedAt holds in flight, how long the check has seen
// it (its own table: BalanceTable with "_seen" appended; without it, the
// provider's clock is trusted as it was).
func (b *Books) markSeen(ctx context.Context, page []paymentRow, exists bool) error {
	if !exists {
		return nil
	}
	idx := make(map[string]*paymentRow)
	var held, what, others []string
	for i := range page {
		r := &page[i]
		if ok, w := r.heldByClock(b.cfg.SettleTime); ok {
			held, what, idx[r.orderID] = append(held, r.orderID), append(what, w), r
		} else {
			others = append(others, r.orderID)
		}
	}
	rows, err := b.pool().Query(ctx, booksSeenSQL(b.seenIdent().Sanitize()), held, what, others, b.cfg.SettleTime.Microseconds())
	if err != nil {
		return err
	}
	var id string
	var at time.Time
	var stale bool
	_, err = pgx.ForEachRow(rows, []any{&id, &at, &stale}, func() error {
		if r := idx[id]; r != nil {
			r.seenSince, r.clockStale = &at, stale
		}
		return nil
	})
	return err
}

// scanPaymentRow reads one row of booksPaymentsSQL.
func scanPaymentRow(row pgx.Row) (paymentRow, error) {
	var r paymentRow
	err := row.Scan(&r.orderID, &r.paymentID, &r.status, &r.paid, &r.currency, &r.network, &r.trackedAt, &r.credited, &r.ledger, &r.merchantAtStart,
		&r.nextAt, &r.troubled)
	return r, err
}

// paymentMoved adds what a payment read in the payments section shows of
// money in flight: merchantAmount the provider has and the tracker had not
// recorded by the start (recorded since, or not yet).
//
// It also adds what the provider has beyond what our credits counted at
// the start (the payment's merchantAmount then, or, changed within
// booksClockMargin before it, as the start read it): an opening rolls it
// back. A payment that was not read adds to what cannot be rolled back.
func (r *balanceRun) paymentMoved(row *paymentRow) {
	if r == nil {
		return
	}
	a := r.acc(pairOf(row.currency, row.network))
	if row.p == nil {
		a.rollUnknown++
		return
	}
	start, _ := nullDecimal(row.merchantAtStart) // as of the start, less booksClockMargin
	now := row.p.MerchantAmount.Decimal
	if d := now.Sub(start.Decimal); d.IsPositive() {
		a.inFlight = a.inFlight.Add(d)
	}
	counted := start
	if m, ok := r.recentPay[row.orderID]; ok {
		counted, _ = nullDecimal(m)
	}
	a.rollPayments = a.rollPayments.Add(now.Sub(counted.Decimal))
}
