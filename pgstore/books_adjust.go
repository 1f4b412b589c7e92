package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// The books check's adjustments: a drift a person booked (Books.Adjust),
// kept in the check's own append-only table and subtracted from the
// item's delta by every later check.

// BooksAdjustment is one booked difference: Amount booked against one
// item of the books check (a payout or a payment by orderId, a balance by
// currency and network), by Actor, with a Note saying why. The next check
// subtracts every adjustment of an item from its delta: a drift booked to
// the digit is then BooksAdjusted. Adjustments are never edited or
// deleted (the table refuses it): a wrong one is corrected by another.
type BooksAdjustment struct {
	// ID and At are set by Adjust: the adjustment's number and when the
	// database recorded it.
	ID int64
	At time.Time
	// Section is "payouts", "payments" or "balances".
	Section string
	// OrderID names the payout or payment (sections payouts and
	// payments).
	OrderID string
	// Currency and Network name the balance (section balances); in
	// section payouts, optionally, the orderId's payout in that currency
	// and network: an orderId listed in another currency or network than
	// its intent's is an item of its own there. Without them, a payout's
	// adjustment books the orderId's first item (the intent's own).
	Currency, Network string
	// Amount is what is booked: the drift's Delta, exact, not zero.
	Amount decimal.Decimal
	// Actor is who booked it (recorded in canonical form, CanonicalActor);
	// Note says why (a ticket, what was found).
	Actor, Note string
}

// adjKey is what an adjustment applies to.
type adjKey struct{ section, orderID, currency, network string }

// adjSum is the sum of an item's adjustments and how many there are.
type adjSum struct {
	amount decimal.Decimal
	n      int
}

// adjustItem subtracts a payout's or payment's adjustments from it: those
// naming its orderId alone go to the first item of the orderId (of a
// payout, the intent's own: the payouts' rows come so), then are used up,
// so an orderId's payout in another currency or network is never booked
// by them; those naming its orderId, currency and network go to its item
// in that currency and network.
func adjustItem(adj map[adjKey]adjSum, it *BooksItem) {
	var sum adjSum
	exact := adjKey{section: it.Section, orderID: it.OrderID, currency: strings.ToLower(it.Currency), network: strings.ToLower(it.Network)}
	for _, k := range []adjKey{{section: it.Section, orderID: it.OrderID}, exact} {
		if a, ok := adj[k]; ok {
			sum.amount, sum.n = sum.amount.Add(a.amount), sum.n+a.n
			delete(adj, k)
		}
	}
	sum.adjust(it)
}

// Adjust books adj: it checks it, records it in the check's adjustments
// table (BooksConfig.BalanceTable with "_adjustments" appended, created
// with CreateTable or from DDL) and returns it with its ID and At. Bad
// input is a *cryptopay.ValidationError and records nothing. The amount is
// booked as given, exactly: the drift's Delta books it to the digit. An
// adjustment is never edited or deleted: book another to correct one.
func (b *Books) Adjust(ctx context.Context, adj BooksAdjustment) (BooksAdjustment, error) {
	if err := checkAdjustment(&adj); err != nil {
		return adj, err
	}
	if b.cfg.CreateTable {
		if err := b.createTables(ctx); err != nil {
			return adj, err
		}
	}
	err := b.pool().QueryRow(ctx, `INSERT INTO `+b.adjustmentIdent().Sanitize()+
		` (section, order_id, currency, network, amount, actor, note) VALUES ($1, $2, $3, $4, $5::numeric, $6, $7) RETURNING id, at`,
		adj.Section, adj.OrderID, adj.Currency, adj.Network, adj.Amount.String(), adj.Actor, adj.Note).Scan(&adj.ID, &adj.At)
	return adj, err
}

// checkAdjustment refuses an adjustment that names no item, books
// nothing, or has no actor or note; it lower-cases its currency and
// network and puts its actor in canonical form (CanonicalActor).
func checkAdjustment(adj *BooksAdjustment) error {
	bad := func(field, reason string) error { return &cryptopay.ValidationError{Field: field, Reason: reason} }
	switch adj.Section {
	case "payouts", "payments":
		if why := ids.Text(adj.OrderID, 256); why != "" || adj.OrderID == "" {
			return bad("OrderID", cmpOr(why, "is empty: an adjustment of "+adj.Section+" names the orderId"))
		}
		if adj.Section == "payments" && (adj.Currency != "" || adj.Network != "") {
			return bad("Currency", "is for a balance or a payout: an adjustment of payments names the orderId alone")
		}
		if (adj.Currency == "") != (adj.Network == "") {
			return bad("Currency", "an adjustment of a payout names both its currency and its network, or neither")
		}
		if err := checkPair(adj); err != nil {
			return err
		}
	case "balances":
		if adj.Currency == "" || adj.Network == "" || adj.OrderID != "" {
			return bad("Currency", "an adjustment of a balance names its currency and network, and no orderId")
		}
		if err := checkPair(adj); err != nil {
			return err
		}
	default:
		return bad("Section", fmt.Sprintf("%q: want payouts, payments or balances", adj.Section))
	}
	if adj.Amount.IsZero() {
		return bad("Amount", "is zero: an adjustment books an amount")
	}
	actor, err := CanonicalActor(adj.Actor)
	if err != nil {
		return err
	}
	adj.Actor = actor
	if strings.TrimSpace(adj.Note) == "" {
		return bad("Note", "is empty: say why the amount is booked")
	}
	adj.Note = scrubText(adj.Note)
	return nil
}

// checkPair checks an adjustment's currency and network (if any) and
// lower-cases them.
func checkPair(adj *BooksAdjustment) error {
	for _, s := range []string{adj.Currency, adj.Network} {
		if why := ids.Text(s, 64); why != "" {
			return &cryptopay.ValidationError{Field: "Currency", Reason: why}
		}
	}
	adj.Currency, adj.Network = strings.ToLower(adj.Currency), strings.ToLower(adj.Network)
	return nil
}

// readAdjustments sums the adjustments per item (none if the table does
// not exist yet).
func (b *Books) readAdjustments(ctx context.Context) (map[adjKey]adjSum, error) {
	out := make(map[adjKey]adjSum)
	t := b.adjustmentIdent().Sanitize()
	if exists, err := b.tableExists(ctx, b.adjustmentIdent()); err != nil || !exists {
		return out, err
	}
	rows, err := b.pool().Query(ctx, `SELECT section, order_id, currency, network, sum(amount)::text, count(*)::int FROM `+t+
		` GROUP BY 1, 2, 3, 4`)
	if err != nil {
		return nil, err
	}
	var k adjKey
	var sum string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&k.section, &k.orderID, &k.currency, &k.network, &sum, &n}, func() error {
		d, err := decimal.NewFromString(sum)
		out[k] = adjSum{d, n}
		return err
	})
	return out, err
}

// adjust subtracts the item's adjustments from its delta: a drift they
// book to the digit is BooksAdjusted; one they do not stays drift, its
// Delta what is left to book. The balances apply theirs when they are
// classified (balanceItem), within what is in flight.
func (a adjSum) adjust(it *BooksItem) {
	if a.n == 0 {
		return
	}
	it.Adjusted = decimal.NewNullDecimal(a.amount)
	note := fmt.Sprintf("%d adjustments book %s", a.n, a.amount)
	switch rest := it.Delta.Sub(a.amount); {
	case !it.Class.IsDrift():
		it.Detail = strings.TrimPrefix(it.Detail+"; "+note+", though it is not drift", "; ")
	case rest.IsZero():
		it.Detail = fmt.Sprintf("%s: booked (%s: %s)", note, it.Class, it.Detail)
		it.Class = BooksAdjusted
	default:
		it.Delta = rest
		it.Detail += fmt.Sprintf("; %s, %s is left to book", note, rest)
	}
}
