package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cryptopay/cryptopay-go"
)

// claimed is an intent a worker holds: its lease token and the local time
// by which the worker must be done with it (the lease, less a margin).
type claimed struct {
	*Intent
	tries    int
	token    []byte
	deadline time.Time
	// committed: this worker committed the attempt in commitBatch and
	// has not sent it yet.
	committed bool
}

// errLostLease: the intent's lease passed to another worker (or an operator
// moved it); this worker records nothing more and sends nothing.
var errLostLease = errors.New("pgstore: lease lost")

// Run works the queue until ctx ends: it claims due intents (any number of
// replicas may Run on the same table; each intent is held by one at a
// time, under a lease), sends, reconciles and follows them, at most
// QueueConfig.Concurrency at once. It returns ctx's error once the intents
// in hand are done with. Database and API errors (a database down when
// Run starts too) are retried, never returned: an intent whose worker
// cannot record its progress is taken over when the lease ends, and
// reconciled. A queue without
// QueueConfig.Client returns ErrInvalidOption at once, and one whose
// tables are missing or out of date a *SchemaError (CheckSchema).
func (q *Queue) Run(ctx context.Context) error {
	if q.api == nil {
		return fmt.Errorf("%w: Run needs QueueConfig.Client", ErrInvalidOption)
	}
	if err := awaitSchema(ctx, q.CheckSchema, &q.watch, q.cfg.PollInterval); err != nil {
		return err
	}
	return claimLoop(ctx, q.cfg.Concurrency, q.cfg.PollInterval, q.wake, q.gather, q.claimForRun, q.handle)
}

// claimForRun claims up to n due intents and commits the attempts of
// those about to be sent, in one round trip each (see commitBatch). A
// failed claim is logged and hands out nothing. While the API refuses the
// key, one intent is claimed per window (see keyGate).
func (q *Queue) claimForRun(ctx context.Context, n int) []claimed {
	batch := claimGated(ctx, &q.watch, "payout intents", n, q.claim)
	q.commitBatch(ctx, batch)
	return batch
}

// gather takes the free slots after the first one and returns how many
// this worker holds for its next claim. While intents are in flight it
// waits, at most PollInterval, until a quarter of the slots are free: one
// claim and one attempt commit then serve several intents, instead of two
// round trips for each intent as its slot frees.
func (q *Queue) gather(ctx context.Context, slots chan struct{}) int {
	n, want := 1, max(cap(slots)/4, 1)
	var timeout <-chan time.Time
	for n < cap(slots) {
		select {
		case slots <- struct{}{}:
			n++
			continue
		default:
		}
		if n >= want {
			break
		}
		if timeout == nil {
			t := time.NewTimer(q.cfg.PollInterval)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case slots <- struct{}{}:
			n++
			continue
		case <-timeout:
		case <-ctx.Done():
		}
		break
	}
	return n
}

// claim leases up to n due intents to this worker.
func (q *Queue) claim(ctx context.Context, n int) ([]claimed, error) {
	return claimRows(ctx, q.cfg.Pool, q.sql.claim, n, q.cfg.Lease, func(rows pgx.Rows, token []byte, deadline time.Time) (claimed, error) {
		c := claimed{token: token, deadline: deadline}
		var err error
		c.Intent, err = scanIntent(rows, &c.tries)
		return c, err
	}, q.cfg.OnFinal != nil)
}

// handle takes one claimed intent one step (or a few) further.
func (q *Queue) handle(ctx context.Context, c claimed) {
	ctx, cancel := context.WithDeadline(ctx, c.deadline)
	defer cancel()
	var err error
	switch {
	case c.State.IsFinal():
		err = q.callback(ctx, c) // claimed for its due callback only
	case c.State == StateSending:
		if c.committed {
			err = q.post(ctx, c)
			break
		}
		err = q.takeOver(ctx, c)
	case c.State == StateQueued:
		err = q.send(ctx, c)
	case c.State == StateReconciling, c.State == StateParked:
		err = q.reconcile(ctx, c)
	case c.State == StateCreated:
		err = q.follow(ctx, c)
	}
	if err != nil && !errors.Is(err, errLostLease) && !isCallback(err) { // a callback's was reported
		q.watch.warn(ctx, "pgstore: payout intent step", slog.String("orderId", c.Params.OrderID),
			slog.String("state", string(c.State)), slog.String("error", err.Error()))
	}
}

// change is one recorded change of a held intent.
type change struct {
	to               IntentState
	verdict, errText string
	tries            int
	after            time.Duration // next look, from now
	payoutID         string
	payoutStatus     cryptopay.PayoutStatus
	hold             string  // sets Intent.Hold (never clears it)
	requestID        string  // the API's request id of the answer that led here
	fail             Failure // the read's, send's or callback's failure (none: the count is reset)
}

// record writes ch for a held intent (a final state through finish).
func (q *Queue) record(ctx context.Context, c claimed, ch change) error {
	if !canMove(c.State, ch.to, byWorker) {
		return fmt.Errorf("pgstore: no worker's transition %s -> %s (not recorded)", c.State, ch.to)
	}
	if ch.to.IsFinal() {
		return q.finish(ctx, c, ch)
	}
	if err := q.set(ctx, c, ch, false); err != nil {
		return err
	}
	if ch.to != c.State {
		q.observe(Transition{OrderID: c.Params.OrderID, From: c.State, To: ch.to, Attempts: c.Attempts,
			PayoutID: cmpOr(ch.payoutID, c.PayoutID), Verdict: ch.verdict, Err: ch.errText})
	}
	return nil
}

// set writes ch for a held intent, in the next batch of records (see
// recorder: one statement for the changes that waited); due leaves the final
// callback due (a final state recorded without OnFinal). An intent held
// for approval, or final, leaves the workers' hands (the claim skips its
// state) until an operator moves it or its callback runs.
func (q *Queue) set(ctx context.Context, c claimed, ch change, due bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	r := &setRow{orderID: c.Params.OrderID, token: c.token, to: string(ch.to), verdict: ch.verdict, errText: ch.errText,
		tries: ch.tries, afterMicros: ch.after.Microseconds(), payoutID: noNUL(ch.payoutID), payoutStatus: noNUL(string(ch.payoutStatus)),
		release: ch.to == StateNeedsApproval || ch.to.IsFinal(), hold: ch.hold, due: due, from: string(c.State),
		logged: ch.to != c.State || ch.verdict != "" || ch.errText != "", requestID: noNUL(ch.requestID),
		failClass: string(ch.fail.Class), failText: ch.fail.Text, done: make(chan error, 1)}
	err := q.rec.record(ctx, r, q.sendSets)
	if errors.Is(err, errLostLease) {
		return err
	}
	if err != nil {
		return fmt.Errorf("recording %s: %w", ch.to, err)
	}
	q.enqueued(c)
	return nil
}

// enqueued reports the intent's enqueue (From "") once this process has
// committed the first change to it: Enqueue runs in the caller's
// transaction, which may still roll back when Enqueue returns, so the
// enqueue is reported by the first process that changes the committed row
// (a worker's first record or attempt, an operator's move, the callback of
// an intent blocked at enqueue). The claim does not count as a change; a
// row no change has touched since its insert has UpdatedAt equal to
// CreatedAt (both the insert's now()). Call it before c.State changes, and
// only after a committed write.
func (q *Queue) enqueued(c claimed) {
	if c.Intent == nil || !c.UpdatedAt.Equal(c.CreatedAt) {
		return
	}
	c.UpdatedAt = time.Now() // changed: reported once (the Intent is shared by c's copies)
	q.observe(Transition{OrderID: c.Params.OrderID, To: c.State, Err: c.LastError})
}

// finish records a final state. With OnFinal, OnFinal runs in the
// transaction that records it (see inFinalTx); if it fails the change
// rolls back and the intent is looked at again after a backoff. Without
// OnFinal the state is recorded with its callback due, for a process that
// has one.
func (q *Queue) finish(ctx context.Context, c claimed, ch change) error {
	if q.cfg.OnFinal == nil {
		if err := q.set(ctx, c, ch, true); err != nil {
			return err
		}
	} else {
		in := c.after(ch)
		err := q.inFinalTx(ctx, in, q.sql.final, c.Params.OrderID, c.token, string(ch.to), ch.verdict, ch.errText,
			noNUL(ch.payoutID), noNUL(string(ch.payoutStatus)), string(c.State), noNUL(ch.requestID))
		if err != nil {
			if errors.Is(err, errLostLease) {
				return err
			}
			// Keep the state; look again later, with the error on record.
			back := change{to: c.State, errText: errText(err), tries: c.tries + 1, after: q.backoff(c.tries),
				fail: q.watch.report(ctx, "recording a payout intent's final state", c.Params.OrderID, err)}
			if rerr := q.record(ctx, c, back); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err
		}
		q.enqueued(c)
	}
	q.observe(Transition{OrderID: c.Params.OrderID, From: c.State, To: ch.to, Attempts: c.Attempts,
		PayoutID: cmpOr(ch.payoutID, c.PayoutID), Verdict: ch.verdict, Err: ch.errText})
	return nil
}

// callback runs OnFinal for a final intent whose callback is due (its
// state was recorded by a process without OnFinal), in the transaction
// that clears CallbackDue: exactly once. If OnFinal fails, the callback
// stays due and is tried again after a backoff.
func (q *Queue) callback(ctx context.Context, c claimed) error {
	if q.cfg.OnFinal == nil || !c.CallbackDue {
		return nil // not claimed by such a worker; nothing to do
	}
	err := q.inFinalTx(ctx, c.Intent, q.sql.callbackDone, c.Params.OrderID, c.token)
	if err == nil {
		q.enqueued(c) // blocked at enqueue: its first change
	}
	if err != nil && !errors.Is(err, errLostLease) {
		back := change{to: c.State, errText: errText(err), tries: c.tries + 1, after: q.backoff(c.tries),
			fail: q.watch.report(ctx, "running a payout intent's due OnFinal", c.Params.OrderID, err)}
		if rerr := q.set(ctx, c, back, false); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// inFinalTx runs OnFinal(in) in a transaction and then, in one round trip,
// the statement stmt (the lease holder's record, which fails with a
// division by zero when the lease is no longer held) and COMMIT: two round
// trips in all (BEGIN, then the record with COMMIT), every value a
// parameter. The record comes after OnFinal, and takes the row lock: a
// second process finishing the same intent at the same time blocks on it,
// then finds the lease gone, and its OnFinal's writes roll back with it.
func (q *Queue) inFinalTx(ctx context.Context, in *Intent, stmt string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.Lease/2)
	defer cancel()
	conn, err := q.cfg.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release() // a connection left in a transaction is closed
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: q.sql.begin})
	if err != nil {
		return err
	}
	if err := guard("OnFinal", func() error { return q.cfg.OnFinal(ctx, tx, in) }); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	b := &pgx.Batch{}
	b.Queue(stmt, args...)
	b.Queue("COMMIT")
	br := tx.SendBatch(ctx, b)
	var one int
	err = br.QueryRow().Scan(&one)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	err = errors.Join(err, br.Close())
	if err == nil && tag.String() != "COMMIT" {
		err = errors.New("the final transaction rolled back at COMMIT")
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "22012" /* division_by_zero */ {
			return errLostLease // the UPDATE matched no row
		}
		return err
	}
	// Committed by the batch: tx is done with (Commit would send a second
	// COMMIT), and the connection, idle again, goes back to the pool.
	return nil
}

// after returns the intent as ch leaves it (what OnFinal receives).
func (c claimed) after(ch change) *Intent {
	in := *c.Intent
	in.State, in.LastError, in.UpdatedAt = ch.to, ch.errText, time.Now()
	in.Verdict = cmpOr(ch.verdict, in.Verdict)
	in.PayoutID = cmpOr(ch.payoutID, in.PayoutID)
	in.PayoutStatus = cmpOr(ch.payoutStatus, in.PayoutStatus)
	return &in
}

// backoff is the wait after the tries-th failed look: BackoffMin doubling
// up to BackoffMax.
func (q *Queue) backoff(tries int) time.Duration {
	return doubling(q.cfg.BackoffMin, q.cfg.BackoffMax, tries)
}

// takeOver reconciles an intent found in sending that this worker did not
// just commit (its worker ended, or lost its lease, before recording the
// answer): it records sending -> reconciling first, keeping the lease, so
// that a new attempt after a "not created" verdict is a change of state
// like any other (reconciling -> sending), bounded by MaxAttempts in send.
func (q *Queue) takeOver(ctx context.Context, c claimed) error {
	why := "the attempt's worker ended before recording its answer"
	if err := q.record(ctx, c, change{to: StateReconciling, errText: why, tries: c.tries, after: q.cfg.Lease}); err != nil {
		return err
	}
	c.State, c.LastError = StateReconciling, why
	return q.reconcile(ctx, c)
}

// send checks the attempt bound and the guardrails, commits an attempt
// and sends the create request once.
func (q *Queue) send(ctx context.Context, c claimed) error {
	if !canMove(c.State, StateSending, byWorker) {
		return fmt.Errorf("pgstore: no worker's transition %s -> %s (nothing sent)", c.State, StateSending)
	}
	// The bound holds on every path that sends: only a queued intent
	// (new, or moved back by an operator's Retry, which allows one more)
	// may go past MaxAttempts.
	if c.State != StateQueued && c.Attempts >= q.cfg.MaxAttempts {
		why := fmt.Sprintf("%d create requests sent and the payout list still shows none with this orderId; "+
			"not sent again without an operator's Retry (QueueConfig.MaxAttempts)", c.Attempts)
		return q.record(ctx, c, change{to: StateParked, verdict: c.Verdict, errText: why, hold: HoldMaxAttempts,
			tries: c.tries + 1, after: q.backoff(c.tries)})
	}
	// The same check as Enqueue's and CheckGuardrails': approval holds
	// whatever process enqueued the intent (this worker's threshold is
	// checked against the approval on record), and a cap lowered since
	// Enqueue blocks it.
	if g := q.cfg.Guardrails.verdict(ctx, c.Params, !c.ApprovedAt.IsZero()); g != nil {
		if g.Rule == "approval" {
			return q.record(ctx, c, change{to: StateNeedsApproval, errText: errText(g)})
		}
		return q.record(ctx, c, change{to: StateBlocked, errText: errText(g)})
	}
	// Never start a request that could outlive the lease: the worker that
	// takes over would reconcile while it is still in flight.
	if time.Until(c.deadline) < q.cfg.SendTimeout {
		return q.record(ctx, c, change{to: c.State, tries: c.tries})
	}
	attemptedAt := time.Now()
	held, err := q.commitAttempt(ctx, c, attemptedAt)
	if err != nil || held != nil {
		if held != nil {
			return q.record(ctx, c, change{to: StateQueued, errText: errText(held), tries: c.tries + 1, after: q.cfg.BackoffMin})
		}
		return err // not committed (or not known to be): nothing is sent
	}
	q.enqueued(c)
	q.observe(Transition{OrderID: c.Params.OrderID, From: c.State, To: StateSending, Attempts: c.Attempts + 1,
		PayoutID: c.PayoutID, Verdict: c.Verdict})
	c.State, c.AttemptedAt, c.Attempts = StateSending, attemptedAt, c.Attempts+1
	return q.post(ctx, c)
}

// post sends the create request of a committed attempt, once, and records
// what its answer shows.
func (q *Queue) post(ctx context.Context, c claimed) error {
	q.at("attempt-committed")
	sctx, cancel := context.WithTimeout(ctx, q.cfg.SendTimeout)
	pay, reqID, err := q.api.create(sctx, c.Params)
	cancel()
	q.watch.answered(err)
	q.at("answer-read")
	var ou *cryptopay.OutcomeUnknownError
	switch {
	case err == nil:
		return q.createdBy(ctx, c, pay.ID, pay.Status, "", reqID)
	case keyRefused(err):
		// Authentication failed before the API processed anything: nothing
		// was created, and no answer about the payout was given. Queued
		// again with the failure on record, backing off while the key gate
		// probes the key; sent once the key works.
		return q.record(ctx, c, change{to: StateQueued, errText: errText(err), tries: c.tries + 1, after: q.backoff(c.tries),
			requestID: reqID, fail: q.watch.report(ctx, "sending a payout", c.Params.OrderID, err)})
	case definiteRefusal(err):
		return q.record(ctx, c, change{to: StateRefused, errText: errText(err), requestID: reqID,
			fail: q.watch.report(ctx, "sending a payout", c.Params.OrderID, err)})
	case errors.As(err, &ou) && ou.ServerActed():
		// A 2xx that could not be matched to the request: the server
		// acted. Never resent on a list verdict; a person looks, with the
		// ids the answer named on record. Reconciled meanwhile, so a
		// payout the list shows by this orderId is still followed.
		why := fmt.Sprintf("the create request was answered %d (the server acted) naming payoutId %q and orderId %q, "+
			"which could not be matched to this request; not sent again without an operator's Retry: %v",
			ou.StatusCode, ou.AnswerID, ou.AnswerOrderID, err)
		return q.record(ctx, c, change{to: StateParked, errText: scrubText(why), hold: HoldServerActed, after: q.settle(), requestID: reqID})
	default:
		// No answer, a 5xx, a timeout ...: the payout may exist. Reconcile
		// once the list has had time to show it.
		return q.record(ctx, c, change{to: StateReconciling, errText: errText(err), after: q.settle(), requestID: reqID,
			fail: q.watch.report(ctx, "sending a payout", c.Params.OrderID, err)})
	}
}

// commitBatch commits, in one statement, the attempts of the freshly
// claimed queued intents that no guardrail needs to look at one by one
// (those of a currency without a velocity cap, passing the other checks;
// a blocked one, or one held for approval, is recorded by its own handler). It marks them committed;
// the others go through send. After an error this worker cannot know
// which attempts committed, so it sends none of them: each goes through
// send, whose own commit finds an intent no longer queued if the batch did
// commit it, and sends nothing; that intent is taken over (reconciled)
// when its lease ends, like any intent found in sending.
func (q *Queue) commitBatch(ctx context.Context, batch []claimed) {
	var ids []string
	idx := make(map[string]int)
	for i := range batch {
		c := &batch[i]
		if c.State != StateQueued || time.Until(c.deadline) < q.cfg.SendTimeout {
			continue
		}
		g := &q.cfg.Guardrails
		if _, capped := capOf(g.Velocity, c.Params.Currency); capped || g.verdict(ctx, c.Params, !c.ApprovedAt.IsZero()) != nil {
			continue
		}
		idx[c.Params.OrderID] = i
		ids = append(ids, c.Params.OrderID)
	}
	if len(ids) == 0 {
		return
	}
	at := time.Now()
	rows, err := q.cfg.Pool.Query(ctx, q.sql.attemptMany, ids, batch[0].token, at)
	if err != nil {
		return
	}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		if i, ok := idx[id]; ok {
			batch[i].committed = true
		}
		return nil
	})
	if err != nil {
		// Not known which committed: none is sent by this worker; each
		// one's own commit in send finds it no longer queued if it did.
		for i := range batch {
			batch[i].committed = false
		}
		return
	}
	for i := range batch {
		if c := &batch[i]; c.committed {
			q.enqueued(*c)
			c.State, c.AttemptedAt, c.Attempts = StateSending, at, c.Attempts+1
			q.observe(Transition{OrderID: c.Params.OrderID, From: StateQueued, To: StateSending, Attempts: c.Attempts})
		}
	}
}

// commitAttempt commits the attempt (state sending, attempt time) before
// the request is sent. With a velocity cap for the currency it first
// checks the cap under the currency's lock, in the same transaction; a
// *GuardrailError then means the cap holds the intent back.
func (q *Queue) commitAttempt(ctx context.Context, c claimed, at time.Time) (*GuardrailError, error) {
	args := []any{c.Params.OrderID, c.token, at, string(c.State), c.Verdict}
	limit, capped := capOf(q.cfg.Guardrails.Velocity, c.Params.Currency)
	if !capped {
		tag, err := q.cfg.Pool.Exec(ctx, q.sql.attempt, args...)
		if err == nil && tag.RowsAffected() == 0 {
			err = errLostLease
		}
		return nil, err
	}
	var held *GuardrailError
	err := pgx.BeginFunc(ctx, q.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if held, err = q.velocityCheck(ctx, tx, c.Params, limit); err != nil || held != nil {
			return err
		}
		tag, err := tx.Exec(ctx, q.sql.attempt, args...)
		if err == nil && tag.RowsAffected() == 0 {
			err = errLostLease
		}
		return err
	})
	return held, err
}

// settle is how long after an attempt its reconciliation should start.
func (q *Queue) settle() time.Duration {
	return cmpOr(q.cfg.ReconcileSettleTime, cryptopay.DefaultReconcileSettleTime)
}

// definiteRefusal reports whether a create request's error means the
// payout was not created and never will be from this attempt: the SDK
// refused the params before sending, or the API answered a 4xx other than
// 408 (the request may have been processed) and 429 (a rate limit, not a
// refusal of the payout; it is reconciled and sent again); a 401 or 403
// (keyRefused) is checked first. Everything else
// (an unknown outcome, a context that ended, a transport error) is
// reconciled before anything is sent again.
func definiteRefusal(err error) bool {
	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
		return false
	}
	if errors.Is(err, cryptopay.ErrInvalidParams) {
		return true
	}
	var apiErr *cryptopay.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	s := apiErr.StatusCode
	return s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
}

// keyRefused reports whether a create request was answered 401 or 403:
// the API refused the key (wrong, rotated, revoked, or without the right),
// which it checks before it processes the request, so nothing was created.
func keyRefused(err error) bool {
	var apiErr *cryptopay.APIError
	return !errors.Is(err, cryptopay.ErrOutcomeUnknown) && errors.As(err, &apiErr) && classOfStatus(apiErr.StatusCode).Permanent()
}

// created records a payout that exists, finishing at once if its status is
// already final.
func (q *Queue) created(ctx context.Context, c claimed, id string, st cryptopay.PayoutStatus, verdict string) error {
	return q.createdBy(ctx, c, id, st, verdict, "")
}

// createdBy is created with the request id of the answer that showed it.
func (q *Queue) createdBy(ctx context.Context, c claimed, id string, st cryptopay.PayoutStatus, verdict, reqID string) error {
	if to, final := finalState(st); final {
		return q.record(ctx, c, change{to: to, verdict: verdict, payoutID: id, payoutStatus: st, requestID: reqID})
	}
	return q.record(ctx, c, change{to: StateCreated, verdict: verdict, payoutID: id, payoutStatus: st, after: q.cfg.FollowEvery, requestID: reqID})
}

// finalState maps a payout's terminal status to the intent's final state.
func finalState(st cryptopay.PayoutStatus) (IntentState, bool) {
	switch {
	case st.IsSuccess():
		return StatePaid, true
	case st.IsTerminal():
		return StateFailed, true
	}
	return "", false
}

// reconcile decides an attempt whose outcome is unknown from the payout
// list: exists (follow it), not created (send again), still unknown (park
// it, and look again after a backoff).
func (q *Queue) reconcile(ctx context.Context, c claimed) error {
	res, err := q.api.lookup(ctx, c.Params.OrderID, c.AttemptedAt)
	q.watch.answered(err)
	switch {
	case err == nil && res.Verdict == cryptopay.PayoutExists:
		return q.created(ctx, c, res.Payout.ID, res.Payout.Status, res.Verdict.String())
	case err == nil && res.Verdict == cryptopay.PayoutNotCreated && c.Hold != "":
		// Held: "not created" proves nothing here. The evidence on record
		// (LastError) is kept for the person who decides.
		return q.record(ctx, c, change{to: StateParked, verdict: res.Verdict.String(), errText: c.LastError,
			tries: c.tries + 1, after: q.backoff(c.tries)})
	case err == nil && res.Verdict == cryptopay.PayoutNotCreated:
		c.Verdict = res.Verdict.String() // send parks it at MaxAttempts
		return q.send(ctx, c)
	}
	var fail Failure
	if err == nil {
		err = errors.New(res.Reason)
	} else {
		fail = q.watch.report(ctx, "reconciling a payout intent", c.Params.OrderID, err)
	}
	why := errText(err)
	if c.Hold != "" {
		why = c.LastError
	}
	return q.record(ctx, c, change{to: StateParked, verdict: cryptopay.PayoutStillUnknown.String(), errText: why,
		tries: c.tries + 1, after: q.backoff(c.tries), fail: fail})
}

// follow reads a created payout's status: by id when known, else from the
// list by orderId; a final status finishes the intent.
func (q *Queue) follow(ctx context.Context, c claimed) error {
	var st cryptopay.PayoutStatus
	if c.PayoutID != "" {
		p, err := q.api.get(ctx, c.PayoutID)
		q.watch.answered(err)
		if err != nil {
			return q.record(ctx, c, change{to: StateCreated, errText: errText(err), tries: c.tries + 1, after: q.backoff(c.tries),
				fail: q.watch.report(ctx, "following a payout", c.Params.OrderID, err)})
		}
		st = p.Status
	} else {
		res, err := q.api.lookup(ctx, c.Params.OrderID, c.AttemptedAt)
		q.watch.answered(err)
		if err == nil && res.Verdict != cryptopay.PayoutExists {
			err = fmt.Errorf("the payout list no longer shows it: %s", res.Reason)
		}
		if err != nil {
			return q.record(ctx, c, change{to: StateCreated, errText: errText(err), tries: c.tries + 1, after: q.backoff(c.tries),
				fail: q.watch.report(ctx, "following a payout", c.Params.OrderID, err)})
		}
		st = res.Payout.Status
	}
	q.at("follow-read")
	if to, final := finalState(st); final {
		return q.record(ctx, c, change{to: to, payoutStatus: st})
	}
	return q.record(ctx, c, change{to: StateCreated, payoutStatus: st, after: q.cfg.FollowEvery})
}

// at marks a named point of the worker for tests.
func (q *Queue) at(point string) {
	if q.hook != nil {
		q.hook(point)
	}
}
