//go:build !race

package webhook

const raceDetector = false
