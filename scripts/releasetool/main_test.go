package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain gives every git command the tests start (their own, the tool's
// and scripts/release.sh's) a fixed identity and none of the machine's
// configuration, so that they commit and tag the same way on any machine.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Release Test",
		"GIT_AUTHOR_EMAIL":    "release-test@example.com",
		"GIT_COMMITTER_NAME":  "Release Test",
		"GIT_COMMITTER_EMAIL": "release-test@example.com",
	} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// gitT runs git in dir and returns its standard output, failing the test
// on an error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, args...)
	require.NoError(t, err)
	return string(out)
}

// writeFiles writes files (slash-separated name: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// commitAll commits every change in dir's work tree.
func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", msg)
}

// newRepo makes a git repository in a temporary directory holding files,
// committed.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFiles(t, dir, files)
	commitAll(t, dir, "fixture")
	return dir
}

func TestModules(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git not found: %v", err)
	}
	tests := []struct {
		name        string
		files       map[string]string
		uncommitted map[string]string
		want        []string // "dir path"
		wantErr     string
	}{
		{
			name:  "the root alone",
			files: map[string]string{"go.mod": "module example.com/r\n"},
			want:  []string{". example.com/r"},
		},
		{
			name: "root first, then the nested modules by directory; tooling under scripts/ and testdata left out",
			files: map[string]string{
				"redisstore/go.mod":            "module example.com/r/redisstore\n",
				"go.mod":                       "module example.com/r\n",
				"cmd/go.mod":                   "module example.com/r/cmd\n",
				"a/b/go.mod":                   "module example.com/r/a/b\n",
				"scripts/releasetool/go.mod":   "module example.com/r/scripts/releasetool\n",
				"testdata/go.mod":              "module example.com/r/testdata\n",
				"cmd/internal/testdata/go.mod": "module example.com/x\n",
				"cmd/main.go":                  "package main\n",
			},
			want: []string{". example.com/r", "a/b example.com/r/a/b", "cmd example.com/r/cmd", "redisstore example.com/r/redisstore"},
		},
		{
			name:        "what is committed at the revision, not the work tree",
			files:       map[string]string{"go.mod": "module example.com/r\n"},
			uncommitted: map[string]string{"pgstore/go.mod": "module example.com/r/pgstore\n"},
			want:        []string{". example.com/r"},
		},
		{
			name:    "no go.mod at the root",
			files:   map[string]string{"cmd/go.mod": "module example.com/r/cmd\n"},
			wantErr: "no go.mod at the repository root",
		},
		{
			name:    "a go.mod without a module path",
			files:   map[string]string{"go.mod": "module example.com/r\n", "cmd/go.mod": "go 1.26\n"},
			wantErr: "cmd/go.mod at HEAD: no module path",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, tt.files)
			writeFiles(t, dir, tt.uncommitted)
			mods, err := modules(dir, "HEAD")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, m := range mods {
				got = append(got, m.dir+" "+m.path)
				assert.Equal(t, tt.files[strings.TrimPrefix(m.dir+"/go.mod", "./")], string(m.gomod), m.dir)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTagName(t *testing.T) {
	tests := []struct{ dir, version, want string }{
		{".", "v0.2.0", "v0.2.0"},
		{"cmd", "v0.2.0", "cmd/v0.2.0"},
		{"a/b", "v1.0.0-rc.1", "a/b/v1.0.0-rc.1"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tagName(tt.dir, tt.version), tt.dir)
	}
}

func TestAddToList(t *testing.T) {
	tests := []struct {
		name, old, version, want string
		noFile                   bool
	}{
		{name: "no list yet", noFile: true, version: "v0.1.0", want: "v0.1.0\n"},
		{name: "a new version is appended", old: "v0.1.0\n", version: "v0.2.0", want: "v0.1.0\nv0.2.0\n"},
		{name: "a listed version is not repeated", old: "v0.1.0\nv0.2.0\n", version: "v0.1.0", want: "v0.1.0\nv0.2.0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "list")
			if !tt.noFile {
				require.NoError(t, os.WriteFile(file, []byte(tt.old), 0o644))
			}
			require.NoError(t, addToList(file, tt.version))
			got, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
