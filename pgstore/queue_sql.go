package pgstore

import "fmt"

// queueSQL holds a Queue's statements, built once for its table.
type queueSQL struct {
	insert, get, getMany, list, counts, operate, wakeOne        string
	claim, attempt, attemptMany, set, velocityLock, velocitySum string
	finalFmt                                                    string // see finalSet
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

func buildQueueSQL(t string) queueSQL {
	return queueSQL{
		insert: fmt.Sprintf(`INSERT INTO %s (order_id, wallet_address, network_fee_by_user, amount, currency, network,
customer_id, customer_ip, additional_data, webhook_url, state)
VALUES ($1, $2, $3, $4::numeric, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (order_id) DO NOTHING RETURNING true`, t),
		get:     fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = $1`, intentCols, t),
		getMany: fmt.Sprintf(`SELECT %s FROM %s WHERE order_id = ANY($1)`, intentCols, t),
		list:    fmt.Sprintf(`SELECT %s FROM %s WHERE ($1 OR state = ANY($2)) AND order_id > $3 ORDER BY order_id LIMIT $4`, intentCols, t),
		counts:  fmt.Sprintf(`SELECT state, count(*)::int FROM %s GROUP BY state`, t),
		// An operator's move; $5 records an approval (Approve), which the
		// worker checks before sending.
		operate: fmt.Sprintf(`UPDATE %s SET state = $3, note = $4, next_at = now(), lease_token = NULL, tries = 0, updated_at = now(),
    approved_at = CASE WHEN $5 THEN now() ELSE approved_at END
FROM `+durable+`
WHERE order_id = $1 AND state = $2 RETURNING %s`, t, intentCols),
		wakeOne: fmt.Sprintf(`UPDATE %s SET next_at = now() WHERE order_id = $1 AND state = 'created' AND next_at > now()`, t),
		// The claim: due intents in open states (the due index's
		// predicate, written out so the planner uses it), locked without waiting
		// for rows another worker is claiming (SKIP LOCKED), leased to this
		// worker by its token until now() + lease.
		claim: fmt.Sprintf(`WITH due AS (
    SELECT order_id AS due_id FROM %[1]s
    WHERE state IN ('queued', 'sending', 'reconciling', 'parked', 'created') AND next_at <= now()
    ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
UPDATE %[1]s SET next_at = now() + $2 * interval '1 microsecond', lease_token = $3
FROM due WHERE order_id = due.due_id
RETURNING %[2]s, tries`, t, intentCols),
		// The attempt: committed before the request is sent; only by the
		// lease holder, only from the state the holder saw.
		attempt: fmt.Sprintf(`UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = $5, updated_at = now()
FROM `+durable+`
WHERE order_id = $1 AND lease_token = $2 AND state = $4`, t),
		// Every other change by a worker, only by the lease holder; $10
		// gives the lease up (an intent held for approval).
		set: fmt.Sprintf(`UPDATE %s SET state = $3,
    verdict = CASE WHEN $4::text = '' THEN verdict ELSE $4::text END,
    last_error = $5, tries = $6, next_at = now() + $7 * interval '1 microsecond',
    payout_id = CASE WHEN $8::text = '' THEN payout_id ELSE $8::text END,
    payout_status = CASE WHEN $9::text = '' THEN payout_status ELSE $9::text END,
    lease_token = CASE WHEN $10 THEN NULL ELSE lease_token END, updated_at = now()
WHERE order_id = $1 AND lease_token = $2 RETURNING attempts`, t),
		attemptMany: fmt.Sprintf(`UPDATE %s SET state = 'sending', attempts = attempts + 1, attempted_at = $3,
reserved_at = now(), tries = 0, last_error = '', verdict = '', updated_at = now()
FROM `+durable+`
WHERE order_id = ANY($1) AND lease_token = $2 AND state = 'queued' RETURNING order_id`, t),
		finalFmt: fmt.Sprintf(`UPDATE %s SET state = %%[3]s,
    verdict = CASE WHEN %%[4]s = '' THEN verdict ELSE %%[4]s END,
    last_error = %%[5]s, tries = 0, next_at = now(),
    payout_id = CASE WHEN %%[6]s = '' THEN payout_id ELSE %%[6]s END,
    payout_status = CASE WHEN %%[7]s = '' THEN payout_status ELSE %%[7]s END,
    lease_token = NULL, updated_at = now()
WHERE order_id = %%[1]s AND lease_token = %%[2]s RETURNING 1`, t),
		velocityLock: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		// What the currency has reserved within the window, apart from this
		// intent: every attempt committed, except those the API refused
		// (nothing was created) and blocked ones (never sent).
		velocitySum: fmt.Sprintf(`SELECT COALESCE(sum(amount), 0)::text FROM %s
WHERE currency = $1 AND reserved_at > now() - $2 * interval '1 microsecond' AND order_id <> $3
AND state NOT IN ('refused', 'blocked')`, t),
	}
}

// finalSet is the set statement for a final state with its values given
// as quoted literals (orderId, token, state, verdict, error, payout id,
// payout status), for the final transaction's BEGIN (see Queue.finalBegin).
func (s queueSQL) finalSet(vals ...string) string {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return fmt.Sprintf(s.finalFmt, args...)
}
