package cryptopaytest

import (
	"container/heap"
	"time"
)

// expiryEntry is a payment that was waiting when it was queued, due at at
// (its expiredAt in Unix nanoseconds).
type expiryEntry struct {
	at int64
	p  *payment
}

// expiryQueue is a min-heap of payments by expiredAt, so that expiring the
// due ones costs O(due · log n) instead of a scan of every payment. An
// entry stays until its time comes even if the payment was paid meanwhile;
// it is dropped then. Guarded by Server.mu.
type expiryQueue []expiryEntry

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// Push is for container/heap; use add.
func (q *expiryQueue) Push(x any) { *q = append(*q, x.(expiryEntry)) }

// Pop is for container/heap; use popDue.
func (q *expiryQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = expiryEntry{}
	*q = old[:len(old)-1]
	return e
}

func (q *expiryQueue) add(p *payment) {
	heap.Push(q, expiryEntry{at: p.expiredAt.UnixNano(), p: p})
}

// due reports whether the earliest entry is due at now.
func (q expiryQueue) due(now time.Time) bool {
	return len(q) > 0 && q[0].at <= now.UnixNano()
}

// popDue removes and returns the earliest entry if it is due at now.
func (q *expiryQueue) popDue(now time.Time) (*payment, bool) {
	if !q.due(now) {
		return nil, false
	}
	return heap.Pop(q).(expiryEntry).p, true
}
