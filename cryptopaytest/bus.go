package cryptopaytest

import (
	"context"
	"sync"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// MemoryBus is a cryptopay.WakeupBus inside one process: Publish hands the
// hint to every subscriber at once, on the publishing goroutine. It lets a
// test run several Clients as replicas in one process (cryptopay.WithWakeupBus
// on each); between processes use redisstore.NewWakeupBus or
// pgstore.NewWakeupBus. Safe for concurrent use; the zero value is ready.
type MemoryBus struct {
	mu   sync.Mutex
	next int
	subs map[int]func(cryptopay.Wakeup)
}

// NewMemoryBus returns an empty MemoryBus.
func NewMemoryBus() *MemoryBus { return new(MemoryBus) }

// Publish calls every subscriber with w and returns nil.
func (b *MemoryBus) Publish(_ context.Context, w cryptopay.Wakeup) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, fn := range b.subs {
		fn(w)
	}
	return nil
}

// Subscribe adds fn. The stop func it returns removes fn; once it has
// returned, fn is not running and is not called again.
func (b *MemoryBus) Subscribe(fn func(cryptopay.Wakeup)) (stop func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = make(map[int]func(cryptopay.Wakeup))
	}
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}, nil
}
