package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRootHasNoMutualFilePairs keeps the SDK's files from using each
// other: a declaration that two files both need goes where one of them
// can use it one way (see docs/project.md).
func TestRootHasNoMutualFilePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the root package (go list -export)")
	}
	g, err := load(filepath.Join("..", ".."))
	require.NoError(t, err)
	var pairs []string
	for _, p := range g.MutualPairs() {
		pairs = append(pairs, p[0]+" <-> "+p[1]+" ("+strings.Join(g.Uses[p[0]][p[1]], ",")+" / "+strings.Join(g.Uses[p[1]][p[0]], ",")+")")
	}
	assert.Empty(t, pairs, "mutual file pairs in the root package")
}
