package cryptopaytest

import (
	"sync"
	"sync/atomic"
	"time"
)

// Fault describes how the next requests of a route misbehave. The zero
// Fault (besides Times) changes nothing.
//
// Without Process the request is not handled at all (nothing is created):
// after Delay the connection is dropped (Drop), or a fault response is sent
// (Status, default 500, with Body, default {"code":"fault_injected",...}),
// or, with only Delay set, the request is then handled normally (a slow
// server).
//
// With Process the request is handled for real first (a payout is created
// and the balance debited), then Delay stalls, then the real answer is
// replaced: dropped (Drop), given another status (Status, with Body or the
// default fault body), another body (Body) or cut short (Truncate). This is
// the ambiguous case: the server acted, the client cannot know.
type Fault struct {
	// Times is how many requests of the route the fault hits (0 means 1).
	Times int
	// Process handles the request for real before the fault is applied.
	Process bool
	// Status replaces the response status (without Process, 0 means 500
	// when a fault response is sent).
	Status int
	// Body replaces the response body, raw (an HTML page, "{not json", a
	// wrong-shape JSON ...). Empty means the default fault body with Status,
	// or the real body with Process and no Status; see EmptyBody for none.
	Body string
	// EmptyBody sends no body at all (Content-Length 0), overriding Body:
	// with Status 200 it is the "empty success" a client must refuse.
	EmptyBody bool
	// ContentType replaces the Content-Type (default application/json).
	ContentType string
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string
	// Delay stalls before answering. It ends early when the client goes
	// away or the server closes; the request is then not answered (and,
	// without Process, not handled).
	Delay time.Duration
	// Drop closes the connection without a response, with a TCP reset.
	Drop bool
	// Truncate sends the body cut in half under a Content-Length for the
	// whole body, then closes the connection.
	Truncate bool
}

// responds reports whether the fault sends a response of its own.
func (f Fault) responds() bool {
	return f.Status != 0 || f.Body != "" || f.EmptyBody || f.ContentType != "" || f.RetryAfter != "" || f.Truncate
}

type faultEntry struct {
	f    Fault
	left int
}

// faultQueues holds the queued faults per route; queued lets the hot path
// skip the lock when no fault is queued.
type faultQueues struct {
	queued [numRoutes]atomic.Int32
	mu     sync.Mutex
	q      [numRoutes][]faultEntry
}

func (fq *faultQueues) add(idx int, f Fault) {
	left := max(f.Times, 1)
	fq.mu.Lock()
	fq.q[idx] = append(fq.q[idx], faultEntry{f: f, left: left})
	fq.queued[idx].Add(1)
	fq.mu.Unlock()
}

func (fq *faultQueues) next(idx int) (Fault, bool) {
	if fq.queued[idx].Load() == 0 {
		return Fault{}, false
	}
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if len(fq.q[idx]) == 0 {
		return Fault{}, false
	}
	e := &fq.q[idx][0]
	f := e.f
	if e.left--; e.left == 0 {
		fq.q[idx] = fq.q[idx][1:]
		fq.queued[idx].Add(-1)
	}
	return f, true
}

func (fq *faultQueues) pending(idx int) int {
	fq.mu.Lock()
	defer fq.mu.Unlock()
	n := 0
	for _, e := range fq.q[idx] {
		n += e.left
	}
	return n
}

func (fq *faultQueues) clear() {
	fq.mu.Lock()
	defer fq.mu.Unlock()
	for i := range fq.q {
		fq.q[i] = nil
		fq.queued[i].Store(0)
	}
}
