package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Defaults of NewDedupeStore.
const (
	// DefaultLease is how long a claim holds an event before another
	// replica may take it: longer than any callback should run.
	DefaultLease = 60 * time.Second
	// DefaultDoneTTL is how long a delivered event is remembered: a week,
	// well past the sender's retry window (which the API does not document).
	// Each entry costs about 100 bytes of Redis memory.
	DefaultDoneTTL = 7 * 24 * time.Hour
	// DefaultKeyPrefix is put before every key the store writes.
	DefaultKeyPrefix = "cryptopay:dedupe:"
)

// A key's value is "lease:" + a random token while claimed, "done" once
// delivered. The scripts answer 1 (claimed / done / released), 2 (seen), 3 (held by
// another claim) or 0 (nothing to do).
var (
	// KEYS[1] key; ARGV[1] token, ARGV[2] lease in ms. A value equal to
	// our own token is an earlier attempt of this very call whose reply
	// was lost: it is ours.
	claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then return 1 end
if v == 'done' then return 2 end
return 3`)

	// KEYS[1] key; ARGV[1] token, ARGV[2] done TTL in ms. Marks the key
	// done if the caller's claim holds it, or if the claim lapsed and
	// nobody took the key over; never over another's claim.
	completeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == 'done' then return 1 end
if (not v) or v == ARGV[1] then
  redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2])
  return 1
end
return 3`)

	// KEYS[1] key; ARGV[1] token. Deletes the key only if the caller's
	// claim holds it.
	releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v and v ~= 'done' then return 3 end
return 0`)
)

// Option configures NewDedupeStore.
type Option func(*DedupeStore) error

// WithLease sets how long a claim lasts (default DefaultLease). When it
// expires before the callback returns, another replica may run the same
// event: choose it well above the callback's longest run, and below the
// delay you accept before a dead replica's event is redelivered. At least
// 10 ms.
func WithLease(d time.Duration) Option {
	return func(s *DedupeStore) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("redisstore: lease %v is below 10ms", d)
		}
		s.lease = d
		return nil
	}
}

// WithDoneTTL sets how long a delivered event is remembered (default
// DefaultDoneTTL). A duplicate that arrives later is delivered again, so
// keep it above the sender's retry window. At least 10 ms.
func WithDoneTTL(d time.Duration) Option {
	return func(s *DedupeStore) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("redisstore: done TTL %v is below 10ms", d)
		}
		s.doneTTL = d
		return nil
	}
}

// WithKeyPrefix sets the prefix of every key (default DefaultKeyPrefix),
// to share one Redis between services or environments. Services that
// must not see each other's events need different prefixes. Use a hash
// tag, such as "{cryptopay}:dedupe:", only if you want every key on one
// Redis Cluster slot.
func WithKeyPrefix(p string) Option {
	return func(s *DedupeStore) error {
		if p == "" {
			return errors.New("redisstore: empty key prefix")
		}
		s.prefix = p
		return nil
	}
}

// DedupeStore is a webhook.DedupeStore in Redis, shared by every replica
// that uses the same Redis and key prefix. Give each replica (each
// process) its own DedupeStore: it remembers the tokens of its own claims,
// which is what lets Complete and Release act only on them. It is safe for
// concurrent use. See the package documentation for its guarantees.
//
// The interface names a claim by its key only, so within one instance two
// claims of the same key are not told apart: if this instance claims a key
// again after its own earlier claim lapsed (the first callback still
// running), the first callback's Complete settles the second claim. That
// case is a double run already (see the package documentation); keep the
// lease above the slowest callback. A token is kept until its claim is
// settled, so a callback that never returns keeps one small map entry.
type DedupeStore struct {
	rdb     redis.UniversalClient
	lease   time.Duration
	doneTTL time.Duration
	prefix  string

	mu     sync.Mutex
	tokens map[string]string // key -> token of this instance's live claim
}

var _ webhook.DedupeStore = (*DedupeStore)(nil)

// NewDedupeStore returns a store on rdb (a *redis.Client, a
// *redis.ClusterClient or any redis.UniversalClient; the store does not
// close it). Redis 2.6 or later; use a noeviction or volatile-* eviction
// policy, and persistence (AOF) if the done marks must survive a restart.
func NewDedupeStore(rdb redis.UniversalClient, opts ...Option) (*DedupeStore, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: nil Redis client")
	}
	s := &DedupeStore{
		rdb:     rdb,
		lease:   DefaultLease,
		doneTTL: DefaultDoneTTL,
		prefix:  DefaultKeyPrefix,
		tokens:  make(map[string]string),
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "lease:" + hex.EncodeToString(b[:])
}

// Claim implements webhook.DedupeStore with one round trip. On an error
// the claim may still have been taken in Redis (the reply was lost); it
// then holds the key until the lease expires, which delays the event but
// loses nothing.
func (s *DedupeStore) Claim(ctx context.Context, key string) (webhook.DedupeClaim, error) {
	tok := newToken()
	n, err := claimScript.Run(ctx, s.rdb, []string{s.prefix + key}, tok, s.lease.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("redisstore: claim %q: %w", key, err)
	}
	switch n {
	case 1:
		s.mu.Lock()
		s.tokens[key] = tok
		s.mu.Unlock()
		return webhook.DedupeClaimed, nil
	case 2:
		return webhook.DedupeSeen, nil
	case 3:
		return webhook.DedupeInProgress, nil
	}
	return 0, fmt.Errorf("redisstore: claim %q: unexpected script answer %d", key, n)
}

// Complete implements webhook.DedupeStore: it marks key done if this
// instance's claim still holds it, or if the claim lapsed and nobody else
// took the key. If another delivery holds the key now, or this instance
// never claimed it, it changes nothing and returns an error matching
// webhook.ErrDedupeLeaseLost. It retries a failing Redis until ctx ends.
func (s *DedupeStore) Complete(ctx context.Context, key string) error {
	return s.settle(ctx, key, "complete", func(tok string) *redis.Cmd {
		return completeScript.Run(ctx, s.rdb, []string{s.prefix + key}, tok, s.doneTTL.Milliseconds())
	})
}

// Release implements webhook.DedupeStore: it deletes key if this
// instance's claim still holds it, so the next delivery runs the callback.
// A key held by another delivery is left alone and the error matches
// webhook.ErrDedupeLeaseLost; a key never claimed here, expired or done
// is left alone without error. It retries a failing Redis until ctx ends.
func (s *DedupeStore) Release(ctx context.Context, key string) error {
	err := s.settle(ctx, key, "release", func(tok string) *redis.Cmd {
		return releaseScript.Run(ctx, s.rdb, []string{s.prefix + key}, tok)
	})
	if errors.Is(err, errNotClaimed) {
		return nil
	}
	return err
}

var errNotClaimed = fmt.Errorf("%w: not claimed by this store", webhook.ErrDedupeLeaseLost)

// settle runs a Complete or Release script for this instance's claim on
// key, retrying transient failures until ctx ends.
func (s *DedupeStore) settle(ctx context.Context, key, op string, run func(tok string) *redis.Cmd) error {
	// The token stays in the map until the claim is settled or known lost:
	// a caller whose ctx ended (the handler's request was cancelled) may
	// settle it again with a fresh ctx. A claim never settled expires with
	// its lease, and the next Claim of the key replaces the token.
	s.mu.Lock()
	tok, ok := s.tokens[key]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("redisstore: %s %q: %w", op, key, errNotClaimed)
	}
	n, err := retry(ctx, func() (int64, error) { return run(tok).Int64() })
	if err != nil {
		return fmt.Errorf("redisstore: %s %q: %w", op, key, err)
	}
	s.mu.Lock()
	if s.tokens[key] == tok {
		delete(s.tokens, key)
	}
	s.mu.Unlock()
	if n == 3 {
		return fmt.Errorf("redisstore: %s %q: %w", op, key, webhook.ErrDedupeLeaseLost)
	}
	return nil
}

// retry calls fn until it succeeds, fails for good, or ctx ends, waiting
// 20 ms doubling to 250 ms between attempts (so a claim is settled soon
// after Redis is back, well within its lease). The scripts it runs are
// idempotent, so a retry after a lost reply is harmless.
func retry(ctx context.Context, fn func() (int64, error)) (int64, error) {
	wait := 20 * time.Millisecond
	for {
		n, err := fn()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return n, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, err
		case <-t.C:
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// transient reports whether err may go away by itself: a network error, or
// a Redis loading, failing over or out of clients.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true
	}
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY ", "ERR max number of clients"} {
		if strings.HasPrefix(rerr.Error(), p) {
			return true
		}
	}
	return false
}

// Lease returns the store's lease length.
func (s *DedupeStore) Lease() time.Duration { return s.lease }
