package webhook

import "errors"

// ErrDedupeLeaseLost is returned (wrapped) by the Complete or Release of a
// shared DedupeStore (redisstore, pgstore) when the caller no longer holds
// the claim: its lease expired and another delivery claimed the key, or this
// store instance never claimed it. The store then changed nothing, so the
// other delivery's lease stays intact and that delivery records the outcome.
//
// For a Complete it means the callback ran while another replica may be
// running it too: a callback can run twice when its lease expires before it
// returns. Keep leases well above the callback's longest run, and keep
// callbacks idempotent. A Handler still answers 200 for the event.
var ErrDedupeLeaseLost = errors.New("cryptopay: dedupe lease lost (another delivery holds the key, or it was never claimed here)")
