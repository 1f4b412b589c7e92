//go:build !race

package cryptopay_test

// raceEnabled: see wait_race_test.go.
const raceEnabled = false
