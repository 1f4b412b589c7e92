package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	t.Setenv("CRYPTOPAY_BASE_URL", "")
	t.Setenv("CRYPTOPAY_API_KEY", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	s := out.String()
	assert.Contains(t, s, "Created payment ")
	assert.Contains(t, s, "QR code URI: tron:")
	assert.Contains(t, s, "Final status: paid (paid 50.4899 usdt)")
	assert.Contains(t, s, "Order can be fulfilled.")
}

func TestQuickstartNeedsBothVariables(t *testing.T) {
	t.Setenv("CRYPTOPAY_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("CRYPTOPAY_API_KEY", "")
	assert.ErrorContains(t, run(context.Background(), &bytes.Buffer{}), "set both")
}
