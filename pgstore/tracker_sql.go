package pgstore

import "fmt"

// trackerSQL holds a Tracker's statements, built once for its tables.
type trackerSQL struct {
	trackerTrackSQL
	trackerReadSQL
	trackerWorkerSQL
}

// trackerTrackSQL holds Track's and the webhook's writes.
type trackerTrackSQL struct {
	insert, insertOrder, untrack, getLock, complete, wake, otherPayment, unmatch string
}

// trackerReadSQL holds the reads and the operator's move.
type trackerReadSQL struct {
	get, clear, moves, list, history, counts, health string
}

// trackerWorkerSQL holds the worker's claim and records.
type trackerWorkerSQL struct {
	claim, set, record string
}

// trackedCols are the columns every read returns, in scanTracked's order.
const trackedCols = `order_id, payment_id, state, status, paid_amount::text, pay_amount::text, currency, network,
expired_at, needs_action, anomaly, note, changes, next_at, tracked_at, updated_at, merchant_amount::text, ` + failCols

// buildTrackerSQL builds a Tracker's statements for its table t, history
// table h and moves table m, by concern.
func buildTrackerSQL(t, h, m string) trackerSQL {
	return trackerSQL{
		trackerTrackSQL:  buildTrackerTrackSQL(t),
		trackerReadSQL:   buildTrackerReadSQL(t, h, m),
		trackerWorkerSQL: buildTrackerWorkerSQL(t, h),
	}
}

// buildTrackerTrackSQL builds Track's and the webhook's writes.
func buildTrackerTrackSQL(t string) trackerTrackSQL {
	return trackerTrackSQL{
		insert: fmt.Sprintf(`INSERT INTO %s (order_id, payment_id, pay_amount, currency, network, expired_at, state, next_at, status, paid_amount)
VALUES (@order_id, @payment_id, @pay_amount::numeric, @currency, @network, @expired_at, @state, @next_at, @status,
    @paid_amount::numeric) ON CONFLICT (order_id) DO NOTHING RETURNING true`, t),
		insertOrder: fmt.Sprintf(`INSERT INTO %s (order_id, state) VALUES ($1, $2) ON CONFLICT (order_id) DO NOTHING RETURNING true`, t),
		untrack:     fmt.Sprintf(`DELETE FROM %s WHERE order_id = $1 AND state = 'unmatched' AND payment_id = '' AND changes = 0 AND anomaly = '' RETURNING true`, t),
		getLock:     fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = $1 FOR UPDATE`, trackedCols, t),
		// Track completes a payment tracked by orderId alone.
		complete: fmt.Sprintf(`UPDATE %s SET payment_id = $2, pay_amount = $3::numeric, currency = $4, network = $5,
    expired_at = COALESCE($6, expired_at), state = CASE WHEN state = 'unmatched' THEN 'open' ELSE state END,
    next_at = COALESCE(next_at, $7), updated_at = now(),
    status = CASE WHEN status = '' AND changes = 0 THEN $8 ELSE status END,
    paid_amount = CASE WHEN status = '' AND changes = 0 THEN $9::numeric ELSE paid_amount END
WHERE order_id = $1 AND payment_id = ''`, t),
		// A webhook: the id completes an unmatched payment; the payment is
		// read at once unless its status is final, or at the end of the
		// lease of the worker holding it (woken makes that worker schedule
		// the next read now).
		wake: fmt.Sprintf(`UPDATE %s SET payment_id = CASE WHEN payment_id = '' THEN $2 ELSE payment_id END,
    state = CASE WHEN state = $4 THEN $3 ELSE state END,
    woken = NOT final,
    next_at = CASE WHEN final THEN next_at WHEN lease_token IS NULL OR next_at IS NULL THEN now() ELSE next_at END
WHERE order_id = $1 AND (payment_id = '' OR lower(payment_id) = lower($2))`, t),
		otherPayment: fmt.Sprintf(`UPDATE %s SET %s, needs_action = true
WHERE order_id = $1 AND payment_id <> '' AND lower(payment_id) <> lower($2)`, t, mergeAnomaly("$3")),
		// A payment id from a webhook that the API says is another order's:
		// dropped, only by the lease holder and only while no read has
		// confirmed it; the order waits unmatched (unread) again, flagged.
		unmatch: fmt.Sprintf(`UPDATE %s SET payment_id = '', state = $4, next_at = NULL, woken = false, %s,
    needs_action = true, lease_token = NULL, updated_at = now()
WHERE order_id = $1 AND lease_token = $2 AND changes = 0 AND pay_amount IS NULL`, t, mergeAnomaly("$3")),
	}
}

// buildTrackerReadSQL builds the reads and the operator's move.
func buildTrackerReadSQL(t, h, m string) trackerReadSQL {
	return trackerReadSQL{
		get: fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = $1`, trackedCols, t),
		// An operator clears the anomaly they saw, only if no read or other
		// anomaly was recorded since (compare and set), and the move with
		// its actor ($6) goes to the moves table in the same statement:
		// never to the history, whose rows are the credits.
		clear: fmt.Sprintf(`WITH u AS (
    UPDATE %s SET anomaly = '', needs_action = $2, note = $5 WHERE order_id = $1 AND status = $3 AND anomaly = $4 RETURNING order_id)
INSERT INTO %s (order_id, actor_id, action, anomaly, note) SELECT order_id, $6, '`+string(MoveClearAnomaly)+`', $4, $7 FROM u`, t, m),
		moves: fmt.Sprintf(`SELECT at, actor_id, action, anomaly, note FROM %s WHERE order_id = $1 ORDER BY id`, m),
		list: fmt.Sprintf(`SELECT %s FROM %s WHERE ($1 OR state = ANY($2)) AND (NOT $3 OR needs_action) AND order_id > $4
    AND (NOT $6 OR anomaly <> '') AND ($7 = '' OR order_id = $7 OR payment_id = $7) ORDER BY order_id LIMIT $5`, trackedCols, t),
		history: fmt.Sprintf(`SELECT order_id, seq, payment_id, from_status, to_status, from_paid::text, to_paid::text, late, at, merchant_amount::text FROM %s WHERE order_id = $1 ORDER BY seq`, h),
		counts:  fmt.Sprintf(`SELECT state, count(*)::int, (count(*) FILTER (WHERE needs_action))::int FROM %s GROUP BY state`, t),
		health:  healthSQL(t, trackOpenSQL, "needs_action"),
	}
}

// buildTrackerWorkerSQL builds the worker's claim and records.
func buildTrackerWorkerSQL(t, h string) trackerWorkerSQL {
	return trackerWorkerSQL{
		// The claim: due payments, locked without waiting for rows another
		// worker is claiming (SKIP LOCKED), leased to this worker by its
		// token until now() + lease.
		claim: fmt.Sprintf(`WITH due AS (
    SELECT order_id AS due_id FROM %[1]s WHERE next_at <= now() ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
UPDATE %[1]s SET next_at = now() + $2 * interval '1 microsecond', lease_token = $3, woken = false
FROM due WHERE order_id = due.due_id
RETURNING %[2]s, late_polls`, t, trackedCols),
		// A read that records no change: the next read, a new anomaly
		// (merged into the row's, never the claim's copy written back), the
		// failure of the read or of the callback (its class and text;
		// none: the count is reset); only by the lease holder.
		set: fmt.Sprintf(`UPDATE %s SET state = @state, next_at = CASE WHEN woken AND NOT final THEN now() ELSE @next_at END,
    late_polls = @late_polls, %s, needs_action = @needs_action OR @anomaly <> '' OR anomaly <> '',
    expired_at = COALESCE(expired_at, @expired_at), lease_token = NULL,
    `+failSet("@fail_class", "@fail_text")+`
WHERE order_id = @order_id AND lease_token = @lease_token`, t, mergeAnomaly("@anomaly")),
		// A change: only by the lease holder, only from the status and paid
		// amount it read before (compare and set), and the history row in
		// the same statement; (order_id, seq) is the history's key, so one
		// change can never be recorded twice.
		record: fmt.Sprintf(`WITH u AS (
    UPDATE %[1]s SET status = @to_status, paid_amount = @to_paid::numeric, changes = changes + 1, state = @state, fail_count = 0,
        next_at = CASE WHEN woken AND NOT @final THEN now() ELSE @next_at END, late_polls = @late_polls,
        needs_action = @needs_action OR @anomaly <> '' OR anomaly <> '', %[3]s,
        final = @final, lease_token = NULL, updated_at = now(), expired_at = COALESCE(expired_at, @expired_at),
        pay_amount = COALESCE(pay_amount, @pay_amount::numeric),
        currency = CASE WHEN currency = '' THEN @currency ELSE currency END,
        network = CASE WHEN network = '' THEN @network ELSE network END,
        merchant_amount = @merchant_amount::numeric
    WHERE order_id = @order_id AND lease_token = @lease_token AND status = @from_status
        AND paid_amount IS NOT DISTINCT FROM @from_paid::numeric
    RETURNING order_id, payment_id, changes)
INSERT INTO %[2]s (order_id, seq, payment_id, from_status, to_status, from_paid, to_paid, late, merchant_amount)
SELECT order_id, changes, payment_id, @from_status, @to_status, @from_paid::numeric, @to_paid::numeric, @late, @merchant_amount::numeric FROM u
RETURNING seq, at`, t, h, mergeAnomaly("@anomaly")),
	}
}

// trackOpenSQL is the condition of a tracked payment not closed: the
// predicate of the open index (name_open_idx), which Health reads instead
// of the whole table; a query must state it as is for the planner to use
// that index.
const trackOpenSQL = `state <> 'closed'`

// maxAnomalyText bounds a tracked payment's anomalies, merged.
const maxAnomalyText = 4096

// mergeAnomaly is the SET item that adds the anomaly in param to the row's
// own (read in the statement, not at claim time): an anomaly a webhook set,
// or an operator cleared, while a worker read the API stays as they left
// it. An empty param or one the row already holds changes nothing.
func mergeAnomaly(param string) string {
	return fmt.Sprintf(`anomaly = CASE WHEN %[1]s = '' OR strpos(anomaly, %[1]s) > 0 THEN anomaly
        WHEN anomaly = '' THEN %[1]s ELSE left(anomaly || '; ' || %[1]s, %[2]d) END`, param, maxAnomalyText)
}
