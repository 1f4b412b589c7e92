// Package pgtest runs a throwaway PostgreSQL server for the tests of
// pgstore: initdb into a temporary directory, then the postgres binary on a
// free loopback port with its unix socket in that directory, tuned for
// speed (fsync off: never use these settings for real data).
//
// The server runs with synchronous_commit off, as a merchant's database or
// role may: a COMMIT is acknowledged before its WAL is written, so a test
// that crashes the server (Crash, StopImmediate) loses every such commit
// the WAL writer had not written yet, unless the transaction turned
// synchronous_commit on for itself. fsync off does not hide that loss: it
// only skips the flush from the kernel's page cache to the disk, which a
// crash of PostgreSQL's processes (not of the machine) keeps; what the
// crash loses is the WAL still in PostgreSQL's shared memory.
//
// Postgres refuses to run as root; when the test runs as root, the server
// runs as the user "nobody" and the directory is handed to it. The server
// is a direct child of the test process with a parent-death signal, so it
// dies with the test binary even when a test panics or times out.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoPostgres means the PostgreSQL binaries were not found.
var ErrNoPostgres = errors.New("pgtest: PostgreSQL binaries (initdb, postgres) not found: install PostgreSQL 15 or put pg_config on the PATH")

// Server is one running test server. Its methods are safe for concurrent
// use.
type Server struct {
	// Port is the loopback TCP port the server listens on.
	Port int

	bindir string
	dir    string // owned temp dir: data/, sock/, postgres.log
	cred   *syscall.Credential

	settings map[string]string // -c name=value, see StartWith

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd exits
	paused int           // the WAL writer's pid while PauseWALWriter holds it
}

// defaultSettings are the server's settings unless StartWith says
// otherwise: fast and unsafe for real data (see the package comment).
var defaultSettings = map[string]string{
	"listen_addresses":   "127.0.0.1",
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
	"max_connections":    "300",
	"shared_buffers":     "64MB",
	"max_wal_size":       "1GB",
	"logging_collector":  "off",
	"log_min_messages":   "warning",
}

// BinDir returns the directory of initdb and postgres: `pg_config
// --bindir`, else the directory of initdb on the PATH.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", ErrNoPostgres
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	dir := filepath.Dir(p)
	if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
		return "", ErrNoPostgres
	}
	return dir, nil
}

// Start runs initdb and starts the server with the default settings.
// Close it when done.
func Start() (*Server, error) { return StartWith(nil) }

// StartWith is Start with settings (postgresql.conf names and values, as
// given to postgres -c) over the defaults: for example
// {"wal_writer_delay": "10s"} keeps asynchronous commits in shared memory
// for up to 10 s (three times that in the worst case), so that a Crash
// right after one loses it reproducibly.
func StartWith(settings map[string]string) (*Server, error) {
	bindir, err := BinDir()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", "pgstore-test-")
	if err != nil {
		return nil, err
	}
	s := &Server{bindir: bindir, dir: dir, settings: map[string]string{}}
	for k, v := range defaultSettings {
		s.settings[k] = v
	}
	for k, v := range settings {
		s.settings[k] = v
	}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sock"), 0o700); err != nil {
		return fail(err)
	}
	if os.Geteuid() == 0 {
		if s.cred, err = nobody(); err != nil {
			return fail(err)
		}
		if err := chownAll(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fail(err)
		}
	}
	if err := s.initdb(); err != nil {
		return fail(err)
	}
	if s.Port, err = freePort(); err != nil {
		return fail(err)
	}
	if err := s.Start(); err != nil {
		return fail(err)
	}
	return s, nil
}

// DSN returns a connection string for database postgres as the superuser
// postgres over TCP.
func (s *Server) DSN() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=5", s.Port)
}

// initdb fills s.dir/data: a copy of a cached template cluster when there
// is one (initdb costs seconds, a copy a fraction of one), else a fresh
// initdb, which then becomes the template for the next test binary.
func (s *Server) initdb() error {
	data := filepath.Join(s.dir, "data")
	tmpl := s.templateDir()
	if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err == nil {
		if exec.Command("cp", "-a", tmpl, data).Run() == nil {
			return nil
		}
		_ = os.RemoveAll(data)
	}
	if err := s.runInitdb(data); err != nil {
		return err
	}
	// Publish the template atomically: copy aside, then rename into place.
	tmp, err := os.MkdirTemp(filepath.Dir(tmpl), filepath.Base(tmpl)+".tmp-")
	if err != nil {
		return nil
	}
	if exec.Command("cp", "-a", data, filepath.Join(tmp, "data")).Run() != nil ||
		os.Rename(filepath.Join(tmp, "data"), tmpl) != nil {
		_ = os.RemoveAll(tmp)
		return nil
	}
	_ = os.RemoveAll(tmp)
	return nil
}

// templateDir names the cached cluster of this user and PostgreSQL build.
func (s *Server) templateDir() string {
	ver, _ := os.ReadFile(filepath.Join(s.bindir, "..", "share", "postgresql", "VERSION"))
	h := fnv.New64a()
	h.Write([]byte(s.bindir))
	h.Write([]byte(strings.Join(initdbArgs, " ")))
	h.Write(ver)
	if out, err := exec.Command(filepath.Join(s.bindir, "postgres"), "--version").Output(); err == nil {
		h.Write(out)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pgstore-initdb-%d-%x", os.Geteuid(), h.Sum64()))
}

// initdbArgs are initdb's flags besides -D (part of the template's name).
var initdbArgs = []string{"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"}

func (s *Server) runInitdb(data string) error {
	cmd := exec.Command(filepath.Join(s.bindir, "initdb"), append([]string{"-D", data}, initdbArgs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out.Bytes())
	}
	return nil
}

// Start starts the server (again, after Stop) on the same port and data
// directory, and returns once it accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.Port), "-k", filepath.Join(s.dir, "sock")}
	names := make([]string, 0, len(s.settings))
	for k := range s.settings {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		args = append(args, "-c", k+"="+s.settings[k])
	}
	cmd := exec.Command(filepath.Join(s.bindir, "postgres"), args...)
	// Pdeathsig kills the server if the test binary dies (a panic, a
	// timeout, SIGKILL): no server outlives its test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := s.waitReady(done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		s.cmd, s.done = nil, nil
		return err
	}
	return nil
}

// waitReady polls until the server accepts a connection, it exits, or 30 s
// pass.
func (s *Server) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgconn.Connect(ctx, s.DSN())
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited at startup; log:\n%s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres not ready after 30 s (%v); log:\n%s", err, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (fast mode: open transactions are rolled
// back, committed data is kept) and waits for it to exit.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if s.paused != 0 {
		_ = syscall.Kill(s.paused, syscall.SIGCONT) // a clean stop writes its WAL
		s.paused = 0
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	s.awaitExit()
	return nil
}

// StopImmediate shuts the server down in immediate mode (SIGQUIT, as
// `pg_ctl stop -m immediate`): every process exits at once, nothing is
// flushed or checkpointed, and the next Start recovers from the WAL on
// disk, without the asynchronous commits the WAL writer had not written.
// It waits for the server to exit (the postmaster waits for its children).
func (s *Server) StopImmediate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("pgtest: server not running")
	}
	if s.paused != 0 {
		// Its SIGQUIT is pending when it resumes, and runs first: it exits
		// without writing anything.
		_ = syscall.Kill(s.paused, syscall.SIGQUIT)
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	if s.paused != 0 {
		_ = syscall.Kill(s.paused, syscall.SIGCONT)
		s.paused = 0
	}
	s.awaitExit()
	return nil
}

// Crash kills the server as a crash would: SIGKILL to the postmaster and
// every backend and helper process, with no shutdown of any kind. Commits
// whose WAL was still in shared memory (with synchronous_commit off) are
// lost. The postmaster is frozen first (SIGSTOP), so that it neither
// forks nor reacts while its children are found and killed (each child is
// in a session of its own, so no one signal reaches them all). It returns
// once every process is gone; Start brings the server back on the same
// port and data directory, where it recovers from the WAL.
func (s *Server) Crash() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("pgtest: server not running")
	}
	pm := s.cmd.Process.Pid
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgtest: stopping the postmaster: %w", err)
	}
	kids := children(pm)
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(pm, syscall.SIGKILL)
	<-s.done
	s.cmd, s.done, s.paused = nil, nil, 0
	// A new postmaster refuses to start while an old process still holds
	// the shared memory.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []int
		for _, pid := range kids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: processes %v of the server still alive 30 s after SIGKILL", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitWALWriterAsleep polls (for up to 30 s) until the WAL writer has
// started and gone to sleep between two of its rounds: from then on, with
// a long wal_writer_delay, an asynchronous commit stays in shared memory
// until the next round, so that a Crash loses it. (The WAL writer starts
// after the server accepts connections, and its first round would write
// the commits made before it.)
func (s *Server) WaitWALWriterAsleep(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := pgconn.Connect(ctx, s.DSN())
		if err == nil {
			res := c.ExecParams(ctx, "SELECT 1 FROM pg_stat_activity WHERE backend_type = 'walwriter' AND wait_event = 'WalWriterMain'",
				nil, nil, nil, nil).Read()
			_ = c.Close(ctx)
			if err = res.Err; err == nil && len(res.Rows) == 1 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: the WAL writer is not asleep after 30 s (%v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PauseWALWriter stops the WAL writer process (SIGSTOP) until the server
// goes down (Stop lets it finish its work first; Crash and StopImmediate
// do not). Asynchronous commits then stay in shared memory however busy
// the server is (up to wal_buffers), as behind a WAL writer that is late,
// and a Crash or StopImmediate loses every one of them. A synchronous
// commit writes its WAL itself and is not affected.
func (s *Server) PauseWALWriter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("pgtest: server not running")
	}
	if s.paused != 0 {
		return nil
	}
	for _, pid := range children(s.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.HasPrefix(string(cmdline), "postgres: walwriter") {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return fmt.Errorf("pgtest: pausing the WAL writer: %w", err)
			}
			s.paused = pid
			return nil
		}
	}
	return errors.New("pgtest: no WAL writer process found")
}

// procStat returns the fields of /proc/pid/stat after the command name:
// state, ppid, ... (nil if there is no such process).
func procStat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	// pid (comm) state ppid ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// alive reports whether pid is a live process (a zombie is not: it holds
// no memory, shared or not).
func alive(pid int) bool {
	f := procStat(strconv.Itoa(pid))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(e.Name()); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// Restart stops the server and starts it again on the same port with the
// same data.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Log returns the server's log so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return string(b)
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	_ = s.Stop()
	_ = os.RemoveAll(s.dir)
}

// nobody returns the credentials of the user nobody.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root and no user nobody to run postgres as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: odd ids for nobody: %q %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func chownAll(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// removeStale deletes the directories of earlier test servers whose test
// process is gone (killed before it could clean up).
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgstore-test-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
}

// childPortEnv carries the shared server's port to a child test process
// (a crash test), which uses it instead of starting its own.
const childPortEnv = "PGTEST_CHILD_PORT"

var (
	shared     *Server
	skipReason string
)

// ExampleDSNEnv is the variable the package's Examples read their
// database from, as a merchant's program would: Main sets it to the shared
// server's DSN.
const ExampleDSNEnv = "DATABASE_URL"

// Main starts the shared server of the test binary, runs the tests and
// stops it; call it from TestMain: os.Exit(pgtest.Main(m)). It sets
// ExampleDSNEnv to the server's DSN, so the Examples run against it.
// Without PostgreSQL it returns 1 when CI=true; otherwise it prints a loud
// notice, the tests that Need the server skip, and so do the Examples
// (added to -test.skip: an Example cannot skip itself).
func Main(m *testing.M) int {
	if p := os.Getenv(childPortEnv); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: bad %s=%q\n", childPortEnv, p)
			return 1
		}
		shared = &Server{Port: port}
		_ = os.Setenv(ExampleDSNEnv, shared.DSN())
		return m.Run()
	}
	srv, err := Start()
	switch {
	case errors.Is(err, ErrNoPostgres) && os.Getenv("CI") != "true":
		skipReason = "SKIPPING: " + err.Error()
		fmt.Fprintf(os.Stderr, "\n*** %s (the Examples too) ***\n\n", skipReason)
		tellTerminal("/dev/tty", err.Error()+" (the Examples too)")
		if err := skipExamples(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			return 1
		}
	case err != nil:
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	default:
		_ = os.Setenv(ExampleDSNEnv, srv.DSN())
	}
	shared = srv
	code := m.Run()
	if srv != nil {
		srv.Close()
	}
	return code
}

// skipExamples adds the Examples to -test.skip, keeping what the command
// line skips already.
func skipExamples() error {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.skip")
	if f == nil {
		return errors.New("no -test.skip flag to skip the Examples with")
	}
	skip := "^Example"
	if old := f.Value.String(); old != "" {
		skip = old + "|" + skip
	}
	return flag.Set("test.skip", skip)
}

// Need returns the shared server, or skips the test (loudly) when there is
// none.
func Need(t testing.TB) *Server {
	t.Helper()
	if shared == nil {
		if skipReason == "" {
			t.Fatal("pgtest: no server; call pgtest.Main from TestMain")
		}
		t.Skip(skipReason)
	}
	return shared
}

// ChildEnv returns the environment for a child test process that should
// use this server.
func (s *Server) ChildEnv() []string {
	return append(os.Environ(), childPortEnv+"="+strconv.Itoa(s.Port))
}

// Pool returns a pool on the server, closed when the test ends.
func (s *Server) Pool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Name returns a fresh lower-case identifier starting with prefix, for a
// test's own table or channel.
func Name(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// PID returns the server's process id (0 when stopped).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Dir returns the server's temporary directory.
func (s *Server) Dir() string { return s.dir }

// awaitExit waits for the signalled server to exit (killing it after 20
// s) and forgets it; s.mu is held.
func (s *Server) awaitExit() {
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}
