package cryptopaytest

import "errors"

// Errors returned by the methods that drive the server's state. They are
// wrapped with details; match them with errors.Is.
var (
	// ErrNotFound: no payment or payout has that id.
	ErrNotFound = errors.New("cryptopaytest: no such object")
	// ErrTransition: the object cannot move to the requested status (or
	// receive a payment) from the status it is in.
	ErrTransition = errors.New("cryptopaytest: status change not allowed")
	// ErrInvalid: an argument is not acceptable (for example an amount that
	// is not positive, or a status the API does not define).
	ErrInvalid = errors.New("cryptopaytest: invalid argument")
)
