package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPayoutExample(t *testing.T) {
	t.Setenv("CRYPTOPAY_BASE_URL", "")
	t.Setenv("CRYPTOPAY_API_KEY", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	s := out.String()
	assert.Contains(t, s, "(status created)")
	assert.Contains(t, s, "Final status: paid (paid 25.5 usdt)")
	assert.Contains(t, s, "Outcome unknown for order withdrawal-")
	assert.Contains(t, s, "verdict exists after")
	assert.Contains(t, s, "exists with status created; not sending it again.")
	assert.Contains(t, s, "verdict not_created after")
	assert.Contains(t, s, "it was never created; sending it again is safe.")
	assert.Equal(t, 2, strings.Count(s, "The server holds 1 payout(s) for order"), s)
}
