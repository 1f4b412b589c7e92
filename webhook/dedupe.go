package webhook

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"
)

// Defaults of the in-memory DedupeStore.
const (
	// DefaultDedupeEntries and DefaultDedupeTTL size the in-memory
	// DedupeStore a Handler uses when Config.Dedupe is nil.
	DefaultDedupeEntries = 100_000
	DefaultDedupeTTL     = 72 * time.Hour
)

// DedupeClaim is the answer of DedupeStore.Claim.
type DedupeClaim int

const (
	// DedupeClaimed: the key is new and now claimed by the caller, which must
	// call Complete or Release.
	DedupeClaimed DedupeClaim = iota + 1
	// DedupeSeen: the key was completed before; the event is a duplicate.
	DedupeSeen
	// DedupeInProgress: another delivery holds the claim right now.
	DedupeInProgress
)

// DedupeStore remembers which events (a key per payment or payout id and
// status) a Handler has delivered, so duplicates reach the callback
// once. Implementations must be safe for concurrent use.
//
// The handler calls Claim before the callback; Complete after the callback
// returned nil; Release after it failed or panicked (so a redelivery runs it
// again). Keys are short ASCII strings such as "payment/<uuid>/paid".
//
// The default is a bounded in-memory store (MemoryDedupeStore), which
// only dedupes within one process. Replicas behind a load balancer must
// share one store: the companion modules redisstore and pgstore provide
// stores whose claims are leases owned by a per-claim token (a replica that
// dies mid-callback frees the key when the lease expires, and no replica
// can complete or release another's claim), and pgstore can commit the
// callback's own writes with the done mark in one transaction. Any store
// must pass the conformance suite in cryptopaytest/dedupetest. A shared
// store whose caller no longer holds the claim returns an error matching
// ErrDedupeLeaseLost from Complete or Release.
//
// A store gives at-most-once delivery per claim, not exactly-once: a
// process that dies after the callback succeeded but before Complete gets
// the event again, and an entry evicted or expired lets a late duplicate
// through. Callbacks must therefore be idempotent (for example, "mark order
// paid" rather than "add to balance").
type DedupeStore interface {
	// Claim claims key, or reports that it is done or held by another
	// delivery. An error makes the handler answer 503 (the sender retries).
	Claim(ctx context.Context, key string) (DedupeClaim, error)
	// Complete records key as done; it is called once the callback succeeded.
	Complete(ctx context.Context, key string) error
	// Release drops the claim on key after the callback failed.
	Release(ctx context.Context, key string) error
}

// MemoryDedupeStore is the in-memory DedupeStore: it remembers up to
// MaxEntries completed keys for TTL each (the oldest are forgotten first)
// and the keys being processed. It dedupes within one process only. The
// zero value is ready, with the defaults:
//
//	store := &webhook.MemoryDedupeStore{MaxEntries: 10_000, TTL: 24 * time.Hour}
//
// Set the fields before its first use; it reads them once, then ignores
// them. Use it through a pointer and never copy it.
//
// It keeps a 128-bit digest of each key (the first half of its SHA-256),
// not the key: 66 bytes per completed key measured at 100,000 keys, 101
// after churn through a full store (TestMemoryDedupeStoreSize). Two keys would have to share
// that digest for one to be taken for the other.
type MemoryDedupeStore struct {
	// MaxEntries bounds the completed keys remembered (0 or less:
	// DefaultDedupeEntries); at the bound the oldest is forgotten, and a
	// late duplicate of it would be delivered again.
	MaxEntries int
	// TTL is how long a completed key is remembered (0 or less:
	// DefaultDedupeTTL).
	TTL time.Duration

	mu   sync.Mutex
	max  int
	ttl  time.Duration
	now  func() time.Time
	done map[dedupeDigest]uint64 // digest -> sequence number of its entry in ring
	busy map[dedupeDigest]struct{}
	// ring holds the completed keys in completion order, oldest at head;
	// the entry at head has sequence number headSeq, the next headSeq+1,
	// and so on. An entry whose key was completed again later is dead:
	// done names the newer one.
	ring    []dedupeEntry
	head, n int
	headSeq uint64
}

type dedupeDigest [16]byte

type dedupeEntry struct {
	key dedupeDigest
	at  int64 // completion time, Unix nanoseconds
}

func digest(key string) dedupeDigest {
	sum := sha256.Sum256([]byte(key))
	return dedupeDigest(sum[:16])
}

// NewMemoryDedupeStore returns an in-memory DedupeStore that remembers at
// most maxEntries completed keys (0: DefaultDedupeEntries) for ttl each
// (0: DefaultDedupeTTL). It takes 66 to 101 bytes per key (measured), so
// the default bound is about 10 MB.
//
// Deprecated: use &MemoryDedupeStore{MaxEntries: maxEntries, TTL: ttl}
// (the zero value takes the defaults), the webhook package's one way of
// configuring: a struct's fields.
func NewMemoryDedupeStore(maxEntries int, ttl time.Duration) *MemoryDedupeStore {
	s := &MemoryDedupeStore{MaxEntries: maxEntries, TTL: ttl}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return s
}

// init reads the fields and makes the maps on first use; s.mu is held.
func (s *MemoryDedupeStore) init() {
	if s.done != nil {
		return
	}
	s.max, s.ttl = s.MaxEntries, s.TTL
	if s.max <= 0 {
		s.max = DefaultDedupeEntries
	}
	if s.ttl <= 0 {
		s.ttl = DefaultDedupeTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.done = make(map[dedupeDigest]uint64)
	s.busy = make(map[dedupeDigest]struct{})
}

// Claim implements DedupeStore.
func (s *MemoryDedupeStore) Claim(_ context.Context, key string) (DedupeClaim, error) {
	d := digest(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.expire()
	if _, ok := s.busy[d]; ok {
		return DedupeInProgress, nil
	}
	if _, ok := s.done[d]; ok {
		return DedupeSeen, nil
	}
	s.busy[d] = struct{}{}
	return DedupeClaimed, nil
}

// Complete implements DedupeStore.
func (s *MemoryDedupeStore) Complete(_ context.Context, key string) error {
	d := digest(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	delete(s.busy, d)
	s.push(dedupeEntry{key: d, at: s.now().UnixNano()})
	for len(s.done) > s.max {
		s.pop()
	}
	return nil
}

// Release implements DedupeStore.
func (s *MemoryDedupeStore) Release(_ context.Context, key string) error {
	d := digest(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	delete(s.busy, d)
	return nil
}

// Len reports how many completed keys the store remembers.
func (s *MemoryDedupeStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.expire()
	return len(s.done)
}

// expire forgets the keys completed ttl ago or earlier.
func (s *MemoryDedupeStore) expire() {
	limit := s.now().UnixNano() - int64(s.ttl)
	for s.n > 0 && s.ring[s.head].at <= limit {
		s.pop()
	}
}

// push appends e as the newest entry, growing the ring when full.
func (s *MemoryDedupeStore) push(e dedupeEntry) {
	if s.n == len(s.ring) {
		s.resize(max(16, 2*len(s.ring)))
	}
	s.ring[(s.head+s.n)%len(s.ring)] = e
	s.done[e.key] = s.headSeq + uint64(s.n)
	s.n++
}

// pop drops the oldest entry (and its key, unless completed again since).
func (s *MemoryDedupeStore) pop() {
	e := s.ring[s.head]
	if seq, ok := s.done[e.key]; ok && seq == s.headSeq {
		delete(s.done, e.key)
	}
	s.ring[s.head] = dedupeEntry{}
	s.head = (s.head + 1) % len(s.ring)
	s.headSeq++
	s.n--
	if len(s.ring) > 1024 && s.n < len(s.ring)/4 {
		s.resize(len(s.ring) / 2) // give memory back after a burst expires
	}
}

// resize moves the entries, oldest first, into a ring of size n.
func (s *MemoryDedupeStore) resize(n int) {
	r := make([]dedupeEntry, n)
	k := copy(r, s.ring[s.head:min(len(s.ring), s.head+s.n)])
	copy(r[k:], s.ring[:s.n-k])
	s.ring, s.head = r, 0
}

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
