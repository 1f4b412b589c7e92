package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// otherTron is a tron address that is not tronAddr.
const otherTron = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// refundPaid marks the refund's payout intent paid by the queue, an hour
// ago (past any settle time), and returns the refund's id.
func (r *frig) refundPaid(t *testing.T, f *pgstore.Refund) string {
	t.Helper()
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.tables[0]+` SET state = 'paid', attempts = 1,
    attempted_at = now() - interval '1 hour', updated_at = now() - interval '1 hour', next_at = now() - interval '1 hour',
    payout_id = 'p-' || order_id, payout_status = 'paid' WHERE order_id = $1`, f.ID)
	require.NoError(t, err)
	return f.ID
}

// refundOf makes a refund of orderID's excess (2 of a payment of 10 that
// paid 12), sent to tronAddr.
func (r *frig) refundOf(t *testing.T, orderID string) *pgstore.Refund {
	t.Helper()
	r.track(t, orderID, cryptopay.PaymentPaidOver, "10", "12", false)
	f, _, err := r.refunds.Create(context.Background(), refundTo(orderID, "k", pgstore.RefundExcess))
	require.NoError(t, err)
	return f
}

// payout is a listed payout for orderID.
func payout(orderID, amount, currency, network, wallet string, st cryptopay.PayoutStatus) cryptopay.PayoutListItem {
	return cryptopay.PayoutListItem{ID: "p-" + orderID + amount + currency, OrderID: orderID, Amount: decimal.RequireFromString(amount),
		Currency: currency, Network: network, WalletAddress: wallet, Status: st, CreatedAt: time.Now().Add(-time.Hour)}
}

// TestBooksRefunds: the refunds section ties each refunded payment (paid
// in against refunded out) and reports a refund paid twice, a payout
// unlike its refund (amount, wallet, another currency) and refunds above
// what the payment paid, each with its exact delta; a refund paid once as
// recorded is matched in the payouts section too (an ordinary intent),
// and one not sent yet, or not claimed yet, leaves its payment in flight. The summary's
// totals are the sums of the items' deltas.
func TestBooksRefunds(t *testing.T) {
	r := freshFRig(t)
	ok := r.refundPaid(t, r.refundOf(t, "o-ok"))
	twice := r.refundPaid(t, r.refundOf(t, "o-twice"))
	above := r.refundPaid(t, r.refundOf(t, "o-above"))
	amount := r.refundPaid(t, r.refundOf(t, "o-amount"))
	wallet := r.refundPaid(t, r.refundOf(t, "o-wallet"))
	other := r.refundOf(t, "o-other").ID
	r.refundOf(t, "o-flight")
	r.track(t, "o-claim", cryptopay.PaymentPaidOver, "10", "12", false)
	r.claimable(t, "o-claim", "k") // awaiting its customer's claim
	// The tracker's paid amount of o-above corrected down to 1.5 after its
	// refund of 2 was paid.
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.tables[1]+" SET paid_amount = 1.5 WHERE order_id = 'o-above'")
	require.NoError(t, err)
	list := []cryptopay.PayoutListItem{
		payout(ok, "2", "USDT", "TRON", tronAddr, cryptopay.PayoutPaid),
		payout(twice, "2", "usdt", "tron", tronAddr, cryptopay.PayoutPaid),
		payout(twice, "2", "usdt", "tron", tronAddr, cryptopay.PayoutPaid),
		payout(twice, "2", "usdt", "tron", tronAddr, cryptopay.PayoutFailed), // moved nothing
		payout(above, "2", "usdt", "tron", tronAddr, cryptopay.PayoutPaid),
		payout(amount, "2.000001", "usdt", "tron", tronAddr, cryptopay.PayoutPaid),
		payout(wallet, "2", "usdt", "tron", otherTron, cryptopay.PayoutPaid),
		payout(other, "0.00003", "btc", "bitcoin", btcAddr, cryptopay.PayoutPaid),
	}
	res := r.booksOn(t, list, nil)

	res.assertClasses(t, "refunds", []booksWant{
		{"o-ok", pgstore.BooksMatched, "0"},
		{"o-twice", pgstore.BooksMatched, "0"},
		{twice, pgstore.BooksRefundPaidTwice, "2"},
		{"o-above", pgstore.BooksRefundAbovePaid, "0.5"},
		{"o-amount", pgstore.BooksMatched, "0"},
		{amount, pgstore.BooksRefundDiffers, "0.000001"},
		{"o-wallet", pgstore.BooksMatched, "0"},
		{wallet, pgstore.BooksRefundDiffers, "0"},
		{"o-other", pgstore.BooksInFlight, "0"},
		{other, pgstore.BooksRefundDiffers, "0.00003"},
		{"o-flight", pgstore.BooksInFlight, "0"},
		{"o-claim", pgstore.BooksInFlight, "0"},
	})
	assert.Equal(t, "btc", res.by["refunds:"+other].Currency)
	assert.Equal(t, "2", res.by["refunds:o-twice"].Theirs.Decimal.String(), "the refund counted once, at its amount")
	assert.Equal(t, "4", res.by["refunds:"+twice].Theirs.Decimal.String())
	res.assertClasses(t, "payouts", []booksWant{{ok, pgstore.BooksMatched, "0"}})
	assert.Empty(t, res.sum.Unfinished)
	assert.Len(t, res.items, countSection(res.items, "payouts")+12, "one item per payment and per refund drift")
	assert.Equal(t, "2.500001", res.sum.DriftBySection["refunds"]["usdt/tron"].String(), "2 + 0.5 + 0.000001 + 0")
	assert.Equal(t, "0.00003", res.sum.DriftBySection["refunds"]["btc/bitcoin"].String())
	sums := map[pgstore.BooksTotal]decimal.Decimal{}
	for _, it := range res.items {
		k := pgstore.BooksTotal{Section: it.Section, Class: it.Class, Currency: it.Currency, Network: it.Network}
		sums[k] = sums[k].Add(it.Delta)
	}
	for _, tot := range res.sum.Totals {
		d := tot.Delta
		tot.Items, tot.Delta = 0, decimal.Zero
		assert.Equal(t, sums[tot].String(), d.String(), "%+v", tot)
	}

	// A list not proven whole: the refunds section concludes nothing.
	res = r.booksOn(t, list, &cryptopay.ListProofError{Listed: 9, Proven: 8})
	assert.Zero(t, countSection(res.items, "refunds"))
	assert.Contains(t, res.sum.Unfinished["refunds"], "proven whole")
}

// booksOn runs the books check on the rig's queue and refunds over the
// payout list given (the fake's own holds none), ended by end (nil:
// proven whole).
func (r *frig) booksOn(t *testing.T, list []cryptopay.PayoutListItem, end error) booksRun {
	t.Helper()
	fake := cryptopaytest.NewServer()
	t.Cleanup(fake.Close)
	return runBooks(t, pgstore.BooksConfig{Client: fake.Client(), Queue: r.queue, Refunds: r.refunds, SettleTime: time.Millisecond},
		listAs(fake.Client(), func([]cryptopay.PayoutListItem) []cryptopay.PayoutListItem { return list }, end))
}

// TestBooksRefundsNeedTheirQueue: the refunds section reads the refunds'
// payouts through their own queue.
func TestBooksRefundsNeedTheirQueue(t *testing.T) {
	r := freshFRig(t)
	_, err := pgstore.NewBooks(pgstore.BooksConfig{Tracker: r.tracker, Refunds: r.refunds})
	require.ErrorIs(t, err, pgstore.ErrInvalidOption)
	q, err := pgstore.NewQueue(context.Background(), pgstore.QueueConfig{Pool: r.pool, Table: r.tables[0] + "_other", CreateTable: true})
	require.NoError(t, err)
	_, err = pgstore.NewBooks(pgstore.BooksConfig{Queue: q, Refunds: r.refunds})
	require.ErrorIs(t, err, pgstore.ErrInvalidOption)
}

// countSection counts the items of one section.
func countSection(items []pgstore.BooksItem, section string) int {
	n := 0
	for _, it := range items {
		if it.Section == section {
			n++
		}
	}
	return n
}
