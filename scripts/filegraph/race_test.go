//go:build race

package main

// raceDetector: under the race detector (the README's test command) the
// packages of the companion modules are left out of TestNoMutualFilePairs:
// type-checking them compiles their dependencies (Redis, PostgreSQL,
// OpenTelemetry, Chromium's protocol) for the race detector, about 45 s of
// a fresh clone's 2 cores, for a check the race detector adds nothing to.
// CI's run without -race (.ci/run, the newest Go's step) checks them all.
const raceDetector = true
