// Package pgstoretest runs a throwaway PostgreSQL server for the tests of
// code that uses pgstore (the CLI's payout-queue commands, a merchant's
// own queue tests): initdb into a temporary directory, then postgres on a
// free loopback port, tuned for speed with fsync off, so never point it
// at data you keep. It is the harness pgstore's own tests use.
//
// As root, the server runs as the user "nobody". It dies with the test
// binary (a parent-death signal), also on a panic or a timeout.
//
// Call Main from TestMain and Need from each test:
//
//	func TestMain(m *testing.M) { os.Exit(pgstoretest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		pool := pgstoretest.Need(t).Pool(t, 8)
//		...
//	}
//
// Without the PostgreSQL binaries the tests that Need a server skip with
// a notice printed even without -v; with CI=true Main fails instead.
package pgstoretest

import (
	"testing"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// Server is one running test server: DSN, Pool, Restart, Stop, Close, and
// for tests of what survives a crash: Crash, StopImmediate,
// PauseWALWriter, WaitWALWriterAsleep.
type Server = pgtest.Server

// ErrNoPostgres means the PostgreSQL binaries were not found.
var ErrNoPostgres = pgtest.ErrNoPostgres

// Main starts the test binary's shared server, runs the tests and stops
// the server: os.Exit(pgstoretest.Main(m)) from TestMain. Without
// PostgreSQL it returns 1 when CI=true; otherwise it prints a notice and
// the tests that Need the server skip.
func Main(m *testing.M) int { return pgtest.Main(m) }

// Need returns the shared server, or skips the test (with the notice) when
// there is none.
func Need(t testing.TB) *Server {
	t.Helper()
	return pgtest.Need(t)
}

// Name returns a fresh lower-case identifier starting with prefix, for a
// test's own table.
func Name(prefix string) string { return pgtest.Name(prefix) }
