//go:build !race

package cryptopaytest

const raceDetector = false
