package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"
)

// The example runs against a redis-server of its own and must show both
// the shared dedupe and the cross-replica wake-up.
func TestReplicasExample(t *testing.T) {
	srv := redistest.Start(t)
	var out bytes.Buffer
	err := run(context.Background(), srv.Addr, 15, &out)
	t.Log(out.String())
	require.NoError(t, err)
	assert.Contains(t, out.String(), "callbacks in all: 15 for 15 payments")
	assert.Contains(t, out.String(), "after the webhook landed on replica B")
}
