package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
)

// The books check's refunds section (BooksConfig.Refunds): per refunded
// payment, what it paid in (the tracker's paid amount) against what its
// refunds paid out (the payout list, as the payouts section read it).
// See docs/books.md.

// booksRefundsSQL returns every refund with its payment's paid amount,
// its intent's state and each payout the list holds for it that can move
// money (none: one row with NULL payout columns), a payment's refunds
// together. f is the refunds' table, t the tracker's, q the queue's.
func booksRefundsSQL(f, t, q string) string {
	return fmt.Sprintf(`SELECT r.order_id, r.id, r.amount::text, r.currency, r.network, r.wallet_address,
    COALESCE(r.state = %[5]s AND r.claim_until > now(), false) AS claim_open, COALESCE(q.state, ''), t.paid_amount::text,
    l.amount, l.currency, l.network, l.wallet, l.paid_address, l.status
FROM %[1]s r LEFT JOIN %[2]s t ON t.order_id = r.order_id LEFT JOIN %[3]s q ON q.order_id = r.id
    LEFT JOIN %[4]s l ON l.order_id = r.id AND l.status NOT IN (%[6]s)
ORDER BY r.order_id, r.id, l.pos`, f, t, q, booksListed, sqlLiteral(string(RefundAwaitingClaim)),
		sqlList(cryptopay.PayoutFailed, cryptopay.PayoutCancelled))
}

// refundPayout is one payout listed for a refund that can move money.
type refundPayout struct {
	amount                                  decimal.Decimal
	currency, network, wallet, paid, status string
}

// bookRefund is one refund as the section reads it.
type bookRefund struct {
	id                        string
	amount                    decimal.Decimal
	currency, network, wallet string
	claimOpen                 bool
	state                     IntentState
	payouts                   []refundPayout
}

// bookPayment is one refunded payment: what it paid in and its refunds.
type bookPayment struct {
	orderID string
	paid    decimal.NullDecimal
	refunds []*bookRefund
}

// checkRefunds ties each refunded payment, in tx where the payouts
// section streamed the payout list (whole: the caller runs it only then),
// and emits its refunds' drifts, then the payment's item.
func (b *Books) checkRefunds(ctx context.Context, tx pgx.Tx, out func(BooksItem) error) (why string, err error) {
	rf := b.cfg.Refunds
	if err := rf.CheckSchema(ctx); err != nil {
		return err.Error(), ctx.Err()
	}
	rows, err := tx.Query(ctx, booksRefundsSQL(rf.table.Sanitize(), rf.cfg.Tracker.Table(), rf.cfg.Queue.Table()))
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	defer rows.Close()
	var pay *bookPayment
	flush := func() error {
		if pay == nil {
			return nil
		}
		return pay.emit(out)
	}
	for rows.Next() {
		orderID, f, p, paid, err := scanBookRefund(rows)
		if err != nil {
			return "the database: " + err.Error(), ctx.Err()
		}
		if pay == nil || pay.orderID != orderID {
			if err := flush(); err != nil {
				return "", err
			}
			pay = &bookPayment{orderID: orderID, paid: paid}
		}
		if n := len(pay.refunds); n == 0 || pay.refunds[n-1].id != f.id {
			pay.refunds = append(pay.refunds, f)
		}
		if p != nil {
			last := pay.refunds[len(pay.refunds)-1]
			last.payouts = append(last.payouts, *p)
		}
	}
	if err := rows.Err(); err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	return "", flush()
}

// scanBookRefund reads one row of booksRefundsSQL: the payment's orderId,
// the refund, its payout (nil: none) and the payment's paid amount.
func scanBookRefund(rows pgx.Rows) (string, *bookRefund, *refundPayout, decimal.NullDecimal, error) {
	var orderID, amount, state string
	var paid, pAmount, pCurrency, pNetwork, pWallet, pPaid, pStatus *string
	f := &bookRefund{}
	if err := rows.Scan(&orderID, &f.id, &amount, &f.currency, &f.network, &f.wallet, &f.claimOpen, &state, &paid,
		&pAmount, &pCurrency, &pNetwork, &pWallet, &pPaid, &pStatus); err != nil {
		return "", nil, nil, decimal.NullDecimal{}, err
	}
	f.state = IntentState(state)
	var err error
	if f.amount, err = decimal.NewFromString(amount); err != nil {
		return "", nil, nil, decimal.NullDecimal{}, err
	}
	paidIn, err := nullDecimal(paid)
	if err != nil || pAmount == nil {
		return orderID, f, nil, paidIn, err
	}
	p := &refundPayout{currency: *pCurrency, network: *pNetwork, wallet: *pWallet, paid: *pPaid, status: *pStatus}
	p.amount, err = decimal.NewFromString(*pAmount)
	return orderID, f, p, paidIn, err
}

// emit emits the drifts of each refund of the payment, then the
// payment's item: paid in (Ours) against refunded out (Theirs), each
// refund paid counted once at its recorded amount (what its payouts paid
// beyond it is in the refund's own items, never counted twice).
func (p *bookPayment) emit(out func(BooksItem) error) error {
	it := BooksItem{Section: "refunds", OrderID: p.orderID, Ours: p.paid, Currency: p.refunds[0].currency,
		Network: p.refunds[0].network}
	var refunded decimal.Decimal
	pending := false
	for _, f := range p.refunds {
		items, paid, done := f.items(p.orderID)
		for _, ri := range items {
			if err := out(ri); err != nil {
				return err
			}
		}
		if paid {
			refunded = refunded.Add(f.amount)
		}
		pending = pending || !done
		it.Payouts += len(f.payouts)
	}
	it.Theirs = decimal.NewNullDecimal(refunded)
	it.Delta = refunded.Sub(p.paid.Decimal)
	switch {
	case it.Delta.IsPositive():
		it.Class = BooksRefundAbovePaid
		it.Detail = fmt.Sprintf("its refunds paid out %s, the payment paid in %s", refunded, p.paid.Decimal)
	case pending:
		it.Class, it.Detail = BooksInFlight, "a refund is not final yet"
	default:
		it.Class = BooksMatched
	}
	return out(it)
}

// items returns the refund's drift items (its payouts paid more than
// once, or unlike the refund), whether a payout in its currency and
// network paid it, and whether it is done (nothing more can pay).
func (f *bookRefund) items(orderID string) (items []BooksItem, paid, done bool) {
	base := BooksItem{Section: "refunds", OrderID: f.id, Ours: decimal.NewNullDecimal(f.amount), Currency: f.currency,
		Network: f.network, OurWallet: f.wallet, OurStatus: string(f.state), Payouts: len(f.payouts)}
	var own []refundPayout // in the refund's currency and network
	for _, p := range f.payouts {
		if strings.EqualFold(p.currency, f.currency) && strings.EqualFold(p.network, f.network) {
			own = append(own, p)
			continue
		}
		it := base
		it.Class, it.Ours, it.Theirs, it.Delta = BooksRefundDiffers, decimal.NullDecimal{}, decimal.NewNullDecimal(p.amount), p.amount
		it.Currency, it.Network, it.TheirWallet, it.TheirStatus = p.currency, p.network, cmpOr(p.paid, p.wallet), p.status
		it.Detail = fmt.Sprintf("refund of order %s: a payout in %s/%s, the refund is in %s/%s", orderID, p.currency, p.network,
			f.currency, f.network)
		items = append(items, it)
	}
	var first *refundPayout
	var extra decimal.Decimal
	n := 0
	for i, p := range own {
		if cryptopay.PayoutStatus(p.status).IsSuccess() {
			if n++; n == 1 {
				first = &own[i]
			} else {
				extra = extra.Add(p.amount)
			}
		}
	}
	if n > 1 {
		it := base
		it.Class, it.Theirs, it.Delta, it.TheirStatus = BooksRefundPaidTwice, decimal.NewNullDecimal(first.amount.Add(extra)), extra, "paid"
		it.Detail = fmt.Sprintf("refund of order %s: the provider lists %d paid payouts for it", orderID, n)
		items = append(items, it)
	}
	stand := first
	if stand == nil && len(own) > 0 {
		stand = &own[0]
	}
	if stand != nil {
		if it, ok := f.differs(base, stand, orderID); ok {
			items = append(items, it)
		}
	}
	return items, first != nil, f.done(stand)
}

// differs is the item of the payout standing for the refund if its
// amount, wallet or paid address is not the refund's: its delta the
// payout's amount minus the refund's.
func (f *bookRefund) differs(it BooksItem, p *refundPayout, orderID string) (BooksItem, bool) {
	var d []string
	if !p.amount.Equal(f.amount) {
		d = append(d, "amount")
	}
	if p.wallet != "" && !address.Same(f.network, p.wallet, f.wallet) {
		d = append(d, "wallet")
	}
	if p.paid != "" && !address.Same(f.network, p.paid, f.wallet) {
		d = append(d, "paid address")
	}
	if len(d) == 0 {
		return it, false
	}
	it.Class, it.Theirs, it.Delta = BooksRefundDiffers, decimal.NewNullDecimal(p.amount), p.amount.Sub(f.amount)
	it.TheirWallet, it.TheirStatus = cmpOr(p.paid, p.wallet), p.status
	it.Detail = "refund of order " + orderID + ": the payout's " + strings.Join(d, ", ") + " differ from the refund's"
	return it, true
}

// done reports whether nothing more can pay the refund: its payout (p,
// nil: none listed) is final, or its intent ended, or its claim closed
// unclaimed.
func (f *bookRefund) done(p *refundPayout) bool {
	switch {
	case p != nil:
		return cryptopay.PayoutStatus(p.status).IsFinal()
	case f.state != "":
		return f.state.IsFinal()
	}
	return !f.claimOpen
}
