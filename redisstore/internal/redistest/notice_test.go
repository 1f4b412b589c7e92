package redistest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTellTerminal(t *testing.T) {
	t.Run("a terminal: one line however many tests skip", func(t *testing.T) {
		tty := filepath.Join(t.TempDir(), "tty")
		require.NoError(t, os.WriteFile(tty, nil, 0o600))
		for range 3 {
			tellTerminal(tty, "the server is not installed")
		}
		got, err := os.ReadFile(tty)
		require.NoError(t, err)
		assert.Equal(t, "SKIPPED: the server is not installed; CI=true makes this a failure\n", string(got))
	})
	t.Run("no terminal: nothing written, nothing created", func(t *testing.T) {
		tty := filepath.Join(t.TempDir(), "tty")
		tellTerminal(tty, "the server is not installed")
		_, err := os.Stat(tty)
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}
