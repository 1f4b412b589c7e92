package pgstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// Refusals are written in batches: however many arrive, one write is
// scheduled at a time; a write that fails keeps the counts for the next
// one, logs once per window, and waits longer each time (doubling from a
// second); reasons past maxRefusalReasons are counted as "other".
func TestRefusalLogBatchesAndKeepsCounts(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none") // never connects
	require.NoError(t, err)
	defer pool.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	var waits []time.Duration
	tr, err := NewTracker(context.Background(), TrackerConfig{Pool: pool, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	l := &tr.refusals
	l.after = func(d time.Duration, _ func()) { // the test flushes by hand
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
	}
	for range 5 {
		l.record(webhook.Refusal{Reason: webhook.RefusedToken, StatusCode: 401})
	}
	l.record(webhook.Refusal{Reason: webhook.RefusedMethod, StatusCode: 405})
	assert.Equal(t, []time.Duration{refusalFlushEvery}, waits, "one write scheduled for six refusals")

	ctx := context.Background()
	require.Error(t, l.flush(ctx))
	require.Error(t, l.flush(ctx))
	l.mu.Lock()
	assert.Equal(t, map[webhook.RefusalReason]pendingRefusal{webhook.RefusedToken: {5, 401}, webhook.RefusedMethod: {1, 405}}, l.pending,
		"a failed write keeps the counts")
	l.mu.Unlock()
	assert.Equal(t, []time.Duration{refusalFlushEvery, 2 * refusalFlushEvery, 4 * refusalFlushEvery}, waits, "retried, each wait doubled")
	assert.Equal(t, 1, strings.Count(logs.String(), "pgstore: recording webhook refusals"), logs.String())

	for i := range maxRefusalReasons + 3 {
		l.record(webhook.Refusal{Reason: webhook.RefusalReason("r" + strings.Repeat("x", i)), StatusCode: 400})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Len(t, l.pending, maxRefusalReasons+1, "bounded: the rest are counted as other")
	assert.Positive(t, l.pending["other"].n)
}
