// Package toolnotice reports a test that cannot run because a program it
// needs (Prism, Chromium, redis-server, PostgreSQL, the go command) is not
// installed. `go test ./...` hides the output of a package that passes, so
// a skip alone goes unseen: without CI the notice is also written where the
// person or the CI log running `go test` sees it (see Sinks). With CI=true a
// missing program fails the test instead.
package toolnotice

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Missing fails t under CI=true, and otherwise writes the notice (Sinks)
// and skips t. what names the program and how to install it, for example
// "redis-server is not on PATH (apt-get install redis-server)".
func Missing(t testing.TB, what string) {
	t.Helper()
	missing(t, what, os.Getenv("CI") == "true", Sinks())
}

func missing(t testing.TB, what string, ci bool, sinks []string) {
	t.Helper()
	if ci {
		t.Fatalf("%s, and CI=true requires it", what)
		return
	}
	Notify(sinks, what)
	t.Skipf("SKIPPED: %s; CI=true makes this a failure", what)
}

// Sinks lists where a notice may go, best first: on Linux the standard
// error of the process that started the test binary (the go command, whose
// own output is what a terminal, a pipe or a CI log shows even when it
// hides the test's), then the controlling terminal ("/dev/tty").
func Sinks() []string {
	var s []string
	if runtime.GOOS == "linux" {
		s = append(s, "/proc/"+strconv.Itoa(os.Getppid())+"/fd/2")
	}
	return append(s, "/dev/tty")
}

// told holds the notices written, so that each is written once per test
// binary however many tests need the program.
var told sync.Map

// Notify writes "SKIPPED: what" once to the first of sinks that opens for
// writing; when none does it writes nothing.
func Notify(sinks []string, what string) {
	if _, dup := told.LoadOrStore(strings.Join(sinks, "\x00")+"\x00"+what, true); dup {
		return
	}
	for _, path := range sinks {
		if overwritten(path) {
			continue // the go command's next line would overwrite it: try the terminal
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			continue // not there: no parent's stderr to open, no terminal
		}
		_, _ = fmt.Fprintf(f, "SKIPPED: %s; CI=true makes this a failure\n", what)
		_ = f.Close()
		return
	}
}

// overwritten reports whether a line written to path, a process's file
// descriptor ("/proc/PID/fd/N"), would be overwritten by that process's
// next write: the descriptor is a regular file not opened for appending
// (`go test ./... > log`), whose offset our write does not move. A pipe,
// a terminal, a file opened with >> and any other path are not.
func overwritten(path string) bool {
	dir, fd := filepath.Split(path)
	if !strings.HasPrefix(dir, "/proc/") || !strings.HasSuffix(dir, "/fd/") {
		return false
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	info, err := os.ReadFile(strings.TrimSuffix(dir, "fd/") + "fdinfo/" + fd)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(info)) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&uint64(os.O_APPEND) == 0
		}
	}
	return false
}
