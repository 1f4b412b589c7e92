package pgstore

import (
	"errors"
	"time"
)

// ErrInvalidOption is returned (wrapped) for a bad option or
// configuration (NewDedupeStore, NewWakeupBus, NewQueue, NewTracker,
// NewBooks) and for a call its configuration cannot serve (a Run without
// a Client, a Track without the caller's transaction).
var ErrInvalidOption = errors.New("pgstore: invalid option")

// Errors of the moves.
var (
	// ErrUnknownMove: no move has this name, or it needs a store the
	// caller has not got.
	ErrUnknownMove = errors.New("pgstore: no such operator's move")
	// ErrChanged: what the person confirmed is no longer what the record
	// says (an anomaly replaced or merged, a set of intents changed).
	// Nothing changed: show it again.
	ErrChanged = errors.New("pgstore: the record changed since it was shown")
)

// setDefault sets *d to def when *d is not positive: a zero option means
// the default.
func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// cmpOr returns a, or b when a is the zero value.
func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
