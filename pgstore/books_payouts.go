package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
)

// booksPayoutsSQL matches the listed payouts to the queue's intents by
// orderId. Every listed row is one payout (ScanPayouts yields each payout
// the pages prove distinct, even two identical items of one page), never
// merged with another. An orderId's payouts in its intent's currency and
// network are one row, counted whole (n) and by those that can move money
// (m, their sum moved), with one payout standing for them (the first
// that can move money, else the first listed); each of its payouts in
// another currency or network is a row of its own (apart). Without an
// intent, an orderId's payouts are one row per currency and network, and
// a payout without an orderId is a row of its own. Rows come double
// payments first, then payouts the queue never sent (as classify decides
// them); with $2 false (the list was not proven whole) only those and the
// orderIds in $3.
// now() is the transaction's start, before the list was read; the
// intents are read after it. $1 is the settle time in microseconds.
func booksPayoutsSQL(intents string) string {
	const before = `now() - $1 * interval '1 microsecond'`
	// The intent's side of a row, q the intent (NULL: none).
	ours := fmt.Sprintf(`q.order_id IS NOT NULL AS queued,
        COALESCE(q.state IN (%[2]s) OR q.attempts = 0 AND q.state NOT IN (%[3]s), false) AS unsent,
        q.amount::text AS ours, COALESCE(q.currency, '') AS q_currency, COALESCE(q.network, '') AS q_network,
        COALESCE(q.wallet_address, '') AS q_wallet, COALESCE(q.state, '') AS state,
        COALESCE(q.updated_at < %[1]s AND q.next_at < %[1]s, false) AS idle, COALESCE(q.updated_at < %[1]s, false) AS settled,
        COALESCE(COALESCE(q.attempted_at, q.created_at) < %[1]s, false) AS attempted_long_ago`,
		before, sqlList(StateQueued, StateNeedsApproval), sqlList(StateCreated, StatePaid, StateFailed))
	return fmt.Sprintf(`WITH l AS (
    SELECT l.pos, l.order_id, l.amount, l.currency, l.network, l.wallet, l.paid_address, l.status, l.created_at,
        l.status NOT IN (%[3]s) AS moves, l.amount || ' ' || COALESCE(extract(epoch FROM l.created_at)::text, '-') || ' ' || l.payout_id AS mover,
        CASE WHEN l.order_id = '' THEN l.pos::text
            WHEN q.order_id IS NULL THEN lower(l.currency) || '/' || lower(l.network)
            WHEN lower(l.currency) = lower(q.currency) AND lower(l.network) = lower(q.network) THEN ''
            ELSE l.pos::text END AS grp, %[4]s
    FROM %[2]s l LEFT JOIN %[1]s q ON q.order_id = l.order_id),
g AS (
    SELECT l.*, row_number() OVER w AS rn, (count(*) OVER w)::int AS n, (count(*) FILTER (WHERE moves) OVER w)::int AS m,
        (sum(amount::numeric) FILTER (WHERE moves) OVER w)::text AS moved, string_agg(status, ',') OVER w AS statuses,
        COALESCE(string_agg(CASE WHEN moves THEN mover END, chr(31)) OVER w, '') AS movers
    FROM l WINDOW w AS (PARTITION BY order_id, grp ORDER BY moves DESC, pos ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)),
r AS (
    SELECT order_id, grp, grp <> '' AND queued AS apart, n, m, moved, amount, currency, network, wallet, paid_address, status,
        created_at, statuses, movers, queued, unsent, ours, q_currency, q_network, q_wallet, state, idle, settled, attempted_long_ago
    FROM g WHERE rn = 1
    UNION ALL
    SELECT q.order_id, '', false, 0, 0, NULL, NULL, '', '', '', '', '', NULL, '', '', %[4]s
    FROM %[1]s q WHERE NOT EXISTS (SELECT 1 FROM %[2]s l WHERE l.order_id = q.order_id
        AND lower(l.currency) = lower(q.currency) AND lower(l.network) = lower(q.network)))
SELECT order_id, apart, n, m, moved, amount, currency, network, wallet, paid_address, status, created_at, statuses, movers, queued, unsent, ours,
    q_currency, q_network, q_wallet, state, idle, settled, attempted_long_ago
FROM (SELECT r.*, CASE WHEN m > 1 THEN 0 WHEN m = 1 AND NOT apart AND unsent THEN 1 ELSE 2 END AS rank FROM r) r
WHERE $2 OR rank < 2 OR order_id = ANY($3)
ORDER BY rank, order_id, grp`,
		intents, booksListed, sqlList(cryptopay.PayoutFailed, cryptopay.PayoutCancelled), ours)
}

// checkPayouts streams the payout list into a temporary table, matches
// it to the queue's intents and emits one item per orderId (and one per
// payout of it in another currency or network). A list that cannot be
// read to its end, or whose pages do not prove that every payout was
// seen, leaves the section unfinished (why) with only what a page proves
// by itself: the double payments read, the payouts listed for intents the
// queue never sent, and each orderId the list cannot tell apart (one
// payout seen twice, or two identical) as undecided. A part of the list
// proves nothing else about the rest. A database error leaves it
// unfinished with nothing emitted. With the balance section (bal), the
// payouts' debits are read with a list proven whole (balancePayouts);
// without one the balances decide nothing.
// With the refunds section, the refunds are tied on a list proven whole
// (checkRefunds), and refundsWhy set to why not ("" once they are).
func (b *Books) checkPayouts(ctx context.Context, out func(BooksItem) error, bal *balanceRun, refundsWhy *string) (why string, err error) {
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
	case err != nil:
		return "the database: " + err.Error(), ctx.Err()
	case ctx.Err() != nil:
		return "", ctx.Err()
	}
	if bal != nil && listErr == nil {
		if err := b.balancePayouts(ctx, tx, bal); err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
	}
	ambiguous := listAmbiguous(listErr)
	rows, err := tx.Query(ctx, booksPayoutsSQL(q.Table()), b.cfg.SettleTime.Microseconds(), listErr == nil, ambiguous)
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	if why, err := b.payoutItems(ctx, rows, listErr != nil, out); why != "" || err != nil {
		return why, err
	}
	if listErr != nil {
		return "the payout list: " + listErr.Error(), nil
	}
	if b.cfg.Refunds != nil {
		if *refundsWhy, err = b.checkRefunds(ctx, tx, out); err != nil {
			return "", err
		}
	}
	return "", nil
}

// payoutItems emits an item per row of booksPayoutsSQL (on a list not
// proven whole, partial, only what it proves), parking each intent the
// queue never sent that has a payout listed that can move money (park).
// why is set when the database failed.
func (b *Books) payoutItems(ctx context.Context, rows pgx.Rows, partial bool, out func(BooksItem) error) (why string, err error) {
	defer rows.Close()
	parkedHere := map[string]bool{} // orderIds this check has parked (or tried to)
	for rows.Next() {
		var r payoutRow
		if err := rows.Scan(&r.orderID, &r.apart, &r.n, &r.m, &r.moved, &r.amount, &r.currency, &r.network, &r.wallet,
			&r.paid, &r.status, &r.created, &r.listed, &r.movers, &r.queued, &r.unsent, &r.ours, &r.qCurrency, &r.qNetwork, &r.qWallet, &r.state,
			&r.idle, &r.settled, &r.attemptedLongAgo); err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
		it := r.item()
		if partial && !partialProves(&it, r.apart) {
			continue
		}
		// A payout in another currency or network (apart) parks the
		// intent too, unless a line of its own currency did (they come
		// first): one park, its words not rewritten line by line.
		if r.unsent && r.m > 0 && !IntentState(r.state).IsFinal() {
			if r.apart && parkedHere[r.orderID] {
				it.Detail += "; its intent is parked on the line of its own currency and network"
			} else {
				b.park(ctx, &it, listedPayout{r.amount, r.currency, r.network, r.status, r.created, r.m, r.movers})
				parkedHere[r.orderID] = true
			}
		}
		if err := out(it); err != nil {
			return "", err
		}
	}
	if err := rows.Err(); err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	return "", nil
}

// partialProves reports whether it still holds on a list not proven
// whole, turning an orderId the list cannot tell apart into undecided.
// What a page proves by itself holds: a double payment (its payouts were
// proven distinct, and more can only add to it) and a payout listed for
// an intent the queue never sent (it exists). An orderId whose payout the
// pages cannot tell from two identical ones is undecided, never matched;
// nothing else is proven (booksPayoutsSQL then returns no other row but
// the other-currency payouts of those orderIds).
func partialProves(it *BooksItem, apart bool) bool {
	const more = "; the list was not proven whole: there may be more"
	switch {
	case it.Class == BooksDoublePayment, it.Class == BooksUnsentButListed:
		it.Detail += more
		return true
	case apart:
		return false
	}
	it.Class = BooksUndecided
	it.Detail = "the list cannot tell one payout seen on two pages from two identical payouts" + more
	return true
}

// listAmbiguous returns the orderIds that the payout list's error says
// it cannot decide: a payout key seen on two pages (one payout read
// twice, or two identical payouts). Nil when the error names none.
func listAmbiguous(err error) []string {
	var proof *cryptopay.ListProofError
	if errors.As(err, &proof) {
		return proof.Ambiguous
	}
	return nil
}

// copyList streams the whole payout list (cryptopay.Client.ScanPayouts)
// into the temporary table. listErr is the list's failure, err the
// database's; what was read before the list failed is in the table.
func (b *Books) copyList(ctx context.Context, tx pgx.Tx) (listErr, err error) {
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE `+booksListed+` (pos bigint NOT NULL, order_id text NOT NULL,
    amount text NOT NULL, currency text NOT NULL, network text NOT NULL, wallet text NOT NULL, paid_address text NOT NULL,
    status text NOT NULL, merchant_amount text, created_at timestamptz, payout_id text NOT NULL) ON COMMIT DROP`); err != nil {
		return nil, err
	}
	scan := b.scan
	if scan == nil {
		scan = func(ctx context.Context, p cryptopay.ScanPayoutsParams) iter.Seq2[cryptopay.PayoutListItem, error] {
			return b.cfg.Client.ScanPayouts(ctx, p)
		}
	}
	next, stop := iter.Pull2(scan(ctx, cryptopay.ScanPayoutsParams{PageSize: b.cfg.PageSize,
		Progress: func(n, count int) { b.progress("payouts", n, count) }}))
	defer stop()
	src := &listSource{next: next}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{booksListed},
		[]string{"pos", "order_id", "amount", "currency", "network", "wallet", "paid_address", "status", "merchant_amount", "created_at", "payout_id"}, src)
	return src.err, err
}

// listSource feeds the payout list to COPY one payout at a time; the
// list's failure ends the COPY with what was read (err says how).
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
	s.row = []any{s.pos, noNUL(it.OrderID), it.Amount.String(), noNUL(it.Currency), noNUL(it.Network),
		noNUL(it.WalletAddress), noNUL(it.PaidAddress), noNUL(string(it.Status)), nullText(it.MerchantAmount), nullTime(it.CreatedAt), noNUL(it.ID)}
	return true
}

func (s *listSource) Values() ([]any, error) { return s.row, nil }

func (s *listSource) Err() error { return nil }

// payoutRow is one orderId as matched: the provider's side (n payouts, m
// of them able to move money, one standing for them), the queue's intent
// (queued) and how long the intent has been as it is; or one payout apart
// (another currency or network than the intent's).
type payoutRow struct {
	orderID                                 string
	apart                                   bool
	n, m                                    int
	moved, amount                           *string
	currency, network, wallet, paid, status string
	created                                 *time.Time // the standing payout's createdAt (nil: not given)
	listed                                  string     // every status listed, those that can move money first
	movers                                  string     // each payout that can move money: amount, createdAt, id (US-separated, list order)
	queued, unsent                          bool
	ours                                    *string
	qCurrency, qNetwork, qWallet, state     string
	idle, settled, attemptedLongAgo         bool
}

// item classifies the row (see the BooksClass constants).
func (r *payoutRow) item() BooksItem {
	it := BooksItem{Section: "payouts", OrderID: r.orderID, Payouts: r.n, OurStatus: r.state, TheirStatus: r.listed,
		Currency: cmpOr(r.currency, r.qCurrency), Network: cmpOr(r.network, r.qNetwork), OurWallet: r.qWallet,
		TheirWallet: cmpOr(r.wallet, r.paid)}
	it.Ours, _ = nullDecimal(r.ours)
	it.Theirs, _ = nullDecimal(r.amount)
	it.Delta = it.Theirs.Decimal.Sub(it.Ours.Decimal)
	it.Class, it.Detail = r.classify(&it)
	return it
}

// classify decides the class of the row, in the order of the report, and
// sets the delta where it is not Theirs - Ours.
func (r *payoutRow) classify(it *BooksItem) (BooksClass, string) {
	theirs := it.Theirs.Decimal
	switch {
	case r.apart:
		return r.apartItem(it)
	case r.m > 1:
		it.Theirs, _ = nullDecimal(r.moved)
		it.Delta = it.Theirs.Decimal.Sub(it.Ours.Decimal)
		if r.n > r.m {
			return BooksDoublePayment, fmt.Sprintf("the provider lists %d payouts that can move money for this orderId (%d listed)", r.m, r.n)
		}
		return BooksDoublePayment, fmt.Sprintf("the provider lists %d payouts for this orderId", r.n)
	case r.n > 0 && !r.queued:
		it.Delta = theirs
		return BooksProviderOnly, "no intent in the queue has this orderId: created outside the queue"
	case r.n == 0:
		return r.absent()
	case r.m == 1 && r.unsent:
		it.Delta = theirs
		return BooksUnsentButListed, "the queue never sent it (" + r.state + ", no attempt or not sent yet), yet the provider lists a " +
			r.status + " payout for it: do not approve or send it until someone looks (sending it would pay twice)" + r.others()
	}
	if d := r.differs(it); d != "" {
		return BooksPayoutDiffers, d + r.others()
	}
	c, d := r.statuses(it)
	return c, d + r.others()
}

// apartItem classifies a payout in another currency or network than its
// orderId's intent: its own item, its delta its amount if it can move
// money.
func (r *payoutRow) apartItem(it *BooksItem) (BooksClass, string) {
	it.Ours = decimal.NullDecimal{}
	it.Currency, it.Network = r.currency, r.network
	it.Delta = decimal.Zero
	if r.m > 0 {
		it.Delta = it.Theirs.Decimal
	}
	d := fmt.Sprintf("the provider lists a payout for this orderId in %s/%s, the queue's intent is in %s/%s", r.currency, r.network,
		r.qCurrency, r.qNetwork)
	if r.unsent && r.m > 0 {
		d += "; the queue never sent it (" + r.state + "): do not approve or send it until someone looks"
	}
	return BooksPayoutDiffers, d
}

// others notes the payouts listed beside the one that stands for the
// orderId: they moved no money (failed or cancelled).
func (r *payoutRow) others() string {
	if r.n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (%d more payouts listed for this orderId, failed or cancelled)", r.n-1)
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

// differs names the fields of the payout that differ from the intent's:
// its wallet and its paid address (each when given) are both compared
// with the intent's wallet.
func (r *payoutRow) differs(it *BooksItem) string {
	var d []string
	if !it.Ours.Decimal.Equal(it.Theirs.Decimal) {
		d = append(d, "amount")
	}
	network := cmpOr(r.qNetwork, r.network)
	if r.wallet != "" && !address.Same(network, r.wallet, r.qWallet) {
		d = append(d, "wallet")
	}
	if r.paid != "" && !address.Same(network, r.paid, r.qWallet) {
		d = append(d, "paid address")
		it.TheirWallet = r.paid
	}
	if len(d) == 0 {
		return ""
	}
	return strings.Join(d, ", ") + " differ from the queue's intent"
}

// statuses compares the provider's status with the queue's state. Where
// they differ, the delta is the amount of the one side that paid (plus:
// the provider's, minus: the queue's), 0 if neither or both did.
func (r *payoutRow) statuses(it *BooksItem) (BooksClass, string) {
	st := cryptopay.PayoutStatus(r.status)
	state := IntentState(r.state)
	if !st.IsKnown() {
		return BooksUndecided, "the provider's status is not one the SDK knows"
	}
	differs := func(why string) (BooksClass, string) {
		it.Delta = decimal.Zero
		if st.IsSuccess() {
			it.Delta = it.Delta.Add(it.Theirs.Decimal)
		}
		if state == StatePaid {
			it.Delta = it.Delta.Sub(it.Ours.Decimal)
		}
		return BooksStatusDiffers, why
	}
	switch state {
	case StateRefused, StateRejected, StateBlocked:
		return differs("the queue never sent it (" + r.state + "), yet the provider lists a payout")
	}
	theirs, ours := st.IsFinal(), state.IsFinal()
	switch {
	case theirs && ours:
		if (state == StatePaid) != st.IsSuccess() {
			return differs("both are final, with different outcomes")
		}
		if st.IsSuccess() && r.wallet == "" && r.paid == "" {
			return BooksUndecided, "paid, but the provider shows neither the payout's wallet nor its paid address: where it went is not proven"
		}
		return BooksMatched, ""
	case theirs && r.idle, ours && r.settled:
		return differs("one side is final and the other is not, past the settle time")
	}
	return BooksInFlight, "not final on both sides yet"
}
