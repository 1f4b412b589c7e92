// Package redistest starts a real redis-server for tests: on a free
// loopback port, in a temporary directory, without persistence unless a
// restart asks for it, and stopped when the test ends.
package redistest

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by a test.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string

	bin, dir string
	port     int
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
}

// Start starts redis-server, or skips the test loudly when it is not
// installed; with CI=true a missing redis-server fails the test.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not on PATH (CI=true requires it): %v", err)
		}
		tellTerminal("/dev/tty", skipNotice[len("SKIPPING: "):])
		t.Skip(skipNotice)
	}
	s, err := launch(bin, t.TempDir())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// skipNotice is what a test says when it skips for want of redis-server.
const skipNotice = "SKIPPING: redis-server is not on PATH; install it (apt-get install redis-server) to run the Redis tests"

// launch starts redis-server in dir on a free loopback port.
func launch(bin, dir string) (*Server, error) {
	s := &Server{bin: bin, dir: dir}
	var err error
	for range 5 { // a free port can be taken between probe and start
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			s.Addr = "127.0.0.1:" + strconv.Itoa(s.port)
			return s, nil
		}
	}
	return nil, err
}

// ExampleAddrEnv is the variable the package's Examples read the Redis
// address from, as a merchant's program would: Main sets it.
const ExampleAddrEnv = "REDIS_ADDR"

// Main runs the tests with one redis-server for the package's Examples
// (the tests start their own with Start), its address in ExampleAddrEnv;
// call it from TestMain: os.Exit(redistest.Main(m)). Without redis-server
// it returns 1 when CI=true; otherwise it prints a loud notice and skips
// the Examples (added to -test.skip: an Example cannot skip itself).
func Main(m *testing.M) int {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "redis-server is not on PATH (CI=true requires it): %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "\n*** %s (the Examples too) ***\n\n", skipNotice)
		tellTerminal("/dev/tty", skipNotice[len("SKIPPING: "):]+" (the Examples too)")
		if !flag.Parsed() {
			flag.Parse()
		}
		skip := "^Example"
		if old := flag.Lookup("test.skip").Value.String(); old != "" {
			skip = old + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: %v\n", err)
			return 1
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "redisstore-examples-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := launch(bin, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: %v\n", err)
		return 1
	}
	defer s.Stop()
	_ = os.Setenv(ExampleAddrEnv, s.Addr)
	return m.Run()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs the process and waits until it answers PING.
func (s *Server) start() error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--protected-mode", "yes", "--loglevel", "warning", "--logfile", "redis.log")
	cmd.Dir = s.dir
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.port), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(s.dir + "/redis.log")
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, log)
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on port %d did not answer PING: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a new client for the server, closed when t ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// FailFastClient returns a client that neither retries a command nor
// redials (go-redis otherwise hides an outage of a second or two), so a
// test sees exactly when Redis is down.
func (s *Server) FailFastClient(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Restart saves the data set, stops the server, stays down for down, and
// starts it again on the same port; the data (claims and done marks with
// their expiry times) is loaded back. Clients see errors meanwhile.
func (s *Server) Restart(down time.Duration) error {
	if err := s.Shutdown(); err != nil {
		return err
	}
	time.Sleep(down)
	return s.Resume()
}

// Shutdown saves the data set and stops the server; Resume starts it again
// on the same port with that data. Between the two, every command fails.
func (s *Server) Shutdown() error {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	// A successful SHUTDOWN answers nothing (the connection closes), so
	// its error says little: the process's exit is the proof.
	err := rdb.Do(context.Background(), "SHUTDOWN", "SAVE").Err()
	_ = rdb.Close()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("redis-server did not exit after SHUTDOWN SAVE: %v", err)
	}
}

// Resume starts the server stopped by Shutdown and waits until it answers.
func (s *Server) Resume() error { return s.start() }

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Stop kills the server and waits for it to exit. Start registers it with
// t.Cleanup.
func (s *Server) Stop() { s.kill() }
