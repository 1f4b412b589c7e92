package toolnotice

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeT records what missing asks of a test.
type fakeT struct {
	testing.TB
	fatal, skip string
}

func (f *fakeT) Helper()                           {}
func (f *fakeT) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fakeT) Skipf(format string, args ...any)  { f.skip = fmt.Sprintf(format, args...) }

func TestMissing(t *testing.T) {
	tests := []struct {
		name                string
		ci, terminal        bool
		wantFatal, wantSkip bool
		wantOnTerminal      string
	}{
		{name: "no CI, a terminal", terminal: true, wantSkip: true, wantOnTerminal: "SKIPPED: prism is not on PATH (npm install -g @stoplight/prism-cli); CI=true makes this a failure\n"},
		{name: "no CI, no terminal", wantSkip: true},
		{name: "CI", ci: true, terminal: true, wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tty := filepath.Join(t.TempDir(), "tty")
			if tt.terminal {
				require.NoError(t, os.WriteFile(tty, nil, 0o600))
			}
			what := "prism is not on PATH (npm install -g @stoplight/prism-cli)"
			for range 3 { // three tests need it: one notice
				f := &fakeT{}
				missing(f, what, tt.ci, tty)
				assert.Equal(t, tt.wantFatal, f.fatal != "", f.fatal)
				assert.Equal(t, tt.wantSkip, f.skip != "", f.skip)
				if tt.wantSkip {
					assert.Contains(t, f.skip, what)
				}
			}
			got, err := os.ReadFile(tty)
			if !tt.terminal {
				assert.ErrorIs(t, err, os.ErrNotExist, "no terminal is created")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOnTerminal, string(got))
		})
	}
}
