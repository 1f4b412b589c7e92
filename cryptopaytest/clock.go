package cryptopaytest

import (
	"context"
	"time"
)

// Now returns the server's clock: the start time plus the real time elapsed
// plus everything Advance added. Timestamps on the wire come from it,
// truncated to milliseconds.
func (s *Server) Now() time.Time { return s.clock.now() }

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
