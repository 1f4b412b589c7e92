package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// trackBegin starts a change's transaction with synchronous_commit at
// least on (remote_apply is kept), whatever the server's default, as the
// payout queue's commits do (syncCommit): a change the merchant credited
// must be on disk before the tracker moves on.
const trackBegin = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE; SELECT " + syncCommit

// Run follows the tracked payments until ctx ends: it claims due payments
// (any number of replicas may Run on the same table; each payment is held
// by one at a time, under a lease), reads each through the API and records
// what changed, at most TrackerConfig.Concurrency at once. It returns
// ctx's error once the payments in hand are done with. Database and API
// errors (a database down when Run starts too) are retried on the
// schedule, never returned. A tracker without
// TrackerConfig.Client returns ErrInvalidOption at once, and one whose
// tables are missing or out of date a *SchemaError (CheckSchema).
func (t *Tracker) Run(ctx context.Context) error {
	if t.api == nil {
		return fmt.Errorf("%w: Run needs TrackerConfig.Client", ErrInvalidOption)
	}
	if err := awaitSchema(ctx, t.CheckSchema, &t.watch, t.cfg.PollInterval); err != nil {
		return err
	}
	return claimLoop(ctx, t.cfg.Concurrency, t.cfg.PollInterval, t.wake, takeFree, t.claimForRun, t.step)
}

// claimForRun claims up to n due payments (one per window while the API
// refuses the key: see keyGate); a failed claim is logged and hands out
// nothing.
func (t *Tracker) claimForRun(ctx context.Context, n int) []held {
	return claimGated(ctx, &t.watch, "tracked payments", n, t.claim)
}

// held is a tracked payment a worker holds under its lease token until
// deadline (the lease, less a margin, by this machine's clock).
type held struct {
	*TrackedPayment
	latePolls int
	token     []byte
	deadline  time.Time
}

// claim leases up to n due payments to this worker.
func (t *Tracker) claim(ctx context.Context, n int) ([]held, error) {
	return claimRows(ctx, t.cfg.Pool, t.sql.claim, n, t.cfg.Lease, func(rows pgx.Rows, token []byte, deadline time.Time) (held, error) {
		h := held{token: token, deadline: deadline}
		var err error
		h.TrackedPayment, err = scanTracked(rows, &h.latePolls)
		return h, err
	})
}

// step reads one held payment and records what it shows.
func (t *Tracker) step(ctx context.Context, h held) {
	ctx, cancel := context.WithDeadline(ctx, h.deadline)
	defer cancel()
	if h.PaymentID == "" {
		t.write(ctx, h, t.schedule(time.Now(), h.ExpiredAt, h.Status, h.latePolls), "")
		return
	}
	p, err := t.api.GetPayment(ctx, h.PaymentID)
	t.watch.answered(err)
	if err != nil {
		if ctx.Err() != nil {
			return // the lease runs out; another read follows
		}
		anomaly := ""
		if errors.Is(err, cryptopay.ErrNotFound) {
			anomaly = "the API does not know payment " + h.PaymentID
		}
		nx := t.schedule(time.Now(), h.ExpiredAt, h.Status, h.latePolls)
		nx.fail = t.watch.report(ctx, "reading a tracked payment", h.OrderID, err)
		t.write(ctx, h, nx, anomaly)
		return
	}
	if reason := t.untrusted(h, p); reason != "" {
		t.log.LogAttrs(ctx, slog.LevelWarn, "pgstore: tracked payment: read not recorded", slog.String("orderId", h.OrderID),
			slog.String("reason", reason))
		if unconfirmedID(h) && strings.EqualFold(p.ID, h.PaymentID) && p.OrderID != h.OrderID {
			t.unmatch(ctx, h, reason)
			return
		}
		t.write(ctx, h, t.schedule(time.Now(), cmpTime(h.ExpiredAt, p.ExpiredAt), h.Status, h.latePolls), reason)
		return
	}
	// The schedule follows the tracked expiredAt: no later answer moves it.
	nx := t.schedule(time.Now(), cmpTime(h.ExpiredAt, p.ExpiredAt), p.Status, h.latePolls)
	flag := suspect(h, p)
	if p.Status == h.Status && sameAmount(p.PaidAmount, h.PaidAmount) {
		t.write(ctx, h, nx, flag)
		return
	}
	err = t.record(ctx, h, p, nx, flag)
	switch {
	case err == nil, errors.Is(err, errTrackLeaseLost):
	case isCallback(err):
		// OnChange failed or panicked: the change rolled back, the lease
		// is still held. Read again after a backoff, never at once.
		at := time.Now().Add(doubling(t.cfg.PollInterval, t.cfg.OpenEvery, h.LastFailure.Count+1))
		t.write(ctx, h, next{state: h.State, at: &at, latePolls: h.latePolls,
			fail: t.watch.report(ctx, "recording a tracked payment's change", h.OrderID, err)}, "")
	default:
		t.watch.warn(ctx, "pgstore: recording a tracked payment's change", slog.String("orderId", h.OrderID),
			slog.String("error", err.Error()))
	}
}

// unconfirmedID says whether h's payment id came from PaymentChanged for
// an order tracked by orderId alone and no read has confirmed it yet (no
// change recorded, no amount from Track).
func unconfirmedID(h held) bool { return h.Changes == 0 && !h.PayAmount.Valid }

// unmatch drops an unconfirmed payment id the API says belongs to another
// order: the payment waits unmatched again, flagged, for its own webhook,
// instead of following another order's payment for good.
func (t *Tracker) unmatch(ctx context.Context, h held, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := t.cfg.Pool.Exec(ctx, t.sql.unmatch, h.OrderID, h.token, scrubText(reason), string(TrackUnmatched)); err != nil {
		t.log.LogAttrs(ctx, slog.LevelWarn, "pgstore: unmatching a tracked payment", slog.String("orderId", h.OrderID),
			slog.String("error", err.Error()))
	}
}

// untrusted says why the API's answer p must not be recorded for h ("" if
// it may): it names another payment or order, or another currency, network
// or payAmount than tracked (a field the answer leaves out is not another);
// has a status the SDK does not know; is a status the lifecycle table does
// not lead to from the one recorded (reachable); or its paid amount cannot
// be booked (refusedMoney).
func (t *Tracker) untrusted(h held, p *cryptopay.Payment) string {
	switch {
	case !strings.EqualFold(p.ID, h.PaymentID):
		return scrubText("the API answered for another payment id: " + p.ID)
	case p.OrderID != h.OrderID:
		return scrubText("the API answered with another orderId: " + p.OrderID)
	case h.Currency != "" && p.Currency != "" && p.Currency != h.Currency,
		h.Network != "" && p.Network != "" && p.Network != h.Network:
		return scrubText(fmt.Sprintf("the API answered in %s on %s; the payment is tracked in %s on %s",
			p.Currency, p.Network, h.Currency, h.Network))
	case h.Currency == "" && p.Currency != "" && ids.Key(strings.ToLower(strings.TrimSpace(p.Currency))) != "",
		h.Network == "" && p.Network != "" && ids.Key(strings.ToLower(strings.TrimSpace(p.Network))) != "":
		// Tracked by orderId alone, the payment takes these from the answer:
		// a NUL would fail every write in silence, a long text bloat the row.
		return scrubText(fmt.Sprintf("the API answered with %q on %q, not a currency or network key",
			truncate(p.Currency, ids.MaxKeyLen), truncate(p.Network, ids.MaxKeyLen)))
	case h.PayAmount.Valid && !p.PayAmount.IsZero() && !p.PayAmount.Equal(h.PayAmount.Decimal):
		return fmt.Sprintf("the API answered with payAmount %s; the payment is tracked with %s", p.PayAmount, h.PayAmount.Decimal)
	case !p.Status.IsKnown():
		return scrubText("the API reported an unknown status: " + string(p.Status))
	case h.Status != "" && p.Status != h.Status && !reachable(h.Status, p.Status):
		return scrubText(fmt.Sprintf("the API reported %s after %s, a move the lifecycle table does not allow", p.Status, h.Status))
	}
	return refusedMoney(h, p)
}

// truncate cuts s to at most n bytes, for quoting a server's text.
func truncate(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// paymentStatuses are the statuses the lifecycle table names.
var paymentStatuses = []cryptopay.PaymentStatus{cryptopay.PaymentWaiting, cryptopay.PaymentConfirming,
	cryptopay.PaymentLocked, cryptopay.PaymentExpired, cryptopay.PaymentPaidPartial, cryptopay.PaymentPaid,
	cryptopay.PaymentPaidOver, cryptopay.PaymentFailed, cryptopay.PaymentRejected}

// reachable reports whether the lifecycle table leads from one status to
// another in one move or several: between two reads a payment may pass
// statuses the tracker never sees (paid_partial, then confirming, then
// failed), so what is checked is that the walk exists, not that it took
// one step.
func reachable(from, to cryptopay.PaymentStatus) bool {
	seen := map[cryptopay.PaymentStatus]bool{from: true}
	for next := []cryptopay.PaymentStatus{from}; len(next) > 0; {
		s := next[0]
		next = next[1:]
		for _, m := range paymentStatuses {
			if !seen[m] && s.CanMoveTo(m) {
				if m == to {
					return true
				}
				seen[m] = true
				next = append(next, m)
			}
		}
	}
	return false
}

// refusedMoney says why p's paid amount must not be booked ("" if it may):
// it is negative, less than already recorded, or a success status (paid,
// paid_over) comes with less than payAmount paid, which would ship goods
// that were not paid for.
func refusedMoney(h held, p *cryptopay.Payment) string {
	paid, due := paidOrZero(p.PaidAmount), dueOf(h, p)
	switch {
	case paid.IsNegative():
		return "the API reported a negative paid amount: " + paid.String()
	case paid.LessThan(paidOrZero(h.PaidAmount)):
		return "the API reported less paid than already recorded"
	case p.Status.IsSuccess() && paid.LessThan(due):
		return fmt.Sprintf("the API reported %s with %s paid of %s due: a success below the amount due", p.Status, paid, due)
	}
	return ""
}

// suspect says what a person should check in an answer that is recorded,
// since its money is real ("" if nothing): an expiredAt other than the
// tracked one (the schedule keeps the tracked one), paid_over without more
// than payAmount paid, paid with more, paid_partial with all of it.
func suspect(h held, p *cryptopay.Payment) string {
	var why []string // every reason: the first must not hide the next
	if !h.ExpiredAt.IsZero() && !p.ExpiredAt.IsZero() && !sameMicrosecond(p.ExpiredAt, h.ExpiredAt) {
		why = append(why, fmt.Sprintf("the API reported expiredAt %s; the payment is tracked with %s, which its schedule keeps",
			p.ExpiredAt.UTC().Format(time.RFC3339Nano), h.ExpiredAt.UTC().Format(time.RFC3339Nano)))
	}
	paid, due := paidOrZero(p.PaidAmount), dueOf(h, p)
	switch st := p.Status; {
	case !due.IsPositive():
	case st == cryptopay.PaymentPaidOver && !paid.GreaterThan(due),
		st == cryptopay.PaymentPaid && paid.GreaterThan(due),
		st == cryptopay.PaymentPaidPartial && !paid.LessThan(due):
		why = append(why, fmt.Sprintf("the API reported %s with %s paid of %s due", st, paid, due))
	}
	return strings.Join(why, "; ")
}

// sameMicrosecond compares two times as PostgreSQL keeps them: to the
// microsecond (pgx drops the rest). A server that writes more digits
// (.NET writes 100 ns ticks) sends the tracked expiredAt unchanged, yet
// it is not Equal to the stored one.
func sameMicrosecond(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

// dueOf is the payAmount the answer is checked against: the tracked one,
// else (a payment tracked by orderId alone) the answer's.
func dueOf(h held, p *cryptopay.Payment) decimal.Decimal {
	if h.PayAmount.Valid {
		return h.PayAmount.Decimal
	}
	return p.PayAmount
}

// sameAmount compares two paid amounts, none counting as zero (an unpaid
// payment's answer may carry 0, null or nothing).
func sameAmount(a, b decimal.NullDecimal) bool { return paidOrZero(a).Equal(paidOrZero(b)) }

func cmpTime(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	return a
}

// write records a read without a change: the next read and a new anomaly,
// added in SQL to the row's own (one a webhook set, or an operator
// cleared, during the read stays as they left it).
func (t *Tracker) write(ctx context.Context, h held, nx next, anomaly string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var expired *time.Time
	if !h.ExpiredAt.IsZero() {
		expired = &h.ExpiredAt
	}
	if _, err := t.cfg.Pool.Exec(ctx, t.sql.set, namedArgs{"order_id": h.OrderID, "lease_token": h.token,
		"state": string(nx.state), "next_at": nx.at, "late_polls": nx.latePolls, "anomaly": scrubText(anomaly),
		"needs_action": h.Status.NeedsAction(), "expired_at": expired,
		"fail_class": string(nx.fail.Class), "fail_text": nx.fail.Text}); err != nil {
		t.watch.warn(ctx, "pgstore: scheduling a tracked payment", slog.String("orderId", h.OrderID),
			slog.String("error", err.Error()))
	}
}

// record writes the change h -> p in one transaction with OnChange (for a
// change that matters to money), under the lease and only from the state
// h was read in, with anomaly (if any) added to the row's; then reports it
// to the Observer. The tracked expiredAt is kept (the answer's is taken
// only when none was tracked).
func (t *Tracker) record(ctx context.Context, h held, p *cryptopay.Payment, nx next, anomaly string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	c := &PaymentChange{OrderID: h.OrderID, PaymentID: h.PaymentID, From: h.Status, To: p.Status,
		FromPaid: h.PaidAmount, ToPaid: p.PaidAmount, MerchantAmount: p.MerchantAmount, Payment: p}
	exp := cmpTime(h.ExpiredAt, p.ExpiredAt)
	c.Late = h.Status == cryptopay.PaymentExpired ||
		(!exp.IsZero() && p.UpdatedAt.After(exp) && p.Status != cryptopay.PaymentExpired)
	var expired *time.Time
	if !exp.IsZero() {
		expired = &exp
	}
	err := pgx.BeginTxFunc(ctx, t.cfg.Pool, pgx.TxOptions{BeginQuery: trackBegin}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, t.sql.record, namedArgs{"order_id": h.OrderID, "lease_token": h.token,
			"from_status": string(h.Status), "to_status": string(p.Status),
			"from_paid": nullText(h.PaidAmount), "to_paid": nullText(p.PaidAmount),
			"state": string(nx.state), "next_at": nx.at, "late_polls": nx.latePolls,
			"needs_action": p.Status.NeedsAction(), "expired_at": expired, "final": p.Status.IsFinal(),
			"pay_amount": p.PayAmount.String(), "currency": p.Currency, "network": p.Network,
			"late": c.Late, "anomaly": scrubText(anomaly), "merchant_amount": nullText(p.MerchantAmount),
		}).Scan(&c.Seq, &c.At)
		if errors.Is(err, pgx.ErrNoRows) {
			return errTrackLeaseLost
		}
		if err != nil {
			return err
		}
		t.at("change-recorded")
		if c.Credits() && t.cfg.OnChange != nil {
			if err := guard("OnChange", func() error { return t.cfg.OnChange(ctx, tx, c) }); err != nil {
				return err
			}
		}
		t.at("before-commit")
		return nil
	})
	if err != nil {
		return err
	}
	if t.cfg.Observer != nil {
		// Told after the commit: a panic is recovered and counted; the
		// change stays recorded (OnChange's effects committed with it).
		err := guard("Observer", func() error { t.cfg.Observer(*c); return nil })
		t.watch.recovered(ctx, "observing a tracked payment's change", h.OrderID, err)
	}
	return nil
}

// at calls the test hook, if any.
func (t *Tracker) at(point string) {
	if t.hook != nil {
		t.hook(point)
	}
}
