package cryptopay

import "context"

// Wakeup is a hint, carried by a WakeupBus, that a payment or payout changed.
// It is never a status: a Client that receives one re-reads the object
// through the API before a wait acts on it.
type Wakeup struct {
	// Kind is "payment" or "payout".
	Kind string `json:"kind"`
	// ID is the payment or payout id.
	ID string `json:"id"`
	// Source identifies the publishing Client (random, per process), so a
	// Client can skip the echo of its own hints.
	Source string `json:"source,omitempty"`
}

// WakeupBus carries Wakeup hints between Clients in different processes (the
// replicas of a service), so that a webhook received by one replica ends the
// waits on every other replica within milliseconds. redisstore and pgstore
// provide implementations (Redis pub/sub, Postgres LISTEN/NOTIFY).
//
// Delivery is best effort: a lost hint costs only latency, because waits keep
// polling. Implementations must be safe for concurrent use.
type WakeupBus interface {
	// Publish sends w to every subscriber on the bus, this process's
	// included.
	Publish(ctx context.Context, w Wakeup) error
	// Subscribe calls fn for every hint published on the bus until stop is
	// called. fn runs on the bus's own goroutine and must not block. stop
	// waits until fn is no longer running and is safe to call twice.
	Subscribe(fn func(Wakeup)) (stop func(), err error)
}
