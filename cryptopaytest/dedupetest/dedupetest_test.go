package dedupetest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// backing is a reference shared store with its own clock: what a Redis or
// Postgres store does, in a map. It proves that the suite's shared-instance
// and lease cases can pass, and exercises the Sleep hook.
type backing struct {
	mu      sync.Mutex
	now     time.Time
	lease   time.Duration
	doneTTL time.Duration
	entries map[string]entry
}

type entry struct {
	token   string // "" once done
	expires time.Time
}

func (b *backing) advance(d time.Duration) {
	b.mu.Lock()
	b.now = b.now.Add(d)
	b.mu.Unlock()
}

func (b *backing) get(key string) (entry, bool) {
	e, ok := b.entries[key]
	if ok && !b.now.Before(e.expires) {
		delete(b.entries, key)
		return entry{}, false
	}
	return e, ok
}

// instance is one replica's view: its own tokens for its claims.
type instance struct {
	b      *backing
	broken string // a deliberate bug, for TestSuiteCatchesBrokenStores
	mu     sync.Mutex
	tokens map[string]string
}

func (s *instance) Claim(_ context.Context, key string) (webhook.DedupeClaim, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if e, ok := s.b.get(key); ok && s.broken != "claim-overwrites" {
		if e.token == "" {
			return webhook.DedupeSeen, nil
		}
		return webhook.DedupeInProgress, nil
	}
	tok := rand.Text()
	expires := s.b.now.Add(s.b.lease)
	if s.broken == "lease-never-expires" {
		expires = s.b.now.Add(1000 * time.Hour)
	}
	s.b.entries[key] = entry{token: tok, expires: expires}
	s.mu.Lock()
	s.tokens[key] = tok
	s.mu.Unlock()
	return webhook.DedupeClaimed, nil
}

// settle applies done (Complete) or a delete (Release) if the caller's
// token still holds the key, or (Complete only) the key lapsed unclaimed.
func (s *instance) settle(key string, done bool) error {
	s.mu.Lock()
	tok, mine := s.tokens[key]
	delete(s.tokens, key)
	s.mu.Unlock()
	if !mine && s.broken != "settle-ignores-owner" {
		return fmt.Errorf("%w: %q", webhook.ErrDedupeLeaseLost, key)
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	e, ok := s.b.get(key)
	switch {
	case ok && e.token == "":
		return nil
	case ok && e.token != tok && s.broken != "settle-ignores-owner":
		return fmt.Errorf("%w: %q", webhook.ErrDedupeLeaseLost, key)
	case done && s.broken == "complete-forgets-some" && strings.HasSuffix(key, "/7"):
		delete(s.b.entries, key)
	case done && s.broken == "done-never-expires":
		s.b.entries[key] = entry{expires: s.b.now.Add(1000 * time.Hour)}
	case done:
		s.b.entries[key] = entry{expires: s.b.now.Add(s.b.doneTTL)}
	case ok:
		delete(s.b.entries, key)
	}
	return nil
}

func (s *instance) Complete(_ context.Context, key string) error { return s.settle(key, true) }
func (s *instance) Release(_ context.Context, key string) error  { return s.settle(key, false) }

func runReference(t *testing.T, broken string) {
	b := &backing{now: time.Unix(1e9, 0), lease: time.Minute, doneTTL: time.Hour, entries: map[string]entry{}}
	dedupetest.Run(t, func(*testing.T) webhook.DedupeStore {
		return &instance{b: b, tokens: map[string]string{}, broken: broken}
	}, dedupetest.Lease(b.lease), dedupetest.DoneTTL(b.doneTTL), dedupetest.Sleep(b.advance))
}

func TestReferenceSharedStore(t *testing.T) {
	runReference(t, os.Getenv("DEDUPETEST_BROKEN"))
}

// TestSuiteCatchesBrokenStores runs the suite in a child process against
// the reference store with one deliberate bug each, and expects the named
// case to fail.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv("DEDUPETEST_BROKEN") != "" {
		t.Skip("child process")
	}
	for bug, wantFailed := range map[string]string{
		"claim-overwrites":     "ClaimStorm",
		"settle-ignores-owner": "NonOwnerComplete",
		"lease-never-expires":  "LeaseExpires",
		"done-never-expires":   "DoneTTL",
		// Concurrent settles must leave every completed key remembered.
		"complete-forgets-some": "ManyKeysConcurrently",
	} {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestReferenceSharedStore$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "DEDUPETEST_BROKEN="+bug)
			out, err := cmd.CombinedOutput()
			assert.Error(t, err, "the suite passed a store with bug %s", bug)
			assert.True(t, strings.Contains(string(out), "--- FAIL: TestReferenceSharedStore/"+wantFailed+" "),
				"case %s should fail for bug %s; output:\n%s", wantFailed, bug, out)
		})
	}
}
