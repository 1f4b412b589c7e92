//go:build race

package cryptopay

// raceDetector: under the race detector sync.Pool drops what it is given
// at random, so allocation counts are not the program's; such tests run
// without -race in CI (the newest Go's run).
const raceDetector = true
