package cryptopaytest

import (
	"context"
	"sync/atomic"
	"time"
)

// Now returns the server's clock: the start time plus the real time elapsed
// plus everything Advance added. Timestamps on the wire come from it,
// truncated to milliseconds.
func (s *Server) Now() time.Time { return s.clock.now() }

// Advance moves the server's clock forward by d (a negative d is ignored).
// Waiting payments whose expiredAt has passed become expired at once and
// their webhooks are sent.
func (s *Server) Advance(d time.Duration) {
	if d > 0 {
		s.clock.offset.Add(int64(d))
	}
	s.expireDue()
}

// sweep expires due payments once per sweepInterval, so an expiry webhook
// is sent even when nobody reads the payment. Each tick looks only at the
// earliest expiry (expireDue), not at every payment.
func (s *Server) sweep() {
	t := time.NewTicker(s.cfg.sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.expireDue()
		}
	}
}

// clock is start + real time elapsed + offset.
type clock struct {
	start     time.Time
	realStart time.Time
	offset    atomic.Int64
}

func (c *clock) now() time.Time {
	return c.start.Add(time.Since(c.realStart) + time.Duration(c.offset.Load()))
}

// sleep waits d, or until ctx ends or the server closes; false if cut short.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}
