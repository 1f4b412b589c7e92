package replicatest_test

import (
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// sharedMemory returns a NewStore whose replicas share one in-memory store,
// as if they were one process: it dedupes across them, with no lease.
func sharedMemory() func(*testing.T, int) webhook.DedupeStore {
	shared := new(webhook.MemoryDedupeStore)
	return func(*testing.T, int) webhook.DedupeStore { return shared }
}

// One in-memory store shared by the three replicas runs the suite itself
// in the root module: 600 events, 200 under the race detector (each event
// is six deliveries and their re-reads, all instrumented; the exactly-once
// checks are per event). The memory store has no lease, so the
// killed-replica run is skipped; redisstore and pgstore run it on real
// servers.
func TestSharedMemoryStore(t *testing.T) {
	t.Parallel() // its own fake, replicas and store
	events := 600
	if raceDetector {
		events = 200
	}
	replicatest.Run(t, replicatest.Config{NewStore: sharedMemory(), Events: events})
}

// A restart hook the stores ride out unseen passes with StoresHideRestart,
// and the hook ran once.
func TestStoresHideRestart(t *testing.T) {
	t.Parallel()
	var restarts atomic.Int32
	replicatest.RunDelivery(t, replicatest.Config{
		NewStore:          sharedMemory(),
		Events:            30,
		Restart:           func() error { restarts.Add(1); return nil },
		StoresHideRestart: true,
	})
	assert.Equal(t, int32(1), restarts.Load())
}

// brokenSetups are runs the suite must fail, each with the message it
// must fail with. A few events suffice: every event is also posted to
// every replica at once, so unshared stores double each one, and the
// restart hook runs a third of the way through any run.
var brokenSetups = map[string]struct {
	run  func(t *testing.T)
	want string
}{
	// A store per replica cannot dedupe across them: the extra deliveries
	// reach several callbacks.
	"unshared": {func(t *testing.T) {
		replicatest.RunDelivery(t, replicatest.Config{
			NewStore: func(*testing.T, int) webhook.DedupeStore { return new(webhook.MemoryDedupeStore) },
			Events:   20,
		})
	}, "events delivered to callbacks more than once"},
	// A restart that no store call noticed proves nothing.
	"unnoticed restart": {func(t *testing.T) {
		replicatest.RunDelivery(t, replicatest.Config{NewStore: sharedMemory(), Events: 30, Restart: func() error { return nil }})
	}, "the store never noticed the restart"},
	"no store": {func(t *testing.T) {
		replicatest.Run(t, replicatest.Config{})
	}, "replicatest: Config.NewStore is nil"},
	"killed replica without a lease": {func(t *testing.T) {
		replicatest.RunKilledReplica(t, replicatest.Config{NewStore: sharedMemory()})
	}, "replicatest: RunKilledReplica needs Config.Lease"},
}

// childEnv names, in a child process of TestSuiteCatchesBrokenSetups, the
// broken setup it runs.
const childEnv = "REPLICATEST_BROKEN_SETUP"

// TestBrokenSetupChild runs one broken setup in a child process (and is
// skipped otherwise).
func TestBrokenSetupChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("runs in a child process of TestSuiteCatchesBrokenSetups")
	}
	brokenSetups[name].run(t)
}

// TestSuiteCatchesBrokenSetups proves the suite can fail: each broken
// setup fails its run, with its message, each in its own process.
func TestSuiteCatchesBrokenSetups(t *testing.T) {
	t.Parallel()
	for name, tt := range brokenSetups {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenSetupChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the broken setup passed:\n%s", out)
			assert.Contains(t, string(out), tt.want)
		})
	}
}
