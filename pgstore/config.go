package pgstore

import "time"

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
