package cryptopay

import (
	"cmp"
	"context"
	"strconv"
	"time"
)

// ReconcileVerdict is what ReconcilePayout concluded about a payout whose
// creation had an unknown outcome.
type ReconcileVerdict int

const (
	// PayoutExists: the API lists a payout with the orderId. Do not create
	// it again.
	PayoutExists ReconcileVerdict = iota + 1
	// PayoutNotCreated: the list, read after the settle time, holds no
	// payout with the orderId, and the pages read prove, by count, that
	// every payout it held was seen (see docs/reconcile.md), or, on a list
	// the pages at both of its ends prove sorted by createdAt, every
	// payout created since the attempt (minus the clock-skew margin).
	// Creating it again, with the same orderId, is safe.
	PayoutNotCreated
	// PayoutStillUnknown: the evidence does not decide (the list could not
	// be read, is inconsistent, is in an order the search cannot prove and
	// too long to read whole in one look, or ctx ended); ReconcilePayout
	// then also returns the error. Do not resend; try again later or ask a
	// person.
	PayoutStillUnknown
)

// String names the verdict.
func (v ReconcileVerdict) String() string {
	switch v {
	case PayoutExists:
		return "exists"
	case PayoutNotCreated:
		return "not_created"
	case PayoutStillUnknown:
		return "still_unknown"
	}
	return "invalid"
}

// ReconcileParams says which payout to look for and when it was attempted.
type ReconcileParams struct {
	// OrderID is the orderId the payout was created with. Required.
	OrderID string
	// AttemptedAt is when the create request was first sent: take
	// time.Now() just before CreatePayout. It must not be in the future:
	// the search may stop once the list reaches payouts created before it
	// (minus ClockSkew), so a time later than the real attempt could miss
	// the payout. Zero means "not known": the whole list is read (up to
	// 1000 pages a look, beyond which the verdict is PayoutStillUnknown)
	// and the answer is given at once, with no settle time, so
	// PayoutNotCreated then holds only for an attempt older than
	// SettleTime; pass AttemptedAt right after an attempt.
	AttemptedAt time.Time
	// SettleTime is how long after AttemptedAt the list is trusted to show a
	// payout that was created (0: DefaultReconcileSettleTime). A search that
	// finds nothing before then waits and looks again.
	SettleTime time.Duration
	// ClockSkew is the margin allowed between this machine's clock and the
	// server's createdAt (0: DefaultReconcileClockSkew). Payouts created
	// within it before the attempt are read too; a larger margin costs
	// more list requests on a busy account, never a wrong answer.
	ClockSkew time.Duration
}

// Defaults for ReconcilePayout.
const (
	// DefaultReconcileSettleTime is how long the list may lag behind
	// creation before a search that finds nothing is believed.
	DefaultReconcileSettleTime = 5 * time.Second
	// DefaultReconcileClockSkew is the margin between this machine's clock
	// and the server's createdAt.
	DefaultReconcileClockSkew = 2 * time.Minute
)

// ReconcileResult is ReconcilePayout's answer.
type ReconcileResult struct {
	// Verdict is what the evidence shows.
	Verdict ReconcileVerdict
	// Payout is the list item found, when Verdict is PayoutExists.
	Payout *PayoutListItem
	// Requests counts the list requests made, over both looks when the
	// search looked again after the settle time.
	Requests int
	// Reason says, in words, why the verdict is what it is.
	Reason string
}

// ReconcilePayout is the one lookup of a payout by its orderId, and the
// way out of ErrOutcomeUnknown for CreatePayout: it says whether the payout
// was created, from the payout list. Follow a payout it found to its final
// status with WaitForPayout (WaitForPayoutParams.OrderID).
//
//	attempted := time.Now()
//	p, err := client.CreatePayout(ctx, params)
//	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
//		res, rerr := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{
//			OrderID: params.OrderID, AttemptedAt: attempted})
//		switch {
//		case rerr != nil || res.Verdict == cryptopay.PayoutStillUnknown:
//			// try again later; do NOT resend
//		case res.Verdict == cryptopay.PayoutExists:
//			// created: do not send it again; follow it with
//			// client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: params.OrderID})
//		case res.Verdict == cryptopay.PayoutNotCreated:
//			// safe to send again, with the same orderId
//		}
//	}
//
// It reads the list from its newest end (the order is learned from
// createdAt). It may stop at the first payout created before AttemptedAt
// minus ClockSkew, skipping the older rest, only when the pages read prove
// the order: both ends of the list read, createdAt known and going one way
// across every payout read, at least 16 payouts in a row at each end, and
// neither currency, network, status nor amount able to lead the order
// (each is the same at both ends, or comes back to a value it left; an
// amount goes both up and down; or the same holds among the payouts read
// around the unread part that share the values its two sides share,
// such as the paid ones when only the newest is processing). On a list
// sorted newest first or oldest
// first that costs 2 requests whatever the account's size (1 when the
// payout is on the first page). Any other order (grouped by currency,
// status or amount, random, reversed part-way, every createdAt equal, no
// createdAt or no count) is read to its end, at most 1000 pages a look:
// a list longer than that in such an order is PayoutStillUnknown. A
// search that finds nothing before AttemptedAt plus SettleTime waits until
// then (bounded by ctx) and looks again, because the list may lag behind
// creation.
//
// PayoutNotCreated is given only on evidence, the count proof of
// docs/reconcile.md: the pages read must prove that every payout the list
// held at the last request was seen (distinct payouts counted by the
// fields that never change, reaching the list's count), or, for a search
// stopped at the cutoff, every payout created since it. Payouts sharing a
// createdAt that swap places between requests, payouts created, or moved
// by an update in a list ordered by a field that changes, can hide one
// from every page read; the search then reads the list again from its
// newest end (at most 2 passes, stopping as soon as the proof closes),
// and if the proof still does not close it returns a *ListProofError. A
// quiet list is proven in its first pass, with no extra request. A list
// that repeats a page (the server ignores offset), ends before its count,
// holds more than its count, or shrinks returns a *ResponseError, as does
// a look that reaches the 1000 pages; an API or transport failure returns
// that error. Each of them matches ErrUnexpectedResponse, and the result
// is still returned, with Verdict PayoutStillUnknown and the requests
// made: do not resend, look again later. The proof cannot see a list
// joined from parts each sorted by createdAt under a key the item does not
// show (such as two shards listed one after the other), nor one sorted
// first by customer or wallet, or by a field that is the same on every
// payout read (the status, when all are paid) and changes during the
// search: on such a server, pass a zero AttemptedAt to read the whole
// list. The cutoff is taken down to its whole second (a list sorted by
// createdAt's second is sorted enough). The proof also assumes the count
// is the list's size when the page is served, not a cached number
// (docs/reconcile.md, "The model").
// Invalid params return a *ValidationError, a nil result, and nothing is
// sent. If several payouts share the orderId, the first one read is
// returned. GET /v1/payout/list, which the API marks as under development.
func (c *Client) ReconcilePayout(ctx context.Context, params ReconcileParams, opts ...Option) (*ReconcileResult, error) {
	if err := params.validate(); err != nil {
		return nil, err
	}
	settle := cmp.Or(params.SettleTime, DefaultReconcileSettleTime)
	skew := cmp.Or(params.ClockSkew, DefaultReconcileClockSkew)
	var cutoff, settled time.Time // zero: the whole list, no settle wait
	if !params.AttemptedAt.IsZero() {
		cutoff, settled = params.AttemptedAt.Add(-skew), params.AttemptedAt.Add(settle)
	}
	res := &ReconcileResult{Verdict: PayoutStillUnknown}
	for {
		late := !time.Now().Before(settled)
		s := newPayoutSearch(ctx, c, params.OrderID, cutoff, opts)
		err := s.run()
		res.Requests += s.requests
		switch {
		case err != nil:
			res.Reason = "the payout list could not be read as evidence: " + err.Error()
			return res, err
		case s.found != nil:
			res.Verdict, res.Payout = PayoutExists, s.found
			res.Reason = "the payout list holds orderId " + strconv.Quote(params.OrderID) + " with status " + c.cfg.scrub.cut(string(s.found.Status), 64) // server text
			return res, nil
		case late:
			res.Verdict = PayoutNotCreated
			res.Reason = notListedReason(s, cutoff, settle)
			return res, nil
		}
		if err := sleepUntil(ctx, settled); err != nil {
			res.Reason = "waiting for the settle time to look again: " + err.Error()
			return res, err
		}
	}
}

// validate checks what ReconcilePayout needs before it sends anything.
func (p ReconcileParams) validate() error {
	switch {
	case p.OrderID == "":
		return &ValidationError{Field: "OrderID", Reason: "must not be empty"}
	case p.AttemptedAt.After(time.Now()):
		return &ValidationError{Field: "AttemptedAt", Reason: "is in the future: take time.Now() before CreatePayout"}
	case p.SettleTime < 0:
		return &ValidationError{Field: "SettleTime", Reason: "must not be negative"}
	case p.ClockSkew < 0:
		return &ValidationError{Field: "ClockSkew", Reason: "must not be negative"}
	}
	return validText("OrderID", p.OrderID)
}

// notListedReason explains a PayoutNotCreated verdict.
func notListedReason(s *payoutSearch, cutoff time.Time, settle time.Duration) string {
	how := "the whole list was read"
	if cutoff.IsZero() {
		return "no payout with this orderId is listed; the whole list was read (no attempt time was given, so no settle time was allowed)"
	}
	if s.stopped {
		how = "the list was read from its newest payout back to one created at " +
			s.edge.UTC().Format(time.RFC3339) + ", before the cutoff " + cutoff.UTC().Format(time.RFC3339) +
			", the pages read at both of its ends prove it sorted by createdAt, and the " + strconv.Itoa(s.provenR) +
			" distinct payouts seen created since the cutoff are all the list holds"
	} else {
		how += ", and its " + strconv.Itoa(s.proven) + " distinct payouts are all it holds"
	}
	return "no payout with this orderId is listed " + settle.String() + " or more after the attempt; " + how
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
