package pgstore_test

import (
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// listAs makes the books read the fake's whole payout list as edit turns
// it (each item one payout the pages proved), then end with err (nil:
// every payout proven seen).
func listAs(c *cryptopay.Client, edit func([]cryptopay.PayoutListItem) []cryptopay.PayoutListItem, end error) func(*pgstore.Books) {
	return func(b *pgstore.Books) {
		pgstore.SetBooksScan(b, func(ctx context.Context, p cryptopay.ScanPayoutsParams) iter.Seq2[cryptopay.PayoutListItem, error] {
			return func(yield func(cryptopay.PayoutListItem, error) bool) {
				var items []cryptopay.PayoutListItem
				for it, err := range c.ScanPayouts(ctx, p) {
					if err != nil {
						yield(cryptopay.PayoutListItem{}, err)
						return
					}
					items = append(items, it)
				}
				for _, it := range edit(items) {
					if !yield(it, nil) {
						return
					}
				}
				if end != nil {
					yield(cryptopay.PayoutListItem{}, end)
				}
			}
		})
	}
}

// booksListedAs runs the books check on the rig's queue (settle time 1
// ms) over the fake's payout list as edit turns it, ended by end.
func (r *qrig) booksListedAs(t *testing.T, q *pgstore.Queue, edit func([]cryptopay.PayoutListItem) []cryptopay.PayoutListItem,
	end error) booksRun {
	t.Helper()
	return runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Millisecond},
		listAs(r.fake.Client(), edit, end))
}

// listed returns a pointer to the first item of orderID in items.
func listed(t *testing.T, items []cryptopay.PayoutListItem, orderID string) *cryptopay.PayoutListItem {
	t.Helper()
	i := slices.IndexFunc(items, func(it cryptopay.PayoutListItem) bool { return it.OrderID == orderID })
	require.GreaterOrEqual(t, i, 0, orderID)
	return &items[i]
}

// paidRig is a queue whose intents wd-000000 to wd-<n-1> were sent and
// paid, its workers stopped.
func paidRig(t *testing.T, n int) (*qrig, *pgstore.Queue) {
	t.Helper()
	r := newQRig(t)
	q := r.queue(t)
	r.enqueue(t, q, payoutsUpTo(n)...)
	r.payAll(t)
	stop := run(t, q)
	waitFor(t, q, "all paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == n })
	stop()
	return r, q
}

// TestBooksDoublePaymentNeverMatched: every item the list yields is a
// payout. Two identical items (one page proved them two) and two items
// a day apart with another amount are double payments, with the sum of
// both in Theirs. When the pages do not prove every payout seen, the
// section is unfinished with the list's reason, yet the double payments
// read are still reported (a page proves them by itself), the orderId
// seen on two pages is undecided, never matched, and nothing else is
// concluded (a payout may have been missed).
func TestBooksDoublePaymentNeverMatched(t *testing.T) {
	r, q := paidRig(t, 4)
	edit := func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem {
		twin := *listed(t, items, "wd-000000")
		other := *listed(t, items, "wd-000001")
		other.CreatedAt, other.Amount = other.CreatedAt.Add(-24*time.Hour), decimal.RequireFromString("10.2")
		return append(items, twin, other)
	}
	want := []booksWant{
		{"wd-000000", pgstore.BooksDoublePayment, "10.25"},
		{"wd-000001", pgstore.BooksDoublePayment, "10.2"},
	}

	res := r.booksListedAs(t, q, edit, nil)
	res.assertClasses(t, "payouts", append(want, booksWant{"wd-000002", pgstore.BooksMatched, "0"},
		booksWant{"wd-000003", pgstore.BooksMatched, "0"}))
	assert.Empty(t, res.sum.Unfinished)
	assert.Equal(t, "20.5", res.by["payouts:wd-000000"].Theirs.Decimal.String())
	assert.Equal(t, "20.45", res.by["payouts:wd-000001"].Theirs.Decimal.String())

	res = r.booksListedAs(t, q, edit, &cryptopay.ListProofError{Listed: 3, Proven: 2, Ambiguous: []string{"wd-000002"}, AmbiguousTotal: 1})
	res.assertClasses(t, "payouts", append(want, booksWant{"wd-000002", pgstore.BooksUndecided, "0"}))
	require.Len(t, res.items, 3, "nothing else concluded: %+v", res.items)
	assert.Equal(t, pgstore.BooksDoublePayment, res.items[0].Class)
	assert.Equal(t, pgstore.BooksDoublePayment, res.items[1].Class)
	assert.Contains(t, res.sum.Unfinished["payouts"], "prove 2 distinct payouts where the list holds 3")
	assert.Equal(t, 2, res.sum.Drift)
	assert.Equal(t, 1, res.sum.Undecided)
	assert.Equal(t, "20.45", res.sum.DriftBySection["payouts"]["usdt/tron"].String(), "10.25 + 10.2")
}

// TestBooksMatchedOnlyWherePaid: a payout is matched only where it was
// paid to the intent's wallet. A paid address other than the wallet is
// payout_differs (the wallet alone agreeing is not enough); a paid payout
// whose list item shows neither wallet nor paid address is undecided; a
// paid address alone that is the intent's wallet is matched.
func TestBooksMatchedOnlyWherePaid(t *testing.T) {
	r, q := paidRig(t, 4)
	const elsewhere = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"
	edit := func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem {
		listed(t, items, "wd-000000").PaidAddress = elsewhere
		none := listed(t, items, "wd-000001")
		none.WalletAddress, none.PaidAddress = "", ""
		listed(t, items, "wd-000002").WalletAddress = ""
		return items
	}
	res := r.booksListedAs(t, q, edit, nil)
	res.assertClasses(t, "payouts", []booksWant{
		{"wd-000000", pgstore.BooksPayoutDiffers, "0"},
		{"wd-000001", pgstore.BooksUndecided, "0"},
		{"wd-000002", pgstore.BooksMatched, "0"},
		{"wd-000003", pgstore.BooksMatched, "0"},
	})
	assert.Equal(t, "paid address differ from the queue's intent", res.by["payouts:wd-000000"].Detail)
	assert.Equal(t, elsewhere, res.by["payouts:wd-000000"].TheirWallet)
	assert.Equal(t, 1, res.sum.Drift)
	assert.Equal(t, 1, res.sum.Undecided)
}

// TestBooksUnsentButListed: the provider lists a payout that can move
// money for an intent the queue has not sent (needs_approval; queued
// with no attempt): drift at once, its own class, the first lines after
// the double payments, its delta the payout's amount, the detail saying
// not to approve or send it, reported even when the list is not proven
// whole. A failed payout for an unsent intent moves nothing and is not
// that class.
func TestBooksUnsentButListed(t *testing.T) {
	r := newQRig(t)
	q := r.heldQueue(t) // usdt above 5 waits for approval
	small := func(i int) cryptopay.CreatePayoutParams {
		p := payoutParams(i)
		p.Amount = decimal.RequireFromString("3.5")
		return p
	}
	r.enqueue(t, q, payoutParams(0), small(1), small(2)) // needs_approval, queued, queued: never sent
	outside := payoutParams(9)
	outside.OrderID = "outside-twice"
	ctx := context.Background()
	for _, tc := range []struct {
		p  cryptopay.CreatePayoutParams
		to []cryptopay.PayoutStatus
	}{
		{payoutParams(0), []cryptopay.PayoutStatus{cryptopay.PayoutProcessing}},
		{small(1), []cryptopay.PayoutStatus{cryptopay.PayoutProcessing, cryptopay.PayoutPaid}},
		{small(2), []cryptopay.PayoutStatus{cryptopay.PayoutFailed}},
		{outside, nil},
	} {
		p, err := r.fake.Client().CreatePayout(ctx, tc.p) // outside the queue
		require.NoError(t, err)
		for _, st := range tc.to {
			require.NoError(t, r.fake.SetPayoutStatus(p.ID, st))
		}
	}
	_, err := r.fake.DuplicatePayout(r.fake.PayoutIDsWithOrderID("outside-twice")[0])
	require.NoError(t, err)

	res := runBooks(t, pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Hour})
	res.assertClasses(t, "payouts", []booksWant{
		{"outside-twice", pgstore.BooksDoublePayment, "20.5"},
		{"wd-000000", pgstore.BooksUnsentButListed, "10.25"},
		{"wd-000001", pgstore.BooksUnsentButListed, "3.5"},
		{"wd-000002", pgstore.BooksInFlight, "0"},
	})
	require.Len(t, res.items, 4)
	assert.Equal(t, []string{"outside-twice", "wd-000000", "wd-000001"},
		[]string{res.items[0].OrderID, res.items[1].OrderID, res.items[2].OrderID}, "double payments, then payouts never sent")
	assert.Contains(t, res.by["payouts:wd-000000"].Detail, "do not approve or send it until someone looks")
	assert.True(t, pgstore.BooksUnsentButListed.IsDrift())
	assert.Equal(t, 3, res.sum.Drift)
	assert.Equal(t, "34.25", res.sum.DriftBySection["payouts"]["usdt/tron"].String(), "20.5 + 10.25 + 3.5")

	// A list not proven whole still proves them: each was seen.
	res = r.booksListedAs(t, q, func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem { return items },
		&cryptopay.ListProofError{Listed: 3, Proven: 2})
	require.Len(t, res.items, 3, "%+v", res.items)
	assert.Equal(t, []pgstore.BooksClass{pgstore.BooksDoublePayment, pgstore.BooksUnsentButListed, pgstore.BooksUnsentButListed},
		[]pgstore.BooksClass{res.items[0].Class, res.items[1].Class, res.items[2].Class})
	assert.Equal(t, "3.5", res.by["payouts:wd-000001"].Delta.String())
	assert.Contains(t, res.sum.Unfinished["payouts"], "the payout list")
}

// TestBooksExactDeltas: status_differs is the amount of the one side
// that paid (plus: the provider's, minus: the queue's), 0 when neither
// did; a double payment counts only payouts that can move money (a failed
// payout beside a paid one is none); a payout under the orderId in
// another currency or network is its own payout_differs item, its delta
// its amount in its own currency.
func TestBooksExactDeltas(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	ps := payoutsUpTo(6)
	r.enqueue(t, q, ps...)
	stop := run(t, q)
	waitFor(t, q, "6 created", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StateCreated] == 6 })
	stop()
	pid := func(i int) string { return r.fake.PayoutIDsWithOrderID(ps[i].OrderID)[0] }
	for i := range 4 {
		require.NoError(t, r.fake.SetPayoutStatus(pid(i), cryptopay.PayoutProcessing))
		require.NoError(t, r.fake.SetPayoutStatus(pid(i), cryptopay.PayoutPaid))
	}
	stop = run(t, q)
	waitFor(t, q, "4 paid", func(c map[pgstore.IntentState]int) bool { return c[pgstore.StatePaid] == 4 })
	stop()
	failed, err := r.fake.DuplicatePayout(pid(0)) // wd-000000: paid, and a failed one beside it
	require.NoError(t, err)
	require.NoError(t, r.fake.SetPayoutStatus(failed, cryptopay.PayoutFailed))
	second, err := r.fake.DuplicatePayout(pid(1)) // wd-000001: paid, a second one created, a cancelled third
	require.NoError(t, err)
	cancelled, err := r.fake.DuplicatePayout(second) // a createdAt after the second's: today's list reader tells them apart
	require.NoError(t, err)
	require.NoError(t, r.fake.SetPayoutStatus(cancelled, cryptopay.PayoutCancelled))
	require.NoError(t, r.fake.SetPayoutStatus(pid(4), cryptopay.PayoutProcessing)) // wd-000004: paid, the stopped queue holds it created
	require.NoError(t, r.fake.SetPayoutStatus(pid(4), cryptopay.PayoutPaid))
	require.NoError(t, r.fake.SetPayoutStatus(pid(5), cryptopay.PayoutFailed)) // wd-000005: failed, the queue holds it created
	r.settled(t)
	edit := func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem {
		eth := *listed(t, items, "wd-000002") // wd-000002: and a payout in another currency
		eth.Currency, eth.Network, eth.Amount = "eth", "ethereum", decimal.RequireFromString("0.000000000000000007")
		eth.WalletAddress, eth.PaidAddress = "0x52908400098527886E0F7030069857D2E4169EE7", ""
		listed(t, items, "wd-000003").Status = cryptopay.PayoutFailed // wd-000003: the queue paid, the provider failed
		return append(items, eth)
	}

	res := r.booksListedAs(t, q, edit, nil)
	res.assertClasses(t, "payouts", []booksWant{
		{"wd-000000", pgstore.BooksMatched, "0"},
		{"wd-000001", pgstore.BooksDoublePayment, "10.25"},
		{"wd-000003", pgstore.BooksStatusDiffers, "-10.25"},
		{"wd-000004", pgstore.BooksStatusDiffers, "10.25"},
		{"wd-000005", pgstore.BooksStatusDiffers, "0"},
	})
	assert.Equal(t, 2, res.by["payouts:wd-000000"].Payouts)
	assert.Equal(t, "20.5", res.by["payouts:wd-000001"].Theirs.Decimal.String(), "the cancelled payout moved nothing")
	var wd2 []pgstore.BooksItem
	for _, it := range res.items {
		if it.OrderID == "wd-000002" {
			wd2 = append(wd2, it)
		}
	}
	require.Len(t, wd2, 2, "the intent's payout, and the one in another currency apart: %v", res.sum.Unfinished)
	assert.Equal(t, []pgstore.BooksClass{pgstore.BooksMatched, pgstore.BooksPayoutDiffers}, []pgstore.BooksClass{wd2[0].Class, wd2[1].Class})
	assert.Equal(t, "0", wd2[0].Delta.String())
	assert.Equal(t, "0.000000000000000007", wd2[1].Delta.String())
	assert.Equal(t, "eth/ethereum", wd2[1].Currency+"/"+wd2[1].Network)
	assert.False(t, wd2[1].Ours.Valid)
	assert.Equal(t, 5, res.sum.Drift)
	assert.Len(t, res.sum.DriftBySection["payouts"], 2)
	assert.Equal(t, "10.25", res.sum.DriftBySection["payouts"]["usdt/tron"].String(), "10.25 - 10.25 + 10.25 + 0")
	assert.Equal(t, "0.000000000000000007", res.sum.DriftBySection["payouts"]["eth/ethereum"].String())
}

// TestBooksAdjustPayoutApart: an orderId listed in its intent's currency
// and in another is two items, and an adjustment books one of them:
// naming the orderId alone, the intent's own item (never the payout in
// the other currency as well); naming the currency and network too, the
// payout there. Both booked to the digit, the books are clean.
func TestBooksAdjustPayoutApart(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.paidPayouts(t, q, 1)
	r.settled(t)
	edit := func(items []cryptopay.PayoutListItem) []cryptopay.PayoutListItem {
		own := listed(t, items, "wd-000000")
		eth := *own
		own.Amount = decimal.RequireFromString("10.2501")
		eth.Currency, eth.Network, eth.Amount = "eth", "ethereum", decimal.RequireFromString("0.000000000000000007")
		eth.WalletAddress, eth.PaidAddress = "0x52908400098527886E0F7030069857D2E4169EE7", ""
		return append(items, eth)
	}
	cfg := pgstore.BooksConfig{Client: r.fake.Client(), Queue: q, SettleTime: time.Millisecond, CreateTable: true,
		BalanceTable: pgtest.Name("books")}
	check := func() booksRun {
		t.Helper()
		res := runBooks(t, cfg, listAs(r.fake.Client(), edit, nil))
		require.Len(t, res.items, 2, "the intent's payout, and the one in another currency apart")
		return res
	}
	res := check()
	assert.Equal(t, []string{"0.0001", "0.000000000000000007"}, []string{res.items[0].Delta.String(), res.items[1].Delta.String()})
	b, err := pgstore.NewBooks(cfg)
	require.NoError(t, err)
	book := func(a pgstore.BooksAdjustment) {
		t.Helper()
		a.Section, a.OrderID, a.Actor, a.Note = "payouts", "wd-000000", "alice", "ticket 7"
		_, err := b.Adjust(context.Background(), a)
		require.NoError(t, err)
	}

	book(pgstore.BooksAdjustment{Amount: decimal.RequireFromString("0.0001")})
	res = check()
	own, eth := res.items[0], res.items[1]
	assert.Equal(t, pgstore.BooksAdjusted, own.Class, own.Detail)
	assert.Equal(t, "0.0001", own.Adjusted.Decimal.String())
	assert.Equal(t, pgstore.BooksPayoutDiffers, eth.Class, eth.Detail)
	assert.Equal(t, "0.000000000000000007", eth.Delta.String(), "not booked by the intent's adjustment")
	assert.False(t, eth.Adjusted.Valid)

	book(pgstore.BooksAdjustment{Currency: "ETH", Network: "Ethereum", Amount: decimal.RequireFromString("0.000000000000000007")})
	res = check()
	assert.Equal(t, pgstore.BooksAdjusted, res.items[0].Class, res.items[0].Detail)
	assert.Equal(t, "0.0001", res.items[0].Adjusted.Decimal.String())
	assert.Equal(t, pgstore.BooksAdjusted, res.items[1].Class, res.items[1].Detail)
	assert.Equal(t, "0.000000000000000007", res.items[1].Adjusted.Decimal.String())
	assert.Equal(t, 2, res.sum.Counts["payouts"][pgstore.BooksAdjusted])
	assert.True(t, res.sum.Clean(), "%+v", res.sum)
}
