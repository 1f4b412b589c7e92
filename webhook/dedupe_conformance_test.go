package webhook_test

import (
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

// The in-memory store dedupes within one process: the suite's cases for
// shared instances and expiring leases do not apply to it.
func TestMemoryDedupeStoreConformance(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	dedupetest.Run(t, func(*testing.T) webhook.DedupeStore {
		return &webhook.MemoryDedupeStore{TTL: ttl}
	}, dedupetest.InProcess(), dedupetest.DoneTTL(ttl))
}
