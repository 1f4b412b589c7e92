package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// commitCutter is a loopback TCP proxy in front of PostgreSQL that, once
// armed, forwards a COMMIT, lets the server answer it, and then drops the
// connection without passing the answer on: the client's commit happened,
// and its answer was lost.
type commitCutter struct {
	ln      net.Listener
	target  string
	armed   atomic.Bool
	cut     atomic.Int32 // connections dropped after a COMMIT
	wg      sync.WaitGroup
	mu      sync.Mutex
	clients []net.Conn
}

// commitQuery is a simple-protocol Query message of "commit" (as pgx's
// Tx.Commit sends it), not any SQL that merely mentions the word.
var commitQuery = []byte("q\x00\x00\x00\x0bcommit\x00")

func startCommitCutter(t *testing.T, target string) *commitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &commitCutter{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.clients {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *commitCutter) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.clients = append(p.clients, c, s)
		p.mu.Unlock()
		committing := make(chan struct{}, 1)
		p.wg.Add(2)
		go func() { // client -> server: spot the COMMIT
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if p.armed.Load() && bytes.Contains(bytes.ToLower(buf[:n]), commitQuery) {
						select {
						case committing <- struct{}{}:
						default:
						}
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = s.Close()
					return
				}
			}
		}()
		go func() { // server -> client: swallow the COMMIT's answer and hang up
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				select {
				case <-committing:
					if p.armed.CompareAndSwap(true, false) {
						p.cut.Add(1)
						_ = s.Close()
						_ = c.Close()
						return
					}
				default:
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = c.Close()
					return
				}
			}
		}()
	}
}

// A COMMIT whose answer is lost is "outcome unknown" (exit 4) with the
// rerun hint, not "nothing was enqueued" (exit 3): the rows are queued,
// and running the same file again enqueues nothing new. (The old code
// said "nothing was enqueued" and exited 3.)
func TestPayoutBatchLostCommitIsOutcomeUnknown(t *testing.T) {
	qf := setupQueue(t)
	srv := pgstoretest.Need(t)
	proxy := startCommitCutter(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))
	direct := qf.env[envDatabaseURL]
	qf.env[envDatabaseURL] = strings.Replace(direct, fmt.Sprintf(":%d/", srv.Port), fmt.Sprintf(":%d/", proxy.ln.Addr().(*net.TCPAddr).Port), 1)
	file := csvFile(t, batchHeader, hostileRow("lc-1"), hostileRow("lc-2"))

	proxy.armed.Store(true)
	r := qf.run("payout", "batch", file)
	require.Equal(t, int32(1), proxy.cut.Load(), "the proxy dropped the connection after a COMMIT")
	assert.Equal(t, exitOutcomeUnknown, r.code, r.stderr)
	assert.Contains(t, r.stderr, "outcome unknown")
	assert.Contains(t, r.stderr, "run the same file again")
	assert.NotContains(t, r.stderr, "nothing was enqueued")
	assert.Equal(t, 2, qf.count(t), "both rows were committed and will be paid")

	r = qf.run("payout", "batch", file)
	require.Equal(t, 0, r.code, r.stderr)
	var out batchOutput
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, 0, out.Enqueued, "the rerun enqueues nothing new")
	assert.Equal(t, 2, out.AlreadyQueued)
	assert.Equal(t, 2, qf.count(t))
}
