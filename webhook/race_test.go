//go:build race

package webhook_test

// raceEnabled: the race detector allows at most 8,128 live goroutines, so
// the scale tests run smaller under it.
const raceEnabled = true
