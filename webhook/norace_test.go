//go:build !race

package webhook_test

// raceEnabled: see wait_race_test.go.
const raceEnabled = false
