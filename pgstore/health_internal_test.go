package pgstore

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without a Logger, the workers' warnings and errors reach standard error
// (standard output is the program's), and nothing below warn does. Before,
// the default logger discarded everything.
func TestDefaultLoggerWarnsOnStderr(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none") // never connects here
	require.NoError(t, err)
	defer pool.Close()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = f
	tr, terr := NewTracker(context.Background(), TrackerConfig{Pool: pool})
	q, qerr := NewQueue(context.Background(), QueueConfig{Pool: pool})
	os.Stderr = stderr
	require.NoError(t, terr)
	require.NoError(t, qerr)
	for _, log := range []func(string, ...any){tr.log.Info, tr.log.Warn, q.log.Info, q.log.Error} {
		log("pgstore: line")
	}
	require.NoError(t, f.Close())
	out, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(out), "\n"), "%s", out)
	assert.Contains(t, string(out), "level=WARN")
	assert.Contains(t, string(out), "level=ERROR")
	assert.NotContains(t, string(out), "level=INFO")
}
