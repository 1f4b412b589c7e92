//go:build !race

package cryptopay

const raceDetector = false
