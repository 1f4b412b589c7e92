// Package toolnotice reports a test that cannot run because a program it
// needs (Prism, Chromium, redis-server, PostgreSQL, the go command) is not
// installed. `go test ./...` hides the output of a package that passes, so
// a skip alone goes unseen: without CI the notice is also written to the
// controlling terminal, when there is one. With CI=true a missing program
// fails the test instead.
package toolnotice

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Missing fails t under CI=true, and otherwise tells the terminal and skips
// t. what names the program and how to install it, for example
// "redis-server is not on PATH (apt-get install redis-server)".
func Missing(t testing.TB, what string) {
	t.Helper()
	missing(t, what, os.Getenv("CI") == "true", "/dev/tty")
}

func missing(t testing.TB, what string, ci bool, tty string) {
	t.Helper()
	if ci {
		t.Fatalf("%s, and CI=true requires it", what)
		return
	}
	Notify(tty, what)
	t.Skipf("SKIPPED: %s; CI=true makes this a failure", what)
}

// told holds the notices written, so that each is written once per test
// binary however many tests need the program.
var told sync.Map

// Notify writes "SKIPPED: what" once to the terminal at tty ("/dev/tty"
// for the controlling terminal); without a terminal it writes nothing.
func Notify(tty, what string) {
	if _, dup := told.LoadOrStore(tty+"\x00"+what, true); dup {
		return
	}
	f, err := os.OpenFile(tty, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return // no controlling terminal: CI, or output piped away
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "SKIPPED: %s; CI=true makes this a failure\n", what)
}
