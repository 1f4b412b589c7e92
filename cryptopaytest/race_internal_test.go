//go:build race

package cryptopaytest

// raceDetector: under the race detector (the README's test command) the
// memory test runs smaller and counts no heap bytes, which the detector
// changes; CI's run without -race (.ci/run, the newest Go's step) runs it
// at full size with the heap bounds.
const raceDetector = true
