package pgstore

import "fmt"

// queueSQL holds a Queue's statements, built once for its table. None is
// built from a value: every value travels as a parameter.
type queueSQL struct {
	queueReadSQL
	queueMoveSQL
	queueClaimSQL
	queueRecordSQL
	queueFinalSQL
}

// queueReadSQL holds the enqueue and the reads.
type queueReadSQL struct {
	insert, history, get, getMany, list, counts, health string
}

// queueMoveSQL holds the operator's moves and the webhook's wake-up.
type queueMoveSQL struct {
	operate, approve, lockApprovals, resolve, payoutHolder, wakeOne, learnID, lockListed, park, reword, releasedFor string
}

// queueClaimSQL holds the worker's claim, its attempts and the velocity
// guardrail's reads.
type queueClaimSQL struct {
	claim, attempt, attemptMany, velocityLock, velocitySum string
}

// queueRecordSQL holds the workers' batched record (see recorder).
type queueRecordSQL struct {
	set string
}

// queueFinalSQL holds the final transaction: begin opens it (value-free:
// it is sent as a simple query); final and callbackDone close it, in one
// batch with COMMIT (see Queue.inFinalTx).
type queueFinalSQL struct {
	begin, final, callbackDone string
}

// durable is syncCommit as a FROM item of an UPDATE: the statement changes
// no row before it has run (a subquery with a volatile target list is
// never pulled up or skipped).
const durable = `(SELECT ` + syncCommit + `) AS durable`

// Every change appends a row to the history table (h) in the statement
// that makes it: the same transaction, no extra round trip.
const histCols = `(order_id, actor, from_state, to_state, attempts, verdict, error, note, payout_id, request_id)`

// opHistCols are histCols and the actor's id: the enqueue's and an
// operator's rows name who made them.
const opHistCols = `(order_id, actor, from_state, to_state, attempts, verdict, error, note, payout_id, request_id, actor_id)`

// intentCols are the columns every read returns, in scanIntent's order.
const intentCols = `order_id, wallet_address, network_fee_by_user, amount::text, currency, network, customer_id, customer_ip,
additional_data, webhook_url, state, attempts, attempted_at, payout_id, payout_status, verdict, last_error, note,
next_at, created_at, updated_at, approved_at, hold, callback_due, enqueued_by, approved_by, approvals_needed, approved_principals, ` + failCols

// buildQueueSQL builds a Queue's statements for its table t and history
// table h, by concern.
func buildQueueSQL(t, h string, idleTimeoutMillis int64) queueSQL {
	return queueSQL{
		queueReadSQL:   buildQueueReadSQL(t, h),
		queueMoveSQL:   buildQueueMoveSQL(t, h),
		queueClaimSQL:  buildQueueClaimSQL(t, h),
		queueRecordSQL: buildQueueRecordSQL(t, h),
		queueFinalSQL:  buildQueueFinalSQL(t, h, idleTimeoutMillis),
	}
}

// buildQueueReadSQL builds the enqueue and the reads.
func buildQueueReadSQL(t, h string) queueReadSQL {
	return queueReadSQL{
		// The enqueue of a batch, in one statement: a row per intent (in
		// the batch's order; a repeated orderId, or one queued already, is
		// left alone) and its history row, naming the actor.
		insert: fmt.Sprintf(`WITH v AS (SELECT * FROM unnest(@order_id::text[], @wallet_address::text[], @fee_by_user::bool[],
    @amount::text[], @currency::text[], @network::text[], @customer_id::text[], @customer_ip::text[], @additional_data::text[],
    @webhook_url::text[], @state::text[], @why::text[], @due::bool[]) WITH ORDINALITY AS v(v_order_id, v_wallet_address,
    v_fee_by_user, v_amount, v_currency, v_network, v_customer_id, v_customer_ip, v_additional_data, v_webhook_url, v_state, v_why, v_due, n)),
i AS (INSERT INTO %s (order_id, wallet_address, network_fee_by_user, amount, currency, network,
customer_id, customer_ip, additional_data, webhook_url, state, last_error, callback_due, enqueued_by, approvals_needed)
SELECT v_order_id, v_wallet_address, v_fee_by_user, v_amount::numeric, v_currency, v_network, v_customer_id, v_customer_ip,
    v_additional_data, v_webhook_url, v_state, v_why, v_due, @actor::text, @approvals::int FROM v ORDER BY n
ON CONFLICT (order_id) DO NOTHING RETURNING order_id, state, last_error, enqueued_by),
h AS (INSERT INTO %s %s SELECT order_id, 'enqueue', '', state, 0, '', last_error, '', '', '', enqueued_by FROM i)
SELECT order_id FROM i`, t, h, opHistCols),
		history: fmt.Sprintf(`SELECT at, actor, from_state, to_state, attempts, verdict, error, note, payout_id, request_id, actor_id
FROM %s WHERE order_id = $1 ORDER BY id`, h),
		get:     fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = $1`, intentCols, t),
		getMany: fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = ANY($1)`, intentCols, t),
		// The list: keyset pages in orderId order (the primary key, or the
		// state index for a state filter); the other filters are
		// evaluated on the rows the index gives.
		list: fmt.Sprintf(`SELECT %s FROM %s WHERE (@all OR state = ANY(@states)) AND order_id > @after
    AND (NOT @held OR hold <> '') AND (@currency = '' OR currency = @currency) AND (@network = '' OR network = @network)
    AND (@since::timestamptz IS NULL OR created_at >= @since) AND (@until::timestamptz IS NULL OR created_at < @until)
    AND (@search = '' OR order_id = @search OR payout_id = @search OR wallet_address = @search)
ORDER BY order_id LIMIT @limit`, intentCols, t),
		counts: fmt.Sprintf(`SELECT state, count(*)::int FROM %s GROUP BY state`, t),
		health: healthSQL(t, claimableSQL(), "state IN ('parked', 'needs_approval')"),
	}
}

// buildQueueMoveSQL builds the operator's moves and the webhook's wake-up.
func buildQueueMoveSQL(t, h string) queueMoveSQL {
	s := queueMoveSQL{
		// An operator's move (Reject, Retry); $7 says whether it moves
		// only an intent the books check parked (HoldUnsentListed: release,
		// reject-listed) or only one it did not (every other move); $5 leaves the final callback
		// due (a final state recorded by a process without OnFinal); $6 is
		// the actor. A move clears the hold (Retry is the operator's answer
		// to it). fresh: the row had not changed since its enqueue (read in
		// the statement's snapshot, before this change).
		operate: fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET state = $3, note = $4, next_at = now(), lease_token = NULL, tries = 0, updated_at = now(),
    hold = '', callback_due = $5
FROM `+durable+`
WHERE order_id = $1 AND state = $2 AND (hold = '`+HoldUnsentListed+`') = $7 RETURNING %[2]s,
    (SELECT o.updated_at = o.created_at FROM %[1]s o WHERE o.order_id = $1) AS fresh),
h AS (INSERT INTO %[3]s %[4]s SELECT order_id, 'operator', $2, $3, attempts, '', '', $4, payout_id, '', $6 FROM u)
SELECT * FROM u`, t, intentCols, h, opHistCols),
		// An approval, four eyes: counted once per actor and once per
		// principal ($5), never the enqueuer's (checked, in canonical form,
		// on the row lockApprovals locked in the same transaction); the
		// intent is queued (approved_at set) by the approval
		// that reaches the larger of its recorded number and the approving
		// Queue's ($4). Every SET expression reads the row before the
		// change; the row lock serializes two approvers, and the second
		// re-reads the row the first left.
		approve: fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET approved_by = approved_by || $2::text,
    approvals_needed = GREATEST(approvals_needed, $4),
    state = CASE WHEN cardinality(approved_by) + 1 >= GREATEST(approvals_needed, $4) THEN 'queued' ELSE state END,
    approved_at = CASE WHEN cardinality(approved_by) + 1 >= GREATEST(approvals_needed, $4) THEN now() ELSE approved_at END,
    approved_principals = approved_principals || $5::text,
    note = $3, next_at = now(), lease_token = NULL, tries = 0, hold = '', updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND state = 'needs_approval' AND NOT ($2 = ANY(approved_by)) RETURNING %[2]s,
    (SELECT o.updated_at = o.created_at FROM %[1]s o WHERE o.order_id = $1) AS fresh),
h AS (INSERT INTO %[3]s %[4]s SELECT order_id, 'operator', 'needs_approval', state, attempts, '', '',
    'approval ' || cardinality(approved_by) || ' of ' || approvals_needed || CASE WHEN $3 = '' THEN '' ELSE ': ' || $3 END,
    payout_id, '', $2 FROM u)
SELECT * FROM u`, t, intentCols, h, opHistCols),
		// The rows an approval checks, locked until its transaction ends,
		// in orderId order.
		lockApprovals: fmt.Sprintf(`SELECT order_id, state, hold, enqueued_by, approved_by, approved_principals, session_user::text FROM %s WHERE order_id = ANY($1)
ORDER BY order_id FOR UPDATE`, t),
		// An operator's Resolve: a parked intent bound to the payout the
		// API confirmed, unless another intent holds that payout id; then
		// followed by the workers like any created payout.
		resolve: fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET state = 'created', payout_id = $2, payout_status = $3, note = $4,
    last_error = '', hold = '', next_at = now(), lease_token = NULL, tries = 0, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND state = 'parked'
    AND NOT EXISTS (SELECT 1 FROM %[1]s o WHERE o.payout_id = $2 AND o.order_id <> $1) RETURNING %[4]s,
    (SELECT o.updated_at = o.created_at FROM %[1]s o WHERE o.order_id = $1) AS fresh),
h AS (INSERT INTO %[2]s %[3]s SELECT order_id, 'operator', 'parked', 'created', attempts, '', '', $4, payout_id, '', $5 FROM u)
SELECT * FROM u`, t, h, opHistCols, intentCols),
	}
	addFollowSQL(&s, t, h)
	addListedSQL(&s, t, h)
	return s
}

// addListedSQL adds the statements of an intent the books check found
// listed at the provider though the queue never sent it.
func addListedSQL(s *queueMoveSQL, t, h string) {
	// The intent's state, locked until the transaction ends (the park
	// and the release decide under it), with the state the books check
	// last parked it from.
	s.lockListed = fmt.Sprintf(`SELECT state, hold, last_error, COALESCE((SELECT from_state FROM %s
    WHERE order_id = $1 AND actor = 'books' AND to_state = 'parked' AND from_state <> 'parked' ORDER BY id DESC LIMIT 1), '')
FROM %s WHERE order_id = $1 FOR UPDATE`, h, t)
	// Whether an operator released the intent from the books check's
	// last park, and that park's words began with $2 (the listed payout
	// as it was created, without its status): the check then
	// leaves it (a person looked at that payout and said it is another
	// one). Out of a books park only release, reject-listed and resolve
	// lead, so the first row out of parked after it is the release.
	s.releasedFor = fmt.Sprintf(`WITH p AS (SELECT id, error FROM %[1]s WHERE order_id = $1 AND actor = 'books' AND to_state = 'parked' ORDER BY id DESC LIMIT 1),
r AS (SELECT min(id) AS id FROM %[1]s WHERE order_id = $1 AND from_state = 'parked' AND to_state IN ('queued', 'needs_approval')
    AND id > (SELECT id FROM p))
SELECT EXISTS (SELECT 1 FROM p, r WHERE r.id IS NOT NULL AND starts_with(p.error, $2))`, h)
	// A parked intent whose listed payouts changed since its park: its
	// last error says what is listed now ($2), so that a release
	// confirmed against the words shown before changes nothing.
	s.reword = fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET last_error = $2, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND state = 'parked' AND hold = '`+HoldUnsentListed+`' RETURNING order_id, attempts, payout_id)
INSERT INTO %[2]s %[3]s SELECT order_id, 'books', 'parked', 'parked', attempts, '', $2, '', payout_id, '', '' FROM u`, t, h, opHistCols)
	// The park: $2 the state lockListed read (still the row's: it is
	// locked), $3 the listed payout in words. It clears the lease, so a
	// worker that claimed the intent records nothing over it and commits
	// no attempt.
	s.park = fmt.Sprintf(`WITH u AS (UPDATE %[1]s SET state = 'parked', hold = '`+HoldUnsentListed+`', last_error = $3,
    next_at = now(), lease_token = NULL, tries = 0, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND state = $2 RETURNING %[2]s,
    (SELECT o.updated_at = o.created_at FROM %[1]s o WHERE o.order_id = $1) AS fresh),
h AS (INSERT INTO %[3]s %[4]s SELECT order_id, 'books', $2, 'parked', attempts, '', $3, '', payout_id, '', '' FROM u)
SELECT * FROM u`, t, intentCols, h, opHistCols)
}

// addFollowSQL adds the statements that bind and wake a followed intent.
func addFollowSQL(s *queueMoveSQL, t, h string) {
	s.payoutHolder = fmt.Sprintf(`SELECT order_id FROM %s WHERE payout_id = $1 AND order_id <> $2 LIMIT 1`, t)
	// Wakes a followed intent, and says whether the intent (created,
	// or final from it) lacks its payout id: one found by the list.
	s.wakeOne = fmt.Sprintf(`WITH w AS (UPDATE %[1]s SET next_at = now() WHERE order_id = $1 AND state = 'created' AND next_at > now())
SELECT payout_id = '' FROM %[1]s WHERE order_id = $1 AND state IN ('created', 'paid', 'failed')`, t)
	// Records a payout id learned from a webhook, re-read through the
	// API, for an intent that lacks it.
	s.learnID = fmt.Sprintf(`WITH u AS (UPDATE %s SET payout_id = $2, updated_at = now()
WHERE order_id = $1 AND payout_id = '' AND state IN ('created', 'paid', 'failed') RETURNING order_id, state, attempts, payout_id)
INSERT INTO %s %s SELECT order_id, 'webhook', state, state, attempts, '', '', 'payout id learned from its webhook, confirmed by the API', payout_id, '' FROM u`,
		t, h, histCols)
}

// buildQueueClaimSQL builds the worker's claim, its attempts and the velocity guardrail's reads.
func buildQueueClaimSQL(t, h string) queueClaimSQL {
	return queueClaimSQL{
		// The claim: due intents in open states (the due index's
		// predicate, written out so the planner uses it), never one the
		// books check parked (HoldUnsentListed), and, for a
		// process with OnFinal ($4), final intents whose callback is due;
		// locked without waiting for rows another worker is claiming (SKIP
		// LOCKED), leased to this worker by its token until now() + lease.
		claim: fmt.Sprintf(`WITH work AS (
    SELECT order_id FROM %[1]s
    WHERE %[3]s AND next_at <= now()
    ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED),
calls AS (
    SELECT order_id FROM %[1]s
    WHERE $4 AND callback_due AND next_at <= now()
    ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED),
due AS (SELECT order_id AS due_id FROM work UNION ALL SELECT order_id FROM calls LIMIT $1)
UPDATE %[1]s SET next_at = now() + $2 * interval '1 microsecond', lease_token = $3
FROM due WHERE order_id = due.due_id
RETURNING %[2]s, tries`, t, intentCols, claimableSQL()),
		// The attempt: committed before the request is sent; only by the
		// lease holder, only from the state the holder saw.
		attempt: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = $5, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND lease_token = $2 AND state = $4 RETURNING order_id, attempts),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', $4, 'sending', attempts, $5, '', '', '', '' FROM u)
SELECT 1 FROM u`, t, h, histCols),
		attemptMany: fmt.Sprintf(`WITH u AS (UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = '', updated_at = now()
FROM `+durable+`
WHERE order_id = ANY($1) AND lease_token = $2 AND state = 'queued' RETURNING order_id, attempts),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', 'queued', 'sending', attempts, '', '', '', '', '' FROM u)
SELECT order_id FROM u`, t, h, histCols),
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

// buildQueueRecordSQL builds the workers' batched record.
func buildQueueRecordSQL(t, h string) queueRecordSQL {
	return queueRecordSQL{
		// Every other change by a worker, for a batch of held intents (see
		// recorder): one row each, by its index n, changed only by its
		// lease holder. release gives the lease up (an intent held for
		// approval, a final state), hold records a hold, due leaves the
		// final callback due (a final state recorded without OnFinal:
		// then the whole statement is committed durably).
		// A wake-up (PayoutChanged) that came while the holder was
		// following moved next_at before the lease's end: the intent stays
		// due, or the event would wait for the next FollowEvery. It is
		// compared with clock_timestamp(), not now(): now() is this
		// statement's start, and a wake-up that began after it but
		// committed before this statement reached the row carries a later
		// now() of its own (issue 29).
		// from_state is the state the holder saw; logged says whether the
		// change is worth a history row (a new state, a verdict, an error),
		// request_id is the request id of the answer that led to it.
		set: fmt.Sprintf(`WITH v AS (SELECT * FROM unnest(@order_id::text[], @token::bytea[], @to_state::text[], @verdict::text[],
    @error::text[], @tries::int[], @after::bigint[], @payout_id::text[], @payout_status::text[], @release::bool[],
    @hold::text[], @due::bool[], @from_state::text[], @logged::bool[], @request_id::text[], @fail_class::text[],
    @fail_text::text[]) WITH ORDINALITY AS v(v_order_id, v_token, v_to, v_verdict, v_error, v_tries, v_after, v_payout_id,
    v_payout_status, v_release, v_hold, v_due, v_from, v_logged, v_request_id, v_fail_class, v_fail_text, n)),
u AS (UPDATE %s AS t SET state = v_to,
    verdict = CASE WHEN v_verdict = '' THEN t.verdict ELSE v_verdict END,
    last_error = v_error, tries = v_tries,
    next_at = CASE WHEN v_to = 'created' AND t.next_at <= clock_timestamp() THEN now() ELSE now() + v_after * interval '1 microsecond' END,
    payout_id = CASE WHEN v_payout_id = '' THEN t.payout_id ELSE v_payout_id END,
    payout_status = CASE WHEN v_payout_status = '' THEN t.payout_status ELSE v_payout_status END,
    lease_token = CASE WHEN v_release THEN NULL ELSE t.lease_token END,
    hold = CASE WHEN v_hold = '' THEN t.hold ELSE v_hold END,
    callback_due = t.callback_due OR v_due, updated_at = now(),
    `+failSet("v_fail_class", "v_fail_text")+`
FROM v, (SELECT CASE WHEN bool_or(v_due) THEN `+syncCommit+` END FROM v) AS durable
WHERE t.order_id = v_order_id AND t.lease_token = v_token
RETURNING n, t.order_id, t.attempts, t.payout_id, v_from, v_to, v_verdict, v_error, v_logged, v_request_id),
h AS (INSERT INTO %s %s SELECT order_id, 'worker', v_from, v_to, attempts, v_verdict, v_error, '', payout_id, v_request_id FROM u WHERE v_logged)
SELECT n FROM u`, t, h, histCols),
	}
}

// buildQueueFinalSQL builds the final transaction's statements.
func buildQueueFinalSQL(t, h string, idleTimeoutMillis int64) queueFinalSQL {
	return queueFinalSQL{
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
	}
}
