package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writePkg writes files (name to body, each after "package p") into a new
// directory and returns it.
func writePkg(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("package p\n\n"+body+"\n"), 0o644))
	}
	return dir
}

func TestGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		files        map[string]string
		arrows, back int
		mutual       [][2]string
		wantUses     [][2]string // arrows that must be there
		wantNoUses   [][2]string // and arrows that must not
	}{
		{
			name:     "one way",
			files:    map[string]string{"a.go": "func A() { B() }", "b.go": "func B() {}"},
			arrows:   1,
			wantUses: [][2]string{{"a.go", "b.go"}},
		},
		{
			name: "mutual pair",
			files: map[string]string{
				"a.go": "type T struct{}\n\nfunc A() { var t T; t.M() }",
				"b.go": "func (T) M() {}", // the receiver names T
			},
			arrows: 2, back: 1,
			mutual: [][2]string{{"a.go", "b.go"}},
		},
		{
			name: "three-file cycle: one back-arrow, no mutual pair",
			files: map[string]string{
				"a.go": "func A() { B() }", "b.go": "func B() { C() }", "c.go": "func C() { A() }",
			},
			arrows: 3, back: 1,
		},
		{
			name: "the fewest back-arrows, not every arrow in a cycle",
			files: map[string]string{
				// a and b use each other; c uses both and is used by none.
				"a.go": "func A() { B() }", "b.go": "func B() { A() }", "c.go": "func C() { A(); B() }",
			},
			arrows: 4, back: 1,
			mutual: [][2]string{{"a.go", "b.go"}},
		},
		{
			name: "a local name is no declaration; a test file is left out",
			files: map[string]string{
				"a.go":      "func A() { x := 1; _ = x }",
				"b.go":      "func B() { x := 2; _ = x }",
				"a_test.go": "func init() { B() }",
			},
		},
		{
			name: "a field is a reference to the struct's file",
			files: map[string]string{
				"a.go": "type S struct{ F int }",
				"b.go": "func get() S { return S{} }",
				"c.go": "func f() int { return get().F }",
			},
			arrows:   3,
			wantUses: [][2]string{{"b.go", "a.go"}, {"c.go", "b.go"}, {"c.go", "a.go"}},
		},
		{
			// The pair the root had: a config whose field has a type of
			// another file, and that file reading the field.
			name: "a type in a field and the field read back: a mutual pair",
			files: map[string]string{
				"options.go": "type config struct{ bus Bus }",
				"bus.go":     "type Bus interface{ Publish() }\n\nfunc publish(c *config) { c.bus.Publish() }",
			},
			arrows: 2, back: 1,
			mutual: [][2]string{{"bus.go", "options.go"}},
		},
		{
			name: "a type named only in a signature",
			files: map[string]string{
				"a.go": "type T struct{}",
				"b.go": "func f(*T) {}",
			},
			arrows:   1,
			wantUses: [][2]string{{"b.go", "a.go"}},
		},
		{
			name: "a promoted field names the embedded field",
			files: map[string]string{
				"a.go": "type Inner struct{ F int }",
				"b.go": "type Outer struct{ Inner }",
				"c.go": "func f(o Outer) int { return o.F }",
			},
			arrows:   3, // b->a (Inner), c->b (Outer, the embedded field), c->a (F)
			wantUses: [][2]string{{"c.go", "b.go"}, {"c.go", "a.go"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := load(writePkg(t, tt.files))
			require.NoError(t, err)
			assert.Equal(t, tt.arrows, g.Arrows(), "arrows")
			assert.Len(t, g.BackArrows(), tt.back, "back-arrows")
			assert.Equal(t, tt.mutual, g.MutualPairs(), "mutual pairs")
			for _, u := range tt.wantUses {
				assert.NotNil(t, g.Uses[u[0]][u[1]], "%s uses %s", u[0], u[1])
			}
			for _, u := range tt.wantNoUses {
				assert.Nil(t, g.Uses[u[0]][u[1]], "%s does not use %s", u[0], u[1])
			}
		})
	}
}

// TestGreedyOrderAgreesOnSmallGroups: the heuristic used for groups too
// large to order exactly finds the fewest back-arrows on small ones.
func TestGreedyOrderAgreesOnSmallGroups(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"cycle":         {"a.go": "func A() { B() }", "b.go": "func B() { C() }", "c.go": "func C() { A() }"},
		"pair and user": {"a.go": "func A() { B() }", "b.go": "func B() { A() }", "c.go": "func C() { A(); B() }"},
	} {
		g, err := load(writePkg(t, files))
		require.NoError(t, err)
		comp := g.Files
		exact, greedy := g.countBack(g.bestOrder(comp)), g.countBack(g.greedyOrder(comp))
		assert.Equal(t, exact, greedy, name)
	}
}

// countBack counts the arrows of order that point to an earlier file.
func (g *graph) countBack(order []string) int {
	n := 0
	for i, a := range order {
		for _, b := range order[:i] {
			if g.Uses[a][b] != nil {
				n++
			}
		}
	}
	return n
}

// pairFree are the packages, by their directory from the repository's
// root, whose files use one another one way: the SDK, the address checks,
// the webhook handler, the fake, the console, the commands, the stores
// (and pgstore's claim page) and the tracing wrapper. console, cmd, pgstore, redisstore and
// otelcryptopay are modules of their own, loaded through the workspace
// (go.work).
var pairFree = []string{".", "address", "webhook", "cryptopaytest", "console", "cmd/cryptopay", "cmd/internal/dashboard", "pgstore", "pgstore/claim", "redisstore", "otelcryptopay"}

// TestNoMutualFilePairs keeps the files of each package in pairFree from
// using each other: a declaration that two files both need goes where one
// of them can use it one way (see docs/project.md).
func TestNoMutualFilePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the packages (go list -export)")
	}
	root := filepath.Join("..", "..")
	// One go list finds the export data for every root-module package
	// checked; under -race, of the race detector's build, which the test
	// command builds anyway.
	var rootPkgs []string
	for _, dir := range pairFree {
		if !ownModule(root, filepath.Join(root, filepath.FromSlash(dir))) {
			rootPkgs = append(rootPkgs, "./"+dir)
		}
	}
	rootExports := sync.OnceValues(func() (map[string]string, error) {
		return listExports(root, raceDetector, rootPkgs...)
	})
	for _, dir := range pairFree {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(root, filepath.FromSlash(dir))
			var g *graph
			var err error
			if ownModule(root, path) {
				if raceDetector {
					t.Skip("a companion module's package: checked without -race (see raceDetector)")
				}
				needWorkspace(t, dir, path)
				g, err = load(path)
			} else {
				exports, listErr := rootExports()
				require.NoError(t, listErr)
				g, err = loadWith(path, lookupIn(exports))
			}
			require.NoError(t, err)
			var pairs []string
			for _, p := range g.MutualPairs() {
				pairs = append(pairs, p[0]+" <-> "+p[1]+" ("+strings.Join(g.Uses[p[0]][p[1]], ",")+" / "+strings.Join(g.Uses[p[1]][p[0]], ",")+")")
			}
			assert.Empty(t, pairs, "mutual file pairs in %s (go run ./scripts/filegraph -v ./%s)", dir, dir)
		})
	}
}

// ownModule reports whether the package in dir belongs to a module of its
// own (a go.mod between it and root), not to the root module.
func ownModule(root, dir string) bool {
	for d := dir; d != root && d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// needWorkspace skips (fails with CI=true) the test of a package of
// another module when the workspace is off: that module requires the SDK
// at its unreleased version, which only go.work resolves.
func needWorkspace(t *testing.T, name, dir string) {
	t.Helper()
	cmd := exec.Command("go", "env", "GOWORK")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "go env GOWORK")
	if w := strings.TrimSpace(string(out)); w != "" && w != "off" {
		return
	}
	msg := name + " belongs to a module of its own, which builds against this tree only through the workspace (go.work at the repository root), and the workspace is off"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}
