//go:build !race

package replicatest_test

const raceDetector = false
