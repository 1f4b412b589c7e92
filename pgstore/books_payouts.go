package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
)

// booksListed is the temporary table the payout list streams into, one
// row per payout, dropped with the check's transaction.
const booksListed = "cryptopay_books_listed"

// booksPayoutsSQL matches the listed payouts to the queue's intents by
// orderId, one row per orderId (payouts without an orderId each on their
// own), double payments first. now() is the transaction's start, before
// the list was read; the intents are read after it. $1 is the settle time
// in microseconds.
func booksPayoutsSQL(intents string) string {
	const before = `now() - $1 * interval '1 microsecond'`
	return fmt.Sprintf(`WITH p AS (
    SELECT order_id, count(*)::int AS n, sum(amount::numeric)::text AS total,
        (array_agg(amount ORDER BY pos))[1] AS amount, (array_agg(currency ORDER BY pos))[1] AS currency,
        (array_agg(network ORDER BY pos))[1] AS network, (array_agg(wallet ORDER BY pos))[1] AS wallet,
        string_agg(status, ',' ORDER BY pos) AS status
    FROM %[2]s GROUP BY order_id, CASE WHEN order_id = '' THEN pos END)
SELECT COALESCE(p.order_id, q.order_id), COALESCE(p.n, 0), p.total, p.amount, COALESCE(p.currency, ''),
    COALESCE(p.network, ''), COALESCE(p.wallet, ''), COALESCE(p.status, ''),
    q.order_id IS NOT NULL, q.amount::text, COALESCE(q.currency, ''), COALESCE(q.network, ''),
    COALESCE(q.wallet_address, ''), COALESCE(q.state, ''),
    COALESCE(q.updated_at < %[3]s AND q.next_at < %[3]s, false),
    COALESCE(q.updated_at < %[3]s, false),
    COALESCE(COALESCE(q.attempted_at, q.created_at) < %[3]s, false)
FROM p FULL JOIN %[1]s q ON q.order_id = p.order_id
ORDER BY COALESCE(p.n, 0) > 1 DESC, 1`, intents, booksListed, before)
}

// checkPayouts streams the payout list into a temporary table, matches
// it to the queue's intents and emits one item per orderId. A list that
// cannot be read to its end, or a database error, leaves the section
// unfinished (why), with nothing emitted: a part of the list proves
// nothing about the rest. With the balance section (bal), the payouts'
// debits are read with the list (balancePayouts).
func (b *Books) checkPayouts(ctx context.Context, out func(BooksItem) error, bal *balanceRun) (why string, err error) {
	q := b.cfg.Queue
	if q == nil {
		return "", nil
	}
	if err := q.CheckSchema(ctx); err != nil {
		return err.Error(), ctx.Err()
	}
	tx, err := q.cfg.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	listErr, err := b.copyList(ctx, tx)
	switch {
	case listErr != nil:
		return "the payout list: " + listErr.Error(), ctx.Err()
	case err != nil:
		return "the database: " + err.Error(), ctx.Err()
	}
	if bal != nil {
		if err := b.balancePayouts(ctx, tx, bal); err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
	}
	rows, err := tx.Query(ctx, booksPayoutsSQL(q.Table()), b.cfg.SettleTime.Microseconds())
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	defer rows.Close()
	for rows.Next() {
		var r payoutRow
		if err := rows.Scan(&r.orderID, &r.n, &r.total, &r.amount, &r.currency, &r.network, &r.wallet, &r.status,
			&r.queued, &r.ours, &r.qCurrency, &r.qNetwork, &r.qWallet, &r.state, &r.idle, &r.settled, &r.attemptedLongAgo); err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
		if err := out(r.item()); err != nil {
			return "", err
		}
	}
	if err := rows.Err(); err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	return "", nil
}

// copyList streams the whole payout list (cryptopay.Client.ScanPayouts)
// into the temporary table. listErr is the list's failure, err the
// database's.
func (b *Books) copyList(ctx context.Context, tx pgx.Tx) (listErr, err error) {
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE `+booksListed+` (pos bigint NOT NULL, order_id text NOT NULL,
    amount text NOT NULL, currency text NOT NULL, network text NOT NULL, wallet text NOT NULL, status text NOT NULL,
    merchant_amount text) ON COMMIT DROP`); err != nil {
		return nil, err
	}
	next, stop := iter.Pull2(b.cfg.Client.ScanPayouts(ctx, cryptopay.ScanPayoutsParams{PageSize: b.cfg.PageSize,
		Progress: func(n, count int) { b.progress("payouts", n, count) }}))
	defer stop()
	src := &listSource{next: next}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{booksListed},
		[]string{"pos", "order_id", "amount", "currency", "network", "wallet", "status", "merchant_amount"}, src)
	if src.err != nil {
		return src.err, nil
	}
	return nil, err
}

// listSource feeds the payout list to COPY one payout at a time.
type listSource struct {
	next func() (cryptopay.PayoutListItem, error, bool)
	row  []any
	pos  int64
	err  error
}

func (s *listSource) Next() bool {
	it, err, ok := s.next()
	if !ok {
		return false
	}
	if err != nil {
		s.err = err
		return false
	}
	s.pos++
	// A NUL (which a PostgreSQL text cannot hold) in one payout's text
	// would fail the COPY, and with it the whole section: shown as U+FFFD.
	wallet := cmpOr(it.WalletAddress, it.PaidAddress)
	s.row = []any{s.pos, noNUL(it.OrderID), it.Amount.String(), noNUL(it.Currency), noNUL(it.Network), noNUL(wallet),
		noNUL(string(it.Status)), nullText(it.MerchantAmount)}
	return true
}

func (s *listSource) Values() ([]any, error) { return s.row, nil }

func (s *listSource) Err() error {
	if s.err != nil {
		return errListFailed
	}
	return nil
}

// errListFailed ends a COPY whose payout list failed (listSource.err
// says how).
var errListFailed = errors.New("pgstore: the payout list could not be read")

// payoutRow is one orderId as matched: the provider's side (n payouts),
// the queue's intent (queued) and how long the intent has been as it is.
type payoutRow struct {
	orderID                             string
	n                                   int
	total, amount                       *string
	currency, network, wallet, status   string
	queued                              bool
	ours                                *string
	qCurrency, qNetwork, qWallet, state string
	idle, settled, attemptedLongAgo     bool
}

// item classifies the row (see the BooksClass constants).
func (r *payoutRow) item() BooksItem {
	it := BooksItem{Section: "payouts", OrderID: r.orderID, Payouts: r.n, OurStatus: r.state, TheirStatus: r.status,
		Currency: cmpOr(r.currency, r.qCurrency), Network: cmpOr(r.network, r.qNetwork), OurWallet: r.qWallet, TheirWallet: r.wallet}
	it.Ours, _ = nullDecimal(r.ours)
	it.Theirs, _ = nullDecimal(r.total)
	it.Delta = it.Theirs.Decimal.Sub(it.Ours.Decimal)
	it.Class, it.Detail = r.classify(&it)
	return it
}

// classify decides the class of the row, in the order of the report.
func (r *payoutRow) classify(it *BooksItem) (BooksClass, string) {
	switch {
	case r.n > 1:
		return BooksDoublePayment, fmt.Sprintf("the provider lists %d payouts for this orderId", r.n)
	case r.n == 1 && !r.queued:
		return BooksProviderOnly, "no intent in the queue has this orderId: created outside the queue"
	case r.n == 0:
		return r.absent()
	}
	if d := r.differs(it); d != "" {
		return BooksPayoutDiffers, d
	}
	return r.statuses()
}

// absent classifies an intent the provider does not list.
func (r *payoutRow) absent() (BooksClass, string) {
	switch IntentState(r.state) {
	case StateCreated, StatePaid:
		if r.attemptedLongAgo {
			return BooksMissing, "the queue holds it as " + r.state + " but the provider does not list it, past the settle time"
		}
		return BooksInFlight, "sent within the settle time: the list may not show it yet"
	case StateQueued, StateNeedsApproval, StateSending, StateReconciling, StateParked:
		return BooksInFlight, "not sent yet, or the queue is still deciding whether it was"
	}
	return BooksMatched, "nothing paid on either side"
}

// differs names the fields of the payout that differ from the intent's.
func (r *payoutRow) differs(it *BooksItem) string {
	var d []string
	if !it.Ours.Decimal.Equal(it.Theirs.Decimal) {
		d = append(d, "amount")
	}
	if !strings.EqualFold(r.currency, r.qCurrency) {
		d = append(d, "currency")
	}
	if !strings.EqualFold(r.network, r.qNetwork) {
		d = append(d, "network")
	}
	if r.wallet != "" && !address.Same(cmpOr(r.qNetwork, r.network), r.wallet, r.qWallet) {
		d = append(d, "wallet")
	}
	if len(d) == 0 {
		return ""
	}
	return strings.Join(d, ", ") + " differ from the queue's intent"
}

// statuses compares the provider's status with the queue's state.
func (r *payoutRow) statuses() (BooksClass, string) {
	st := cryptopay.PayoutStatus(r.status)
	state := IntentState(r.state)
	if !st.IsKnown() {
		return BooksUndecided, "the provider's status is not one the SDK knows"
	}
	switch state {
	case StateRefused, StateRejected, StateBlocked:
		return BooksStatusDiffers, "the queue never sent it (" + r.state + "), yet the provider lists a payout"
	}
	theirs, ours := st.IsFinal(), state.IsFinal()
	switch {
	case theirs && ours:
		if (state == StatePaid) == st.IsSuccess() {
			return BooksMatched, ""
		}
		return BooksStatusDiffers, "both are final, with different outcomes"
	case theirs && r.idle, ours && r.settled:
		return BooksStatusDiffers, "one side is final and the other is not, past the settle time"
	}
	return BooksInFlight, "not final on both sides yet"
}
