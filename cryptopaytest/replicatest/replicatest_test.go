package replicatest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/replicatest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// One in-memory store shared by the three replicas (as if they were one
// process) dedupes across them: this runs the harness itself in the root
// module. The memory store has no lease, so the killed-replica run is
// skipped; redisstore and pgstore run it on real servers.
func TestSharedMemoryStore(t *testing.T) {
	shared := new(webhook.MemoryDedupeStore)
	newStore := func(*testing.T, int) webhook.DedupeStore { return shared }
	events := 600
	if os.Getenv("REPLICATEST_UNSHARED") != "" {
		// The child of TestHarnessCatchesUnsharedStores: one store per
		// replica, which cannot dedupe across them.
		newStore = func(*testing.T, int) webhook.DedupeStore { return new(webhook.MemoryDedupeStore) }
		events = 100
	}
	replicatest.Run(t, replicatest.Config{NewStore: newStore, Events: events})
}

// TestHarnessCatchesUnsharedStores proves the harness can fail: with a
// store per replica, the extra deliveries reach several callbacks.
func TestHarnessCatchesUnsharedStores(t *testing.T) {
	if os.Getenv("REPLICATEST_UNSHARED") != "" {
		t.Skip("child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedMemoryStore$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REPLICATEST_UNSHARED=1")
	out, err := cmd.CombinedOutput()
	assert.Error(t, err, "unshared stores passed the harness")
	assert.True(t, strings.Contains(string(out), "events delivered to callbacks more than once"), "output:\n%s", out)
}
