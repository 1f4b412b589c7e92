//go:build race

package oapibench_test

// raceDetector: under the race detector sync.Pool drops what it is given
// at random, so allocation counts are not the program's.
const raceDetector = true
