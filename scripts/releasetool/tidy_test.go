package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unreleased is the "path version" set tidy builds from the modules whose
// release tag is missing.
var unreleased = map[string]bool{
	"example.com/r v0.2.0":     true,
	"example.com/r/pgs v0.2.0": true,
}

const goSum = `example.com/other v1.0.0 h1:aaa=
example.com/other v1.0.0/go.mod h1:bbb=
example.com/r v0.1.0 h1:old=
example.com/r v0.1.0/go.mod h1:oldmod=
example.com/r v0.2.0 h1:ccc=
example.com/r v0.2.0/go.mod h1:ddd=
example.com/r/pgs v0.2.0/go.mod h1:eee=
`

func TestSumLines(t *testing.T) {
	tests := []struct {
		name    string
		content string
		noFile  bool
		want    []string
	}{
		{
			name:    "the unreleased versions' lines, zip and go.mod, of every module of ours",
			content: goSum,
			want: []string{
				"example.com/r v0.2.0 h1:ccc=",
				"example.com/r v0.2.0/go.mod h1:ddd=",
				"example.com/r/pgs v0.2.0/go.mod h1:eee=",
			},
		},
		{
			name:    "a released version of ours and other modules pass",
			content: "example.com/other v1.0.0 h1:aaa=\nexample.com/r v0.1.0 h1:old=\nexample.com/r/pgs v0.1.0/go.mod h1:x=\n",
		},
		{
			name:    "a same-named module of another path passes",
			content: "example.com/r/pgsx v0.2.0 h1:x=\nexample.com/rr v0.2.0 h1:y=\n",
		},
		{name: "no go.sum", noFile: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "go.sum")
			if !tt.noFile {
				require.NoError(t, os.WriteFile(file, []byte(tt.content), 0o644))
			}
			assert.Equal(t, tt.want, sumLines(file, unreleased))
		})
	}
}

func TestDropSumLines(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{
			name:    "the unreleased lines go, the rest stays in order",
			content: goSum,
			want: `example.com/other v1.0.0 h1:aaa=
example.com/other v1.0.0/go.mod h1:bbb=
example.com/r v0.1.0 h1:old=
example.com/r v0.1.0/go.mod h1:oldmod=
`,
		},
		{
			name:    "nothing to drop: the file is untouched",
			content: "example.com/other v1.0.0 h1:aaa=\n",
			want:    "example.com/other v1.0.0 h1:aaa=\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "go.sum")
			require.NoError(t, os.WriteFile(file, []byte(tt.content), 0o644))
			require.NoError(t, dropSumLines(file, unreleased))
			got, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
	t.Run("no go.sum", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "go.sum")
		require.NoError(t, dropSumLines(file, unreleased))
		assert.NoFileExists(t, file)
	})
}

func TestOnlyOurSums(t *testing.T) {
	const head = "go: downloading example.com/other v1.0.0\n" +
		"diff current/go.sum tidy/go.sum\n" +
		"--- current/go.sum\n" +
		"+++ tidy/go.sum\n" +
		"@@ -1,2 +1,4 @@\n" +
		" example.com/other v1.0.0 h1:aaa=\n"
	tests := []struct {
		name string
		out  string
		want bool
	}{
		{
			name: "go.sum gains only the unreleased versions' lines",
			out:  head + "+example.com/r v0.2.0 h1:ccc=\n+example.com/r v0.2.0/go.mod h1:ddd=\n",
			want: true,
		},
		{
			name: "go.sum gains a third-party line",
			out:  head + "+example.com/r v0.2.0 h1:ccc=\n+example.com/other v1.1.0 h1:zzz=\n",
		},
		{
			name: "go.sum gains a released version of ours",
			out:  head + "+example.com/r v0.1.0 h1:old=\n",
		},
		{
			name: "go.sum loses a line",
			out:  head + "+example.com/r v0.2.0 h1:ccc=\n-example.com/other v1.0.0/go.mod h1:bbb=\n",
		},
		{
			name: "go.mod differs",
			out:  "diff current/go.mod tidy/go.mod\n--- current/go.mod\n+++ tidy/go.mod\n@@ -1 +1 @@\n+require example.com/r v0.2.0\n",
		},
		{
			name: "go.mod and go.sum differ",
			out:  head + "+example.com/r v0.2.0 h1:ccc=\ndiff current/go.mod tidy/go.mod\n",
		},
		{
			name: "an error, no diff",
			out:  "go: example.com/r@v0.2.0: verifying module: checksum mismatch\n",
		},
		{
			name: "a diff header with no change",
			out:  head,
		},
		{name: "no output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, onlyOurSums(tt.out, unreleased))
		})
	}
}
