//go:build race

package replicatest_test

// raceDetector: under the race detector (the README's test command) the
// suite's own run in the root module makes fewer events (see
// TestSharedMemoryStore); CI's run without -race makes them all.
const raceDetector = true
