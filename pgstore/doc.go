// Package pgstore is a cryptopay-go service's durable state in
// PostgreSQL: a payout queue, a payment tracker, a books check, and the
// webhook dedupe store and wake-up bus its replicas share (PostgreSQL 10 or
// later, tested on 15, through a pgx v5 pool):
//
//   - DedupeStore, a webhook.DedupeStore in one table, so a webhook
//     delivered twice, to the same replica or to two, reaches the callback
//     once;
//   - OnPayment and OnPayout, transactional delivery: the merchant's own
//     writes for an event and the event's "done" mark commit in one
//     transaction;
//   - WakeupBus, a cryptopay.WakeupBus over LISTEN/NOTIFY, so a webhook
//     received by one replica ends the waits on every other replica at once;
//   - Queue, a durable payout queue: exactly one payout per intent across
//     crashes, replicas and unknown outcomes (see "Payout queue" below and
//     docs/payout-queue.md);
//   - Tracker, a durable payment tracker: each payment followed to its
//     final status and each money change credited once (see "Payment
//     tracker" below and docs/payment-tracker.md);
//   - Books, the books check: the merchant's records (the queue's intents,
//     the tracker's payments, the merchant's ledger) against the provider's,
//     every difference named with its exact amount (see docs/books.md).
//
// # Table
//
// NewDedupeStore with WithCreateTable, or DedupeStore.CreateTable, creates
// the table if it is missing. To create it yourself (in a migration), run
// this DDL, with your table name if you pass WithTable:
//
//	CREATE TABLE IF NOT EXISTS "cryptopay_dedupe" (
//	    key        bytea       PRIMARY KEY,
//	    token      bytea       NOT NULL,
//	    done       boolean     NOT NULL DEFAULT false,
//	    expires_at timestamptz NOT NULL
//	);
//	CREATE INDEX IF NOT EXISTS "cryptopay_dedupe_expires_at_idx" ON "cryptopay_dedupe" (expires_at);
//
// A row is a key such as "payment/<id>/paid" (bytes, stored verbatim).
// While done is false the row is a lease held by the replica whose random
// token it carries, until expires_at; once done, it is remembered until
// expires_at (the done TTL). Times are the database server's clock. The
// store needs SELECT, INSERT, UPDATE and DELETE on the table.
//
// Expired rows cost nothing but space: a Claim of an expired key reuses
// its row. Each store instance deletes up to 1000 expired rows, at most
// every WithCleanupEvery (10 minutes by default), after a Complete;
// DedupeStore.Cleanup deletes all of them, for a periodic job.
//
// # Guarantees
//
// DedupeStore (webhook.Config.Dedupe = store): each (kind, id, status) is
// claimed by one delivery at a time across all replicas, and once
// completed is seen as a duplicate for the done TTL (72 h by default). A
// replica that dies mid-callback holds the event only until its lease ends
// (60 s by default); the sender's next retry after that delivers it
// elsewhere, so no event is lost as long as the sender retries for longer
// than the lease. Delivery is at least once, not exactly once: a replica
// that dies after the callback succeeded but before Complete, or a
// callback that outlives its lease, lets the event run again. Keep
// callbacks idempotent. While the database is unreachable the handler
// answers 503 and the sender retries.
//
// Transactional delivery (OnPayment/OnPayout with the same store as
// Dedupe): the callback's writes through its pgx.Tx and the done mark
// commit in one transaction, under a lock on the event's row. A crash at
// any point therefore gives neither a double effect nor a lost event:
// before the commit nothing is written and the event is redelivered (after
// the lease at most); after the commit the event is done and every
// redelivery is acknowledged as a duplicate. Effects outside that
// transaction (another database, e-mail, an HTTP call) are not covered.
//
// # Payout queue
//
// A Queue keeps payout intents in one table (Queue.DDL; amounts are
// numeric). The merchant enqueues an intent in the transaction that records
// the withdrawal (Queue.Enqueue with their pgx.Tx); Queue.Run, on any number
// of replicas, then takes each intent through these states:
//
//	needs_approval --Approve--> queued --attempt committed--> sending --created--> created --final status--> paid | failed
//	     |                        |                             |                     (followed by id, or by orderId)
//	     Reject --> rejected      guardrail --> blocked         4xx --> refused
//	                                                            unknown --> reconciling --exists--> created
//	                                                                            |  --not created--> sending (a new attempt)
//	                                                                            '--still unknown--> parked (backoff; Retry by an operator)
//
// (the whole machine, every named transition and who makes it, is one
// table in queue_states.go, drawn in docs/payout-queue.md).
//
// Four eyes: Approve queues an intent only once QueueConfig.Approvals
// distinct actors (default 2) have approved it; the actor who enqueued it
// (EnqueueBy) does not count, and one actor counts once. Actor ids are
// compared and recorded in one canonical form (CanonicalActor: case, width
// and Unicode normalization folded), so one person cannot split into two,
// and one principal (the database role and the login a tool authenticated:
// Operator) gives one approval. Every operator's move, with the role it
// needs, the states it applies to, its inputs and its confirmation, is one
// entry of Moves; the console and the CLI are built from that table. Every operator's
// move (Approve, Reject, Retry, Resolve) names its actor, kept in the
// history (Event.ActorID). The console module shows the queue in a
// browser, with the same rules.
//
// Its guarantee: an intent is sent at most once per attempt, and a new
// attempt is made only after the payout list showed the previous one
// created nothing (cryptopay.PayoutNotCreated) or an operator said so
// (Retry). A 2xx answer is evidence that the server acted: one that cannot
// be matched to the request parks the intent (HoldServerActed), and no
// list verdict sends it again; attempts are bounded (MaxAttempts). A final
// state recorded by a process without OnFinal leaves its callback due for
// one with it (Intent.CallbackDue). A worker claims due intents with SELECT ... FOR UPDATE SKIP
// LOCKED and a lease (QueueConfig.Lease); it commits the attempt and its
// time before sending, never starts a request that could outlive its lease,
// and records every change only while it still holds the lease (a token per
// claim). An intent found in sending (its worker died or lost the lease) or
// with an unknown outcome is reconciled with the committed attempt time.
// The final status and QueueConfig.OnFinal's writes commit in one
// transaction. The limits: the settle time must exceed the list's lag
// (QueueConfig.ReconcileSettleTime), the account must not create payouts
// with these orderIds by other means, and an operator's Retry is trusted.
// SECURITY.md lists the tests.
//
// QueueConfig.Observer receives one Transition per committed state change
// (a poll that changes nothing is none; an enqueue is reported by the
// first process that changes the committed intent, never when Enqueue
// returns, since the caller's transaction may roll back; Queue.History
// keeps every change
// and operator action, written in the same transaction); to export it
// with OpenTelemetry, count transitions by target state and alert on
// parked:
//
//	moved, _ := meter.Int64Counter("cryptopay.payout_queue.transitions")
//	cfg.Observer = func(t pgstore.Transition) {
//		moved.Add(context.Background(), 1, metric.WithAttributes(
//			attribute.String("to", string(t.To)), attribute.String("verdict", t.Verdict)))
//	}
//
// (never put OrderID or Err in metric attributes: unbounded cardinality;
// log them instead). Queue.Counts gives a gauge of intents per state.
//
// # Payment tracker
//
// A Tracker keeps payments in one table and their recorded changes in a
// second (Tracker.DDL). The merchant tracks a payment in the transaction
// that records the order (Tracker.Track with their pgx.Tx; TrackOrder by
// orderId alone when the create answer was lost: it waits, unread, for
// its first webhook to give the id). Tracker.PaymentChanged, called from
// the webhook handler's OnPayment, only wakes the payment; Tracker.Run, on
// any number of replicas, claims due payments (FOR UPDATE SKIP LOCKED, a
// lease token per claim), reads each through the API and records what the
// API showed, never what a webhook said. The backstop reads every open
// payment every OpenEvery before its expiredAt, once just after it, then
// from LateMin doubling to LateMax until Horizon after expiredAt; a
// webhook still wakes a payment past its horizon.
//
// Its guarantee: each change that matters to money (PaymentChange.Credits:
// every change of the paid amount, whatever the status) reaches
// TrackerConfig.OnChange once, in the transaction that records it
// (synchronous_commit on), only by the lease holder and only from the
// status and paid amount it read before (compare and set; the history is
// keyed by (order, seq)), so the sum of PaymentChange.Delta is the paid
// amount last recorded. An API answer the lifecycle table does not reach
// (cryptopay.PaymentStatus.CanMoveTo, in any number of moves), that names
// another payment, order, currency, network or payAmount, or whose paid
// amount cannot be booked (negative, less than before, a success below
// payAmount) is not recorded but flagged (TrackedPayment.Anomaly) until an
// operator clears it. The limits: OnChange's effects outside its
// tx are not covered; an orderId tracked alone whose webhooks are all lost
// is never found (the API has no payment search); a lost webhook costs up
// to one poll interval. SECURITY.md lists the tests.
//
// # Several replicas
//
// Every replica opens its own pool and builds its own DedupeStore on the
// same table (an instance remembers its own claims' tokens), and its own
// WakeupBus on the same channel. See the repository's guide
// docs/replicas.md ("Running several replicas").
package pgstore
