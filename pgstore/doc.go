// Package pgstore keeps the webhook state of several replicas of a
// cryptopay-go service in PostgreSQL (10 or later; tested on 15), through a
// pgx v5 pool:
//
//   - DedupeStore, a webhook.DedupeStore in one table, so a webhook
//     delivered twice, to the same replica or to two, reaches the callback
//     once;
//   - OnPayment and OnPayout, transactional delivery: the merchant's own
//     writes for an event and the event's "done" mark commit in one
//     transaction;
//   - WakeupBus, a cryptopay.WakeupBus over LISTEN/NOTIFY, so a webhook
//     received by one replica ends the waits on every other replica at once.
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
// # Several replicas
//
// Every replica opens its own pool and builds its own DedupeStore on the
// same table (an instance remembers its own claims' tokens), and its own
// WakeupBus on the same channel. See the repository's guide
// docs/replicas.md ("Running several replicas").
package pgstore
