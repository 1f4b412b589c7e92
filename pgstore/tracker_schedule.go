package pgstore

import (
	"math/rand/v2"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

// When a tracked payment is read next: the backstop's schedule from its
// expiredAt, which Track (the first read) and the worker share.

// next is when and in which state a payment is read next.
type next struct {
	state     TrackState
	at        *time.Time // nil: not polled
	latePolls int
	fail      Failure // the read's or the callback's failure, recorded with it (none: reset)
}

// schedule derives the next read from the payment's expiredAt and status:
// every OpenEvery before expiredAt, once just after it (a tenth of
// OpenEvery later), then from LateMin doubling to LateMax until Horizon
// after expiredAt; nothing for a final status or a success (a webhook
// still wakes the payment). Every wait is drawn from [3/4 of it, all of
// it], so payments tracked together spread out.
func (t *Tracker) schedule(now, expiredAt time.Time, st cryptopay.PaymentStatus, latePolls int) next {
	if st.IsFinal() || st.IsSuccess() {
		return next{state: TrackClosed}
	}
	if expiredAt.IsZero() {
		at := now.Add(jitter(t.cfg.OpenEvery))
		return next{state: TrackOpen, at: &at}
	}
	afterExpiry := expiredAt.Add(t.cfg.OpenEvery / 10)
	if now.Before(afterExpiry) {
		at := now.Add(jitter(t.cfg.OpenEvery))
		if at.After(afterExpiry) {
			at = afterExpiry
		}
		return next{state: TrackOpen, at: &at}
	}
	horizon := expiredAt.Add(t.cfg.Horizon)
	if !now.Before(horizon) {
		return next{state: TrackClosed, latePolls: latePolls}
	}
	d := t.cfg.LateMin
	for i := 0; i < latePolls && d < t.cfg.LateMax; i++ {
		if d > t.cfg.LateMax/2 { // doubling would pass LateMax (or overflow)
			d = t.cfg.LateMax
			break
		}
		d *= 2
	}
	at := now.Add(jitter(min(d, t.cfg.LateMax)))
	if at.After(horizon) {
		at = horizon
	}
	return next{state: TrackLate, at: &at, latePolls: latePolls + 1}
}

// jitter draws a wait from [3/4 d, d].
func jitter(d time.Duration) time.Duration { return d - rand.N(d/4+1) }
