package cryptopaytest

import "time"

// RecordRetryWaits makes s start every webhook retry at once and record the
// wait it would have slept instead; waits returns them, in order. Call it
// before the first webhook is sent.
func RecordRetryWaits(s *Server) (waits func() []time.Duration) {
	var recorded []time.Duration
	s.wh.mu.Lock()
	s.wh.afterFunc = func(d time.Duration, f func()) *time.Timer {
		recorded = append(recorded, d) // under s.wh.mu, as afterAttemptLocked is
		return time.AfterFunc(0, f)
	}
	s.wh.mu.Unlock()
	return func() []time.Duration {
		s.wh.mu.Lock()
		defer s.wh.mu.Unlock()
		return append([]time.Duration(nil), recorded...)
	}
}

// RaceDetector reports whether the tests run under the race detector (see
// raceDetector), for the external tests that run smaller under it.
const RaceDetector = raceDetector
