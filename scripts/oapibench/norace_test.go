//go:build !race

package oapibench_test

const raceDetector = false
