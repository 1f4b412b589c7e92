package cryptopaytest

import "time"

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

// expireDue expires every waiting payment past its expiredAt, taking them
// from the expiry queue (earliest first) rather than scanning every payment.
func (s *Server) expireDue() {
	now := s.Now()
	s.mu.RLock()
	due := s.expiry.due(now)
	s.mu.RUnlock()
	if !due {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		p, ok := s.expiry.popDue(now)
		if !ok {
			return
		}
		s.expireLocked(p, now)
	}
}
