// Package dedupetest is the conformance suite for webhook.DedupeStore
// implementations. Every store (the in-memory one, redisstore, pgstore, or
// your own) must pass Run:
//
//	func TestConformance(t *testing.T) {
//		dedupetest.Run(t, func(t *testing.T) webhook.DedupeStore {
//			return mystore.New(sharedBackend, mystore.WithLease(500*time.Millisecond))
//		}, dedupetest.Lease(500*time.Millisecond), dedupetest.DoneTTL(time.Second))
//	}
//
// Each call of newStore stands for one replica: a shared store returns a
// new instance on the same backing server every time, so the suite can
// check what one replica's store does to another's claims. Keys are
// random per Run, so a backing server need not be emptied between runs.
package dedupetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Option configures Run.
type Option func(*config)

type config struct {
	lease, doneTTL time.Duration
	sleep          func(time.Duration)
	inProcess      bool
	storm          int
}

// Lease tells Run the lease length of the stores newStore returns, and
// enables the cases that wait for a lease to expire (each waits about 1.5
// times d). Without it (or with 0) the store's claims are taken never to
// expire by themselves and those cases are skipped. Choose d short (a few
// hundred milliseconds) but long enough that a stalled test machine does
// not lose a claim between two consecutive store calls.
func Lease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// DoneTTL tells Run how long the stores remember a completed key, and
// enables the case that waits for it to be forgotten (about 1.5 times d).
// 0 skips it. Make it more than twice the Lease, or the case checking that
// a done key outlives a lease is skipped.
func DoneTTL(d time.Duration) Option { return func(c *config) { c.doneTTL = d } }

// Sleep replaces time.Sleep for the waits past a lease or a TTL, for a
// backing server with its own clock (miniredis's FastForward, for example).
// With a Sleep hook the cases run one after another, since moving a shared
// clock would disturb cases running beside it; without one they run in
// parallel.
func Sleep(fn func(time.Duration)) Option { return func(c *config) { c.sleep = fn } }

// InProcess declares that the stores newStore returns are independent and
// dedupe within one process only (webhook.NewMemoryDedupeStore): the
// cases that need two instances to share claims, and the lease cases
// (a claim lives until Complete or Release; the process's death frees it),
// are skipped.
func InProcess() Option { return func(c *config) { c.inProcess = true } }

// Storm sets how many goroutines race for one key in the claim storm
// (default 64).
func Storm(n int) Option { return func(c *config) { c.storm = n } }

// needs says which capabilities a case requires.
type needs int

const (
	needShared needs = 1 << iota // instances share claims
	needLease                    // claims expire
	needTTL                      // done entries expire
)

type suite struct {
	cfg      config
	newStore func(t *testing.T) webhook.DedupeStore
	prefix   string
}

type testCase struct {
	name  string
	needs needs
	run   func(t *testing.T, s *suite)
}

var cases = []testCase{
	{"ClaimNew", 0, testClaimNew},
	{"ClaimHeld", 0, testClaimHeld},
	{"CompleteThenSeen", 0, testCompleteThenSeen},
	{"ReleaseThenClaim", 0, testReleaseThenClaim},
	{"ReleaseKeepsDone", 0, testReleaseKeepsDone},
	{"OddKeys", 0, testOddKeys},
	{"ClaimStorm", 0, testClaimStorm},
	{"ManyKeysConcurrently", 0, testManyKeys},
	{"SharedAcrossInstances", needShared, testShared},
	{"NonOwnerRelease", needShared, testNonOwnerRelease},
	{"NonOwnerComplete", needShared, testNonOwnerComplete},
	{"LeaseExpires", needShared | needLease, testLeaseExpires},
	{"LateCompleteAlone", needShared | needLease, testLateCompleteAlone},
	{"DoneOutlivesLease", needLease, testDoneOutlivesLease},
	{"DoneTTL", needTTL, testDoneTTL},
}

// Run runs the conformance suite against the stores newStore returns; see
// the package documentation and the options.
func Run(t *testing.T, newStore func(t *testing.T) webhook.DedupeStore, opts ...Option) {
	t.Helper()
	cfg := config{storm: 64}
	for _, o := range opts {
		o(&cfg)
	}
	parallel := cfg.sleep == nil
	if cfg.sleep == nil {
		cfg.sleep = time.Sleep
	}
	s := &suite{cfg: cfg, newStore: newStore, prefix: "dedupetest-" + randHex(6)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if reason := s.skip(tc.needs); reason != "" {
				t.Skip(reason)
			}
			if parallel {
				t.Parallel()
			}
			tc.run(t, s)
		})
	}
}

func (s *suite) skip(n needs) string {
	switch {
	case n&needShared != 0 && s.cfg.inProcess:
		return "in-process store: instances do not share claims"
	case n&needLease != 0 && s.cfg.lease <= 0:
		return "no dedupetest.Lease given: claims do not expire"
	case n&needTTL != 0 && s.cfg.doneTTL <= 0:
		return "no dedupetest.DoneTTL given"
	}
	return ""
}

// key returns a fresh key shaped like a webhook.Handler's.
func (s *suite) key(t *testing.T) string {
	return "payment/" + s.prefix + "-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + randHex(4) + "/paid"
}

// other returns a second instance: another replica's store when the stores
// are shared, else the same store.
func (s *suite) other(t *testing.T, st webhook.DedupeStore) webhook.DedupeStore {
	if s.cfg.inProcess {
		return st
	}
	return s.newStore(t)
}

// pastLease sleeps until a lease taken before start has surely expired.
func (s *suite) pastLease(start time.Time) {
	if d := s.cfg.lease + s.cfg.lease/2 + 20*time.Millisecond - time.Since(start); d > 0 {
		s.cfg.sleep(d)
	}
}

// expectHeld asserts that a claim taken at start still holds, unless the
// machine stalled past the lease (which is not the store's fault).
func (s *suite) expectHeld(t *testing.T, start time.Time, got webhook.DedupeClaim, msg string) {
	t.Helper()
	if got != webhook.DedupeInProgress && s.cfg.lease > 0 && time.Since(start) >= s.cfg.lease {
		t.Skipf("the test machine stalled past the lease (%v); cannot judge %s", s.cfg.lease, msg)
	}
	assert.Equal(t, webhook.DedupeInProgress, got, msg)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func claim(t *testing.T, st webhook.DedupeStore, key string) webhook.DedupeClaim {
	t.Helper()
	got, err := st.Claim(ctx(t), key)
	require.NoError(t, err, "Claim(%q)", key)
	return got
}

// okOrLost accepts nil or ErrDedupeLeaseLost: what a Release may answer
// for a key the caller does not hold.
func okOrLost(t *testing.T, err error, msg string) {
	t.Helper()
	if err != nil && !errors.Is(err, webhook.ErrDedupeLeaseLost) {
		t.Errorf("%s: want nil or ErrDedupeLeaseLost, got %v", msg, err)
	}
}

func testClaimNew(t *testing.T, s *suite) {
	st := s.newStore(t)
	assert.Equal(t, webhook.DedupeClaimed, claim(t, st, s.key(t)))
}

func testClaimHeld(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	s.expectHeld(t, start, claim(t, st, k), "a second Claim on the same instance")
	s.expectHeld(t, start, claim(t, s.other(t, st), k), "a Claim on another instance")
}

func testCompleteThenSeen(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	require.NoError(t, st.Complete(ctx(t), k))
	assert.Equal(t, webhook.DedupeSeen, claim(t, st, k))
	assert.Equal(t, webhook.DedupeSeen, claim(t, st, k), "a Claim of a done key must not take it")
	assert.Equal(t, webhook.DedupeSeen, claim(t, s.other(t, st), k))
}

func testReleaseThenClaim(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	require.NoError(t, st.Release(ctx(t), k))
	o := s.other(t, st)
	assert.Equal(t, webhook.DedupeClaimed, claim(t, o, k), "a released key is free for the next delivery")
	require.NoError(t, o.Complete(ctx(t), k))
	assert.Equal(t, webhook.DedupeSeen, claim(t, st, k))
}

func testReleaseKeepsDone(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	require.NoError(t, st.Complete(ctx(t), k))
	okOrLost(t, st.Release(ctx(t), k), "Release of a done key")
	assert.Equal(t, webhook.DedupeSeen, claim(t, st, k), "Release must not forget a done key")

	never := s.key(t)
	okOrLost(t, st.Release(ctx(t), never), "Release of a key never claimed")
	assert.Equal(t, webhook.DedupeClaimed, claim(t, st, never))
}

// oddKeys are keys a store must keep apart and store verbatim: glob and
// SQL metacharacters, separators, case, non-ASCII, long ones.
func oddKeys(base string) []string {
	return []string{
		base,
		base + "/",
		strings.ToUpper(base),
		base + " x",
		base + "*",
		base + "?[a-z]",
		base + "{tag}",
		base + "%_",
		base + "'; DROP TABLE x; --",
		base + "\"\\",
		base + ":colon:",
		base + "\n\t",
		base + "\x00nul",
		base + "é€😀",
		base + "/" + strings.Repeat("s", 64),
		base + "/" + strings.Repeat("k", 300),
	}
}

func testOddKeys(t *testing.T, s *suite) {
	st := s.newStore(t)
	keys := oddKeys("payout/" + s.prefix + "-odd-" + randHex(4))
	for _, k := range keys {
		require.Equal(t, webhook.DedupeClaimed, claim(t, st, k), "first Claim of %q", k)
	}
	// Completing every other key must not touch its neighbours.
	for i, k := range keys {
		if i%2 == 0 {
			require.NoError(t, st.Complete(ctx(t), k), "Complete(%q)", k)
		} else {
			require.NoError(t, st.Release(ctx(t), k), "Release(%q)", k)
		}
	}
	o := s.other(t, st)
	for i, k := range keys {
		want := webhook.DedupeSeen
		if i%2 == 1 {
			want = webhook.DedupeClaimed
		}
		assert.Equal(t, want, claim(t, o, k), "key %q", k)
	}
}

// storm has n goroutines, spread over instances, claim key at once. It
// returns the count of each answer and the instance of the last winner.
func (s *suite) storm(t *testing.T, instances []webhook.DedupeStore, key string) (map[webhook.DedupeClaim]int, webhook.DedupeStore) {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		count  = map[webhook.DedupeClaim]int{}
		winner webhook.DedupeStore
		errs   []error
		start  = make(chan struct{})
	)
	c := ctx(t)
	for i := range s.cfg.storm {
		st := instances[i%len(instances)]
		wg.Go(func() {
			<-start
			got, err := st.Claim(c, key)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			count[got]++
			if got == webhook.DedupeClaimed {
				winner = st
			}
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...), "Claim errors in the storm")
	return count, winner
}

func testClaimStorm(t *testing.T, s *suite) {
	instances := []webhook.DedupeStore{s.newStore(t)}
	if !s.cfg.inProcess {
		instances = append(instances, s.newStore(t), s.newStore(t))
	}
	k := s.key(t)
	n := s.cfg.storm
	one := map[webhook.DedupeClaim]int{webhook.DedupeClaimed: 1, webhook.DedupeInProgress: n - 1}

	start := time.Now()
	got, winner := s.storm(t, instances, k)
	if s.cfg.lease > 0 && time.Since(start) >= s.cfg.lease && got[webhook.DedupeClaimed] > 1 {
		t.Skipf("the storm outlasted the lease (%v); cannot judge it", s.cfg.lease)
	}
	require.Equal(t, one, got, "exactly one of %d concurrent Claims wins", n)
	require.NoError(t, winner.Release(ctx(t), k))

	start = time.Now()
	got, winner = s.storm(t, instances, k)
	if s.cfg.lease > 0 && time.Since(start) >= s.cfg.lease && got[webhook.DedupeClaimed] > 1 {
		t.Skipf("the storm outlasted the lease (%v); cannot judge it", s.cfg.lease)
	}
	require.Equal(t, one, got, "after Release, exactly one of %d concurrent Claims wins again", n)
	require.NoError(t, winner.Complete(ctx(t), k))

	got, _ = s.storm(t, instances, k)
	assert.Equal(t, map[webhook.DedupeClaim]int{webhook.DedupeSeen: n}, got, "after Complete every Claim sees the key done")
}

func testManyKeys(t *testing.T, s *suite) {
	const workers, perWorker = 8, 40
	st := s.newStore(t)
	base := s.key(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := fmt.Sprintf("%s/%d/%d", base, w, i)
				if got, err := st.Claim(ctx(t), k); err != nil || got != webhook.DedupeClaimed {
					errs <- fmt.Errorf("Claim(%q) = %v, %v", k, got, err)
					return
				}
				var err error
				if i%3 == 0 {
					err = st.Release(ctx(t), k)
				} else {
					err = st.Complete(ctx(t), k)
				}
				if err != nil {
					errs <- fmt.Errorf("settle %q: %w", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every key is checked before the clock is read: a completed key
	// found forgotten counts as a failure unless the DoneTTL had passed
	// by the end of the check (a loaded machine can take that long).
	var wrong []string
	for w := range workers {
		for i := range perWorker {
			want := webhook.DedupeSeen
			if i%3 == 0 {
				want = webhook.DedupeClaimed
			}
			k := fmt.Sprintf("%s/%d/%d", base, w, i)
			if got := claim(t, st, k); got != want {
				wrong = append(wrong, fmt.Sprintf("%q: %v, want %v", k, got, want))
			}
		}
	}
	if len(wrong) == 0 {
		return
	}
	if took := time.Since(start); s.cfg.doneTTL > 0 && took >= s.cfg.doneTTL {
		t.Skipf("the machine took %v, past the DoneTTL (%v), so completed keys may be forgotten; %d keys differed, first %s",
			took, s.cfg.doneTTL, len(wrong), wrong[0])
	}
	t.Fatalf("%d of %d keys wrong after concurrent settles, first %s", len(wrong), workers*perWorker, wrong[0])
}

func testShared(t *testing.T, s *suite) {
	a, b := s.newStore(t), s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, a, k))
	s.expectHeld(t, start, claim(t, b, k), "another instance sees the claim")
	require.NoError(t, a.Complete(ctx(t), k))
	assert.Equal(t, webhook.DedupeSeen, claim(t, b, k), "another instance sees the key done")
}

func testNonOwnerRelease(t *testing.T, s *suite) {
	owner, intruder, observer := s.newStore(t), s.newStore(t), s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, owner, k))
	okOrLost(t, intruder.Release(ctx(t), k), "Release by a non-owner")
	s.expectHeld(t, start, claim(t, observer, k), "a non-owner's Release must leave the owner's lease")
	require.NoError(t, owner.Complete(ctx(t), k), "the owner's Complete")
	assert.Equal(t, webhook.DedupeSeen, claim(t, observer, k))
}

func testNonOwnerComplete(t *testing.T, s *suite) {
	owner, intruder, observer := s.newStore(t), s.newStore(t), s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, owner, k))
	err := intruder.Complete(ctx(t), k)
	assert.ErrorIs(t, err, webhook.ErrDedupeLeaseLost, "Complete by a non-owner")
	s.expectHeld(t, start, claim(t, observer, k), "a non-owner's Complete must leave the owner's lease")
	require.NoError(t, owner.Release(ctx(t), k), "the owner's Release")
	assert.Equal(t, webhook.DedupeClaimed, claim(t, observer, k), "the key was not marked done by the non-owner")
}

func testLeaseExpires(t *testing.T, s *suite) {
	dead, next, observer := s.newStore(t), s.newStore(t), s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, dead, k))
	s.pastLease(start)
	restart := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, next, k), "an expired lease frees the key")
	s.expectHeld(t, restart, claim(t, dead, k), "the old holder sees the new lease")

	// The old holder comes back late: it must not disturb the new lease.
	err := dead.Complete(ctx(t), k)
	require.ErrorIs(t, err, webhook.ErrDedupeLeaseLost, "Complete after the lease was taken over")
	okOrLost(t, dead.Release(ctx(t), k), "Release after the lease was taken over")
	s.expectHeld(t, restart, claim(t, observer, k), "the new lease survives the old holder's calls")
	require.NoError(t, next.Complete(ctx(t), k))
	assert.Equal(t, webhook.DedupeSeen, claim(t, observer, k))
}

func testLateCompleteAlone(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	s.pastLease(start)
	// Nobody took the key over: the late Complete still records it.
	require.NoError(t, st.Complete(ctx(t), k), "Complete after the lease expired, nobody else holding it")
	assert.Equal(t, webhook.DedupeSeen, claim(t, s.newStore(t), k))
}

func testDoneOutlivesLease(t *testing.T, s *suite) {
	if s.cfg.doneTTL > 0 && s.cfg.doneTTL < 2*s.cfg.lease {
		t.Skip("DoneTTL is below twice the Lease: give a longer DoneTTL to run this case")
	}
	st := s.newStore(t)
	k := s.key(t)
	start := time.Now()
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	require.NoError(t, st.Complete(ctx(t), k))
	s.pastLease(start)
	assert.Equal(t, webhook.DedupeSeen, claim(t, s.other(t, st), k), "a done key is kept past the lease")
}

func testDoneTTL(t *testing.T, s *suite) {
	st := s.newStore(t)
	k := s.key(t)
	require.Equal(t, webhook.DedupeClaimed, claim(t, st, k))
	done := time.Now()
	require.NoError(t, st.Complete(ctx(t), k))
	if time.Since(done) < s.cfg.doneTTL/2 {
		assert.Equal(t, webhook.DedupeSeen, claim(t, st, k), "within its TTL a done key is seen")
	}
	if d := s.cfg.doneTTL + s.cfg.doneTTL/2 + 20*time.Millisecond - time.Since(done); d > 0 {
		s.cfg.sleep(d)
	}
	o := s.other(t, st)
	assert.Equal(t, webhook.DedupeClaimed, claim(t, o, k), "a done key is forgotten after its TTL")
}
