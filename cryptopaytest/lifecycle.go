package cryptopaytest

import (
	"fmt"
	"time"
)

// lifecycleStatus is a status type with the SDK's lifecycle table behind
// it (cryptopay.PaymentStatus, cryptopay.PayoutStatus).
type lifecycleStatus[S any] interface {
	~string
	IsKnown() bool
	IsFinal() bool
	CanMoveTo(S) bool
}

// setStatus is the one status setter behind SetPaymentStatus and
// SetPayoutStatus: it refuses a status the API does not name (ErrInvalid),
// an unknown id (ErrNotFound) and a move the SDK's lifecycle table does not
// allow (ErrTransition, naming both statuses); setting the status an object
// already has is a no-op. find looks the object up and returns its current
// status; apply makes the move (its own checks, amounts, the webhook).
// Both run under s.mu.
func setStatus[S lifecycleStatus[S], T any](s *Server, kind, id string, st S,
	find func(id string, now time.Time) (*T, S, bool), apply func(obj *T, st S, now time.Time) error) error {
	if !st.IsKnown() {
		return fmt.Errorf("%w: %q is not a %s status", ErrInvalid, st, kind)
	}
	now := s.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, from, ok := find(id, now)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s %s", ErrNotFound, kind, id)
	case from == st:
		return nil
	case from.IsFinal():
		return fmt.Errorf("%w: %s %s is %s, which is final; it cannot move to %s", ErrTransition, kind, id, from, st)
	case !from.CanMoveTo(st):
		return fmt.Errorf("%w: %s %s cannot move from %s to %s", ErrTransition, kind, id, from, st)
	}
	return apply(obj, st, now)
}
