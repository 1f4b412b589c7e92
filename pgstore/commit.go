package pgstore

import "time"

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

// recordTimeout bounds a worker's database write after the create request
// has ended, which runs even when Run's ctx has ended: the outcome of a
// request that was sent is worth recording.
const recordTimeout = 10 * time.Second
