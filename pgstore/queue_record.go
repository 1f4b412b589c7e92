package pgstore

import (
	"context"
	"errors"
	"sync"
)

// setRow is one worker's change of a held intent, as the set statement
// takes it (see queueSQL.set).
type setRow struct {
	orderID, to, verdict, errText string
	token                         []byte
	tries                         int
	afterMicros                   int64
	payoutID, payoutStatus        string
	release, due, logged          bool
	hold, from, requestID         string
	failClass, failText           string
	done                          chan error // buffered: the sender never waits for the worker
}

// errLostLease: the intent's lease passed to another worker (or an operator
// moved it); this worker records nothing more and sends nothing.
var errLostLease = errors.New("pgstore: lease lost")

// recorder sends the workers' changes (Queue.set) in batches, a group
// commit: a change waits only while another batch is on the wire, then
// goes with every change that waited, in one statement. At low load each
// change is a statement of its own; under load one statement records
// many intents, each row only by its own lease holder and with its own
// history row, committed together. The worker that sends a batch is one
// of those waiting; none waits for a timer, and none sends more than one
// batch.
type recorder struct {
	mu      sync.Mutex
	pending []*setRow
	turn    chan struct{} // held (capacity 1) by the worker sending a batch
}

func newRecorder() recorder { return recorder{turn: make(chan struct{}, 1)} }

// record adds r to the next batch and returns its outcome: nil once
// committed, errLostLease if the row was not this worker's to change, or
// the statement's error. send sends a batch and tells each row its
// outcome.
func (rc *recorder) record(ctx context.Context, r *setRow, send func(context.Context, []*setRow)) error {
	rc.mu.Lock()
	rc.pending = append(rc.pending, r)
	rc.mu.Unlock()
	for {
		select {
		case err := <-r.done:
			return err
		default:
		}
		select {
		case err := <-r.done:
			return err
		case rc.turn <- struct{}{}:
			// Any batch sent before has told its rows: r is either told
			// or in this one.
			rc.mu.Lock()
			batch := rc.pending
			rc.pending = nil
			rc.mu.Unlock()
			if len(batch) > 0 {
				send(ctx, batch)
			}
			<-rc.turn
		}
	}
}
