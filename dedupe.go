package cryptopay

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Defaults of the in-memory DedupeStore.
const (
	// DefaultDedupeEntries and DefaultDedupeTTL size the in-memory
	// DedupeStore a WebhookHandler uses when WebhookConfig.Dedupe is nil.
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
// status) a WebhookHandler has delivered, so duplicates reach the callback
// once. Implementations must be safe for concurrent use.
//
// The handler calls Claim before the callback; Complete after the callback
// returned nil; Release after it failed or panicked (so a redelivery runs it
// again). Keys are short ASCII strings such as "payment/<uuid>/paid".
//
// The default is a bounded in-memory store (NewMemoryDedupeStore), which
// only dedupes within one process. Replicas behind a load balancer must
// share one store, for example in Redis (no Redis client is bundled; a
// sketch using go-redis names):
//
//	Claim:    ok := SET prefix+key "busy" NX PX 60000 (a lease: a replica that
//	          dies mid-callback frees the key when it expires)
//	          ok → DedupeClaimed; else GET prefix+key: "done" → DedupeSeen,
//	          otherwise DedupeInProgress
//	Complete: SET prefix+key "done" PX 259200000 (72 h, at least the sender's
//	          retry window)
//	Release:  DEL prefix+key (ideally only if still "busy": a two-line Lua script)
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

// MemoryDedupeStore is the in-memory DedupeStore: it remembers up to a
// number of completed keys for a time (the oldest are forgotten first) and
// the keys being processed. It dedupes within one process only. Use
// NewMemoryDedupeStore; the zero value is not ready.
type MemoryDedupeStore struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // of *dedupeEntry, oldest first
	done  map[string]*list.Element
	busy  map[string]struct{}
}

type dedupeEntry struct {
	key string
	at  time.Time
}

// NewMemoryDedupeStore returns an in-memory DedupeStore that remembers at
// most maxEntries completed keys (0: DefaultDedupeEntries) for ttl each
// (0: DefaultDedupeTTL). About 150 bytes per entry.
func NewMemoryDedupeStore(maxEntries int, ttl time.Duration) *MemoryDedupeStore {
	if maxEntries <= 0 {
		maxEntries = DefaultDedupeEntries
	}
	if ttl <= 0 {
		ttl = DefaultDedupeTTL
	}
	return &MemoryDedupeStore{
		max:   maxEntries,
		ttl:   ttl,
		now:   time.Now,
		order: list.New(),
		done:  make(map[string]*list.Element),
		busy:  make(map[string]struct{}),
	}
}

// Claim implements DedupeStore.
func (s *MemoryDedupeStore) Claim(_ context.Context, key string) (DedupeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if _, ok := s.busy[key]; ok {
		return DedupeInProgress, nil
	}
	if _, ok := s.done[key]; ok {
		return DedupeSeen, nil
	}
	s.busy[key] = struct{}{}
	return DedupeClaimed, nil
}

// Complete implements DedupeStore.
func (s *MemoryDedupeStore) Complete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, key)
	now := s.now()
	if e, ok := s.done[key]; ok {
		e.Value.(*dedupeEntry).at = now
		s.order.MoveToBack(e)
	} else {
		s.done[key] = s.order.PushBack(&dedupeEntry{key: key, at: now})
	}
	for s.order.Len() > s.max {
		s.drop(s.order.Front())
	}
	return nil
}

// Release implements DedupeStore.
func (s *MemoryDedupeStore) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, key)
	return nil
}

// Len reports how many completed keys the store remembers.
func (s *MemoryDedupeStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	return s.order.Len()
}

func (s *MemoryDedupeStore) expire() {
	now := s.now()
	for e := s.order.Front(); e != nil && now.Sub(e.Value.(*dedupeEntry).at) >= s.ttl; e = s.order.Front() {
		s.drop(e)
	}
}

func (s *MemoryDedupeStore) drop(e *list.Element) {
	delete(s.done, e.Value.(*dedupeEntry).key)
	s.order.Remove(e)
}
