package pgstore

import (
	"errors"
	"strings"
	"time"
)

// The tracker's small helpers. They repeat a few lines of the payout
// queue's on purpose: the two engines change independently.

// trackRecordTimeout bounds a worker's database write after its API read,
// which runs even when Run's ctx has ended.
const trackRecordTimeout = 10 * time.Second

// trackMaxText caps the anomaly text a tracked payment keeps.
const trackMaxText = 1024

// errTrackLeaseLost: the payment's lease passed to another worker, which
// records instead; this one records nothing.
var errTrackLeaseLost = errors.New("pgstore: tracked payment's lease lost")

// trackDefault sets *d to def when it is not positive.
func trackDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// orText is a unless it is empty, else b.
func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// trackText keeps anomaly text to one capped, valid line.
func trackText(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > trackMaxText {
		s = strings.ToValidUTF8(s[:trackMaxText], "") + "…"
	}
	return s
}
