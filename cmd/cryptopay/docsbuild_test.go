package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/cli.md builds the commands into a directory of the clone; the
// repository's .gitignore must cover it, or a contributor following the
// docs commits the binaries.
func TestDocsBuildDirIsIgnored(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`go -C cmd build -o "\$PWD/([^"/]+)/"`).FindSubmatch(doc)
	require.NotNil(t, m, "docs/cli.md's build command")
	ignore, err := os.ReadFile("../../.gitignore")
	require.NoError(t, err)
	lines := strings.Split(string(ignore), "\n")
	dir := string(m[1])
	assert.True(t, slices.Contains(lines, "/"+dir+"/") || slices.Contains(lines, "/"+dir), ".gitignore does not cover %s/", dir)
}
