package pgstore

import "fmt"

// queueSQL holds a Queue's statements, built once for its table. None is
// built from a value: every value travels as a parameter.
type queueSQL struct {
	insert, get, getMany, list, counts, operate, wakeOne, learnID, history string
	health                                                                 string
	resolve, payoutHolder                                                  string
	claim, attempt, attemptMany, set, velocityLock, velocitySum            string
	// begin opens the final transaction (value-free: it is sent as a
	// simple query); final and callbackDone close it, in one batch with
	// COMMIT (see Queue.inFinalTx).
	begin, final, callbackDone string
}

// syncCommit, evaluated in a statement, turns synchronous_commit on for
// the rest of the transaction it runs in, whatever the server, database,
// role or session says (remote_apply, which is stronger, is kept): a
// COMMIT acknowledged after it is on disk, and on a synchronous standby if
// there is one. set_config(..., true) is SET LOCAL, but needs neither a
// transaction block nor a round trip of its own. The attempt (committed
// before the request is sent) and every final state are committed with it:
// an attempt lost in a crash would be sent again. See docs/payout-queue.md,
// "Durable commits".
const syncCommit = `set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true)`

// durable is syncCommit as a FROM item of an UPDATE: the statement changes
// no row before it has run (a subquery with a volatile target list is
// never pulled up or skipped).
const durable = `(SELECT ` + syncCommit + `) AS durable`

// durableIf is durable when the boolean SQL expression cond holds.
func durableIf(cond string) string {
	return `(SELECT CASE WHEN ` + cond + ` THEN ` + syncCommit + ` END) AS durable`
}

// Every change appends a row to the history table (h) in the statement
// that makes it: the same transaction, no extra round trip.
const histCols = `(order_id, actor, from_state, to_state, attempts, verdict, error, note, payout_id, request_id)`

func buildQueueSQL(t, h string, idleTimeoutMillis int64) queueSQL {
	return queueSQL{
		insert: fmt.Sprintf(`WITH i AS (INSERT INTO %s (order_id, wallet_address, network_fee_by_user, amount, currency, network,
customer_id, customer_ip, additional_data, webhook_url, state, last_error, callback_due)
VALUES ($1, $2, $3, $4::numeric, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (order_id) DO NOTHING RETURNING order_id, state, last_error),
h AS (INSERT INTO %s %s SELECT order_id, 'enqueue', '', state, 0, '', last_error, '', '', '' FROM i)
SELECT true FROM i`, t, h, histCols),
		history: fmt.Sprintf(`SELECT at, actor, from_state, to_state, attempts, verdict, error, note, payout_id, request_id
FROM %s WHERE order_id = $1 ORDER BY id`, h),
		get:     fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = $1`, intentCols, t),
		getMany: fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = ANY($1)`, intentCols, t),
		list:    fmt.Sprintf(`SELECT %s FROM %s WHERE ($1 OR state = ANY($2)) AND order_id > $3 ORDER BY order_id LIMIT $4`, intentCols, t),
		counts:  fmt.Sprintf(`SELECT state, count(*)::int FROM %s GROUP BY state`, t),
		health:  healthSQL(t, "state IN ("+openStatesSQL()+")", "state IN ('parked', 'needs_approval')"),
		// An operator's move; $5 records an approval (Approve), which the
		// worker checks before sending; $6 leaves the final callback due
		// (a final state recorded by a process without OnFinal). A move
		// clears the hold (Retry is the operator's answer to it). fresh:
		// the row had not changed since its enqueue (read in the
		// statement's snapshot, before this change).
		operate: fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET state = $3, note = $4, next_at = now(), lease_token = NULL, tries = 0, updated_at = now(),
    approved_at = CASE WHEN $5 THEN now() ELSE approved_at END, hold = '', callback_due = $6
FROM `+durable+`
WHERE order_id = $1 AND state = $2 RETURNING %[2]s,
    (SELECT o.updated_at = o.created_at FROM %[1]s o WHERE o.order_id = $1) AS fresh),
h AS (INSERT INTO %[3]s %[4]s SELECT order_id, 'operator', $2, $3, attempts, '', '', $4, payout_id, '' FROM u)
SELECT * FROM u`, t, intentCols, h, histCols),
		// An operator's Resolve: a parked intent bound to the payout the
		// API confirmed, unless another intent holds that payout id; then
		// followed by the workers like any created payout.
		resolve: fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET state = 'created', payout_id = $2, payout_status = $3, note = $4,
    last_error = '', hold = '', next_at = now(), lease_token = NULL, tries = 0, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND state = 'parked'
    AND NOT EXISTS (SELECT 1 FROM %[1]s o WHERE o.payout_id = $2 AND o.order_id <> $1) RETURNING order_id, attempts, payout_id),
h AS (INSERT INTO %[2]s %[3]s SELECT order_id, 'operator', 'parked', 'created', attempts, '', '', $4, payout_id, '' FROM u)
SELECT attempts FROM u`, t, h, histCols),
		payoutHolder: fmt.Sprintf(`SELECT order_id FROM %s WHERE payout_id = $1 AND order_id <> $2 LIMIT 1`, t),
		// Wakes a followed intent, and says whether the intent (created,
		// or final from it) lacks its payout id: one found by the list.
		wakeOne: fmt.Sprintf(`WITH w AS (UPDATE %[1]s SET next_at = now() WHERE order_id = $1 AND state = 'created' AND next_at > now())
SELECT payout_id = '' FROM %[1]s WHERE order_id = $1 AND state IN ('created', 'paid', 'failed')`, t),
		// Records a payout id learned from a webhook, re-read through the
		// API, for an intent that lacks it.
		learnID: fmt.Sprintf(`WITH u AS (UPDATE %s SET payout_id = $2, updated_at = now()
WHERE order_id = $1 AND payout_id = '' AND state IN ('created', 'paid', 'failed') RETURNING order_id, state, attempts, payout_id)
INSERT INTO %s %s SELECT order_id, 'webhook', state, state, attempts, '', '', 'payout id learned from its webhook, confirmed by the API', payout_id, '' FROM u`,
			t, h, histCols),
		// The claim: due intents in open states (the due index's
		// predicate, written out so the planner uses it) and, for a
		// process with OnFinal ($4), final intents whose callback is due;
		// locked without waiting for rows another worker is claiming (SKIP
		// LOCKED), leased to this worker by its token until now() + lease.
		claim: fmt.Sprintf(`WITH work AS (
    SELECT order_id FROM %[1]s
    WHERE state IN (%[3]s) AND next_at <= now()
    ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED),
calls AS (
    SELECT order_id FROM %[1]s
    WHERE $4 AND callback_due AND next_at <= now()
    ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED),
due AS (SELECT order_id AS due_id FROM work UNION ALL SELECT order_id FROM calls LIMIT $1)
UPDATE %[1]s SET next_at = now() + $2 * interval '1 microsecond', lease_token = $3
FROM due WHERE order_id = due.due_id
RETURNING %[2]s, tries`, t, intentCols, openStatesSQL()),
		// The attempt: committed before the request is sent; only by the
		// lease holder, only from the state the holder saw.
		attempt: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = $5, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND lease_token = $2 AND state = $4 RETURNING order_id, attempts),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', $4, 'sending', attempts, $5, '', '', '', '' FROM u)
SELECT 1 FROM u`, t, h, histCols),
		// Every other change by a worker, only by the lease holder; $10
		// gives the lease up (an intent held for approval, a final state),
		// $11 records a hold, $12 leaves the final callback due (a final
		// state recorded without OnFinal: committed durably).
		// A wake-up (PayoutChanged) that came while the holder was
		// following moved next_at before the lease's end: the intent stays
		// due, or the event would wait for the next FollowEvery. It is
		// compared with clock_timestamp(), not now(): now() is this
		// statement's start, and a wake-up that began after it but
		// committed before this statement reached the row carries a later
		// now() of its own (issue 29).
		// $13 is the state the holder saw; $14 says whether the change is
		// worth a history row (a new state, a verdict, an error), $15 is
		// the request id of the answer that led to it.
		set: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = $3,
    verdict = CASE WHEN $4::text = '' THEN verdict ELSE $4::text END,
    last_error = $5, tries = $6,
    next_at = CASE WHEN $3::text = 'created' AND next_at <= clock_timestamp() THEN now() ELSE now() + $7 * interval '1 microsecond' END,
    payout_id = CASE WHEN $8::text = '' THEN payout_id ELSE $8::text END,
    payout_status = CASE WHEN $9::text = '' THEN payout_status ELSE $9::text END,
    lease_token = CASE WHEN $10 THEN NULL ELSE lease_token END,
    hold = CASE WHEN $11::text = '' THEN hold ELSE $11::text END,
    callback_due = callback_due OR $12, updated_at = now(),
    `+failSet("$16", "$17")+`
FROM `+durableIf("$12")+`
WHERE order_id = $1 AND lease_token = $2 RETURNING order_id, attempts, payout_id),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', $13, $3, attempts, $4, $5, '', payout_id, $15 FROM u WHERE $14)
SELECT attempts FROM u`, t, h, histCols),
		attemptMany: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = '', updated_at = now()
FROM `+durable+`
WHERE order_id = ANY($1) AND lease_token = $2 AND state = 'queued' RETURNING order_id, attempts),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', 'queued', 'sending', attempts, '', '', '', '', '' FROM u)
SELECT order_id FROM u`, t, h, histCols),
		begin: fmt.Sprintf(`BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE;
SET LOCAL idle_in_transaction_session_timeout = %d;
SELECT `+syncCommit, max(idleTimeoutMillis, 1)),
		// The final state, by the lease holder only, with its callback run
		// (OnFinal, earlier in the same transaction). A lease no longer held
		// fails it with a division by zero, so the COMMIT queued after it
		// never runs.
		final: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = $3,
    verdict = CASE WHEN $4::text = '' THEN verdict ELSE $4::text END,
    last_error = $5, tries = 0, next_at = now(),
    payout_id = CASE WHEN $6::text = '' THEN payout_id ELSE $6::text END,
    payout_status = CASE WHEN $7::text = '' THEN payout_status ELSE $7::text END,
    callback_due = false, lease_token = NULL, updated_at = now(), fail_count = 0
WHERE order_id = $1 AND lease_token = $2 RETURNING order_id, attempts, payout_id),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', $8, $3, attempts, $4, $5, 'OnFinal ran', payout_id, $9 FROM u)
SELECT 1 / count(*) FROM u`, t, h, histCols),
		// The callback of a final state recorded elsewhere, run: cleared by
		// the lease holder only, in the transaction that ran it.
		callbackDone: fmt.Sprintf(`WITH u AS (UPDATE %s SET callback_due = false, lease_token = NULL, tries = 0, updated_at = now(), fail_count = 0
WHERE order_id = $1 AND lease_token = $2 AND callback_due RETURNING order_id, state, attempts, payout_id),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', state, state, attempts, '', '', 'OnFinal ran (its callback was due)', payout_id, '' FROM u)
SELECT 1 / count(*) FROM u`, t, h, histCols),
		// The lock on the table's identity in the database (its oid, the
		// same however the table is spelled) and the currency key.
		velocityLock: `SELECT pg_advisory_xact_lock(hashtextextended('cryptopay_velocity:' || $1::regclass::oid::text || ':' || $2::text, 0))`,
		// What the currency has reserved within the window: every attempt
		// committed that may have created a payout (an intent attempted
		// three times counts three times), except the last one of an
		// intent the API refused (nothing was created by it).
		velocitySum: fmt.Sprintf(`SELECT COALESCE(sum(amount * CASE WHEN state = 'refused' THEN attempts - 1 ELSE attempts END), 0)::text FROM %s
WHERE currency = $1 AND reserved_at > now() - $2 * interval '1 microsecond'`, t),
	}
}
