// Package redisstore keeps the webhook state of several replicas of a
// service in Redis, through github.com/redis/go-redis/v9:
//
//   - NewDedupeStore returns a webhook.DedupeStore that all replicas share,
//     so an event the sender delivers to two replicas reaches the callback
//     once. A claim is a lease that expires, so a replica that dies inside
//     a callback does not hold its event forever.
//   - NewWakeupBus returns a cryptopay.WakeupBus over Redis pub/sub, so a
//     webhook that lands on one replica ends the waits on every replica
//     within milliseconds instead of at their next poll.
//
// # What the Redis store guarantees
//
// Each (kind, id, status) reaches a callback at most once per lease: while
// one replica's claim is live, every other delivery is answered "in
// progress" (the handler answers 503 and the sender retries). Complete and
// Release act only on the caller's own claim (a compare-and-set in a Lua
// script), so a replica coming back late never erases another replica's
// claim or marks its event done.
//
// It does NOT guarantee exactly once. A callback runs twice when
//   - its lease expires while it is still running (another replica then
//     claims the event), or
//   - it returned but Complete could not reach Redis before the handler
//     gave up (10 s), or the process died between the two; the lease then
//     expires and a redelivery runs the callback again;
//   - Redis loses the done mark: an eviction policy other than noeviction
//     or volatile-*, a failover to a replica that had not received it, or a
//     restart without persistence.
//
// Callbacks must therefore be idempotent. For effects that must happen
// exactly once, use pgstore's transactional mode, which commits the
// merchant's own writes and the done mark in one Postgres transaction.
//
// Keys are written under a prefix (DefaultKeyPrefix) and each script
// touches one key, so the store works on Redis Cluster too.
package redisstore
