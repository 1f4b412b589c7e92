//go:build race

package webhook

// raceDetector: the race detector's shadow memory and slower code change
// what heap and timing measurements see; such tests run without -race in CI.
const raceDetector = true
