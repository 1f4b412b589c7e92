package toolnotice

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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
	const notice = "SKIPPED: prism is not on PATH (npm install -g @stoplight/prism-cli); CI=true makes this a failure\n"
	tests := []struct {
		name                string
		ci                  bool
		present             []bool // which of the two sinks exist
		wantFatal, wantSkip bool
		want                []string // what each sink holds afterwards
	}{
		{name: "no CI, the go command's stderr and a terminal", present: []bool{true, true}, wantSkip: true, want: []string{notice, ""}},
		{name: "no CI, piped: no terminal", present: []bool{true, false}, wantSkip: true, want: []string{notice, ""}},
		{name: "no CI, only a terminal", present: []bool{false, true}, wantSkip: true, want: []string{"", notice}},
		{name: "no CI, nowhere to write", present: []bool{false, false}, wantSkip: true, want: []string{"", ""}},
		{name: "CI", ci: true, present: []bool{true, true}, wantFatal: true, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sinks := []string{filepath.Join(dir, "stderr"), filepath.Join(dir, "tty")}
			for i, p := range sinks {
				if tt.present[i] {
					require.NoError(t, os.WriteFile(p, nil, 0o600))
				}
			}
			what := "prism is not on PATH (npm install -g @stoplight/prism-cli)"
			for range 3 { // three tests need it: one notice
				f := &fakeT{}
				missing(f, what, tt.ci, sinks)
				assert.Equal(t, tt.wantFatal, f.fatal != "", f.fatal)
				assert.Equal(t, tt.wantSkip, f.skip != "", f.skip)
				if tt.wantSkip {
					assert.Contains(t, f.skip, what)
				}
			}
			for i, p := range sinks {
				got, err := os.ReadFile(p)
				if !tt.present[i] {
					assert.ErrorIs(t, err, os.ErrNotExist, "no sink is created")
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tt.want[i], string(got), p)
			}
		})
	}
}

// TestSinks: on Linux the first sink is the standard error of the go
// command that runs the test binary, which shows even what `go test ./...`
// hides; the terminal comes after it.
func TestSinks(t *testing.T) {
	s := Sinks()
	assert.Equal(t, "/dev/tty", s[len(s)-1])
	if runtime.GOOS == "linux" {
		assert.Equal(t, []string{"/proc/" + strconv.Itoa(os.Getppid()) + "/fd/2", "/dev/tty"}, s)
	}
}

// A notice written to the go command's standard error redirected to a
// file (`go test ./... > log 2>&1`, not appending) would be overwritten by
// its next line, so that sink is passed over for the terminal; a file
// opened for appending (>>) and a pipe keep it.
func TestOverwritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sinks under /proc are Linux's")
	}
	dir := t.TempDir()
	truncated, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	defer truncated.Close()
	appended, err := os.OpenFile(filepath.Join(dir, "log2"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	defer appended.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	fd := func(f *os.File) string {
		return "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(int(f.Fd()))
	}
	assert.True(t, overwritten(fd(truncated)), "> log")
	assert.False(t, overwritten(fd(appended)), ">> log")
	assert.False(t, overwritten(fd(w)), "a pipe")
	assert.False(t, overwritten(filepath.Join(dir, "log")), "not a descriptor")

	// The notice then goes to the next sink.
	tty := filepath.Join(dir, "tty")
	require.NoError(t, os.WriteFile(tty, nil, 0o600))
	Notify([]string{fd(truncated), tty}, "prism is not on PATH (TestOverwritten)")
	got, err := os.ReadFile(tty)
	require.NoError(t, err)
	assert.Contains(t, string(got), "SKIPPED: prism is not on PATH (TestOverwritten)")
	st, err := truncated.Stat()
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "nothing written where it would be overwritten")
}
