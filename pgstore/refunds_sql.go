package pgstore

import (
	"fmt"
	"strings"
)

// refundSQL holds the statements of Refunds, built once for its tables.
type refundSQL struct {
	lockTotal, payment, held, setTotal, insert, get, list, claim     string
	resolve, resolutions, unresolved, unresolvedRows, refundResolved string
}

// releasedStatesSQL are the payout states in which a refund holds
// nothing (Refund.Holds), as an SQL list.
func releasedStatesSQL() string {
	var s []string
	for _, st := range []IntentState{StateFailed, StateRefused, StateRejected, StateBlocked} {
		s = append(s, sqlLiteral(string(st)))
	}
	return strings.Join(s, ", ")
}

// buildRefundSQL builds the statements for the refunds table f, the
// totals tot, the resolutions res, the queue's table q and the tracker's
// table t and history h.
func buildRefundSQL(f, tot, res, q, t, h string) refundSQL {
	cols := `r.id, r.order_id, r.idem_key, r.rule, r.amount::text, r.currency, r.network, r.wallet_address, r.customer_id,
    r.customer_ip, r.state, r.claim_until, r.actor_id, r.note, r.created_at, r.claimed_at`
	joined := fmt.Sprintf(`SELECT %s, q.state, q.payout_status FROM %s r LEFT JOIN %s q ON q.order_id = r.id`, cols, f, q)
	// holds: the refunds of $1 that count against what it paid (an
	// unclaimed claim past its time, or a payout that ended unpaid, does
	// not), by the clock of the statement, after the lock.
	holds := fmt.Sprintf(`SELECT COALESCE(sum(r.amount), 0) FROM %s r LEFT JOIN %s q ON q.order_id = r.id
WHERE r.order_id = $1 AND (q.state IS NULL OR q.state NOT IN (%s))
    AND NOT (r.state = %s AND r.claim_until <= clock_timestamp())`, f, q, releasedStatesSQL(), sqlLiteral(string(RefundAwaitingClaim)))
	return refundSQL{
		// The payment's lock: its totals row, made on its first refund.
		lockTotal: fmt.Sprintf(`INSERT INTO %s (order_id) VALUES ($1)
ON CONFLICT (order_id) DO UPDATE SET updated_at = now()`, tot),
		payment: fmt.Sprintf(`SELECT t.status, t.paid_amount::text, t.pay_amount::text, t.currency, t.network,
    EXISTS (SELECT 1 FROM %s h WHERE h.order_id = t.order_id AND h.late AND h.to_paid > COALESCE(h.from_paid, 0))
FROM %s t WHERE t.order_id = $1 FOR SHARE OF t`, h, t),
		held: `SELECT (` + holds + `)::text`,
		setTotal: fmt.Sprintf(`UPDATE %s SET paid = COALESCE((SELECT paid_amount FROM %s WHERE order_id = $1), 0),
    refunded = (%s), updated_at = now() WHERE order_id = $1`, tot, t, holds),
		insert: fmt.Sprintf(`WITH r AS (INSERT INTO %s (id, order_id, idem_key, rule, amount, currency, network, wallet_address,
    customer_id, customer_ip, state, claim_until, actor_id, note)
VALUES (@id, @order_id, @key, @rule, @amount::numeric, @currency, @network, @wallet, @customer_id, @customer_ip, @state,
    CASE WHEN @claim_us::bigint > 0 THEN now() + @claim_us::bigint * interval '1 microsecond' END, @actor, @note) RETURNING *)
SELECT %s, NULL::text, NULL::text FROM r`, f, cols),
		get:  joined + ` WHERE r.id = $1`,
		list: joined + ` WHERE r.order_id = $1 ORDER BY r.created_at, r.id`,
		// A resolution is appended only for a tracked payment and, when
		// it names a refund, one of that payment's; the answer says which
		// failed.
		resolve: fmt.Sprintf(`WITH c AS (SELECT EXISTS (SELECT 1 FROM %[2]s WHERE order_id = $1) AS tracked,
    ($3 = '' OR EXISTS (SELECT 1 FROM %[3]s WHERE id = $3 AND order_id = $1)) AS refund_ok),
i AS (INSERT INTO %[1]s (order_id, kind, refund_id, actor_id, note) SELECT $1, $2, $3, $4, $5 FROM c WHERE tracked AND refund_ok
    RETURNING at)
SELECT tracked, refund_ok, (SELECT at FROM i) FROM c`, res, t, f),
		resolutions: fmt.Sprintf(`SELECT order_id, kind, refund_id, actor_id, note, at FROM %s WHERE order_id = $1 ORDER BY id`, res),
		// The resolution that names a refund, if its move recorded one.
		refundResolved: fmt.Sprintf(`SELECT order_id, kind, refund_id, actor_id, note, at FROM %s
WHERE order_id = $1 AND refund_id = $2 ORDER BY id LIMIT 1`, res),
		unresolved: fmt.Sprintf(`SELECT t.order_id FROM %s t WHERE t.needs_action AND t.order_id > $1
    AND NOT EXISTS (SELECT 1 FROM %s x WHERE x.order_id = t.order_id) ORDER BY t.order_id LIMIT $2`, t, res),
		unresolvedRows: fmt.Sprintf(`SELECT %s FROM %s t WHERE t.needs_action AND t.order_id > $1
    AND NOT EXISTS (SELECT 1 FROM %s x WHERE x.order_id = t.order_id) ORDER BY t.order_id LIMIT $2`, trackedCols, t, res),
		claim: fmt.Sprintf(`WITH r AS (UPDATE %s SET wallet_address = $2, customer_ip = $3, state = %s, claimed_at = now()
WHERE id = $1 AND state = %s AND claim_until > clock_timestamp() RETURNING *)
SELECT %s, NULL::text, NULL::text FROM r`, f, sqlLiteral(string(RefundEnqueued)), sqlLiteral(string(RefundAwaitingClaim)), cols),
	}
}
