// Command filegraph counts, for one Go package, which of its files use
// declarations of which other files: the file-to-file arrows, the mutual
// file pairs (file A uses a declaration of file B and B uses one of A) and
// the back-arrows (the fewest arrows whose removal leaves no cycle among
// the files: an arrow that exists only because a declaration sits in the
// "wrong" file shows up here). Test files are left out.
//
//	go run ./scripts/filegraph        # the root package
//	go run ./scripts/filegraph -v ./webhook
//
// It type-checks the package with go/types, so a use is a use of the
// declared object (a package-level name, a method or a struct field), never
// a name that only looks the same.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list every mutual pair and back-arrow with the names behind it")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	g, err := load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "filegraph:", err)
		os.Exit(1)
	}
	g.Report(os.Stdout, *verbose)
}

// graph is the file-to-file use graph of one package.
type graph struct {
	Files []string // base names, sorted
	// Uses[a][b] lists the names declared in b that a uses (a != b).
	Uses map[string]map[string][]string
}

// load type-checks the non-test Go files of the package in dir (as the
// current GOOS/GOARCH build them) and returns its file graph. A file uses
// another when it refers to anything declared there: a package-level name
// (a type in a signature or a struct field included), a method, or a field
// of a struct type declared there (through the embedded fields a promoted
// one is reached by, too).
func load(dir string) (*graph, error) {
	return loadWith(dir, exportLookup(dir))
}

// loadWith is load with the export data of dir's imports found by lookup.
func loadWith(dir string, lookup importer.Lookup) (*graph, error) {
	bp, fset, pkg, info, err := typeCheck(dir, lookup)
	if err != nil {
		return nil, err
	}
	g := &graph{Files: slices.Clone(bp.GoFiles), Uses: map[string]map[string][]string{}}
	sort.Strings(g.Files)
	add := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !declaration(pkg, obj) {
			return
		}
		from := filepath.Base(fset.Position(at).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			return
		}
		if g.Uses[from] == nil {
			g.Uses[from] = map[string][]string{}
		}
		if !slices.Contains(g.Uses[from][to], obj.Name()) {
			g.Uses[from][to] = append(g.Uses[from][to], obj.Name())
		}
	}
	for id, obj := range info.Uses {
		add(id.Pos(), obj)
	}
	// A promoted field or method is reached through the embedded fields
	// on its path; Uses records only the last one.
	for sel, s := range info.Selections {
		t := s.Recv()
		for _, i := range s.Index()[:len(s.Index())-1] {
			st, ok := deref(t).Underlying().(*types.Struct)
			if !ok {
				break
			}
			add(sel.Sel.Pos(), st.Field(i))
			t = st.Field(i).Type()
		}
	}
	for _, m := range g.Uses {
		for _, names := range m {
			sort.Strings(names)
		}
	}
	return g, nil
}

// typeCheck parses and type-checks the non-test Go files of the package in
// dir, recording every use of a declared object and every selection.
func typeCheck(dir string, lookup importer.Lookup) (*build.Package, *token.FileSet, *types.Package, *types.Info, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	pkg, err := conf.Check(bp.ImportPath, fset, files, info)
	return bp, fset, pkg, info, err
}

func deref(t types.Type) types.Type {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// declaration reports whether obj is a declaration of pkg that a file can
// refer to from another: a package-level name, a method or a struct field.
func declaration(pkg *types.Package, obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Parent() == pkg.Scope() || o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField() || o.Parent() == pkg.Scope()
	default:
		return obj.Parent() == pkg.Scope()
	}
}

// exportLookup finds the export data of the packages dir imports through
// `go list -export`, run once, on the first import.
func exportLookup(dir string) importer.Lookup {
	var exports map[string]string
	var listErr error
	return func(path string) (io.ReadCloser, error) {
		if exports == nil && listErr == nil {
			exports, listErr = listExports(dir, false, ".")
		}
		if listErr != nil {
			return nil, listErr
		}
		return lookupIn(exports)(path)
	}
}

// lookupIn opens the export data listed for an import path in exports.
func lookupIn(exports map[string]string) importer.Lookup {
	return func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	}
}

// listExports maps the import path of every package the packages matched
// by patterns (from dir) depend on, themselves included, to its export
// data file, as the race detector's build has it when race is set: one
// go list for all of them.
func listExports(dir string, race bool, patterns ...string) (map[string]string, error) {
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export"}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
	return exports, nil
}

// Arrows counts the arrows: pairs of files where the first uses a
// declaration of the second.
func (g *graph) Arrows() int {
	n := 0
	for _, m := range g.Uses {
		n += len(m)
	}
	return n
}

// MutualPairs lists the pairs of files that use each other, each pair once
// and in name order.
func (g *graph) MutualPairs() [][2]string {
	var pairs [][2]string
	for _, a := range g.Files {
		for _, b := range g.Files {
			if a < b && g.Uses[a][b] != nil && g.Uses[b][a] != nil {
				pairs = append(pairs, [2]string{a, b})
			}
		}
	}
	return pairs
}

// BackArrows returns a smallest set of arrows whose removal leaves the file
// graph without a cycle (a minimum feedback arc set, found exactly within
// each strongly connected group of up to 20 files, and greedily in a
// larger one). Every arrow in a cycle is a candidate; the count is the
// least that must go.
func (g *graph) BackArrows() [][2]string {
	var back [][2]string
	for _, comp := range g.components() {
		if len(comp) < 2 {
			continue
		}
		order := g.bestOrder(comp)
		pos := map[string]int{}
		for i, f := range order {
			pos[f] = i
		}
		for _, a := range order {
			for _, b := range order {
				if g.Uses[a][b] != nil && pos[b] < pos[a] {
					back = append(back, [2]string{a, b})
				}
			}
		}
	}
	sort.Slice(back, func(i, j int) bool {
		return back[i][0] < back[j][0] || back[i][0] == back[j][0] && back[i][1] < back[j][1]
	})
	return back
}

// components returns the strongly connected groups of files (Tarjan).
func (g *graph) components() [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.Files {
			if g.Uses[v][w] == nil {
				continue
			}
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			sort.Strings(comp)
			comps = append(comps, comp)
		}
	}
	for _, f := range g.Files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	return comps
}

// bestOrder orders comp so that as few arrows as possible point back (to
// an earlier file): "a file uses only files after it" is the goal.
func (g *graph) bestOrder(comp []string) []string {
	n := len(comp)
	if n > 20 {
		return g.greedyOrder(comp)
	}
	// out[i] is the set of files in comp that file i uses.
	out := make([]uint32, n)
	for i, a := range comp {
		for j, b := range comp {
			if g.Uses[a][b] != nil {
				out[i] |= 1 << j
			}
		}
	}
	// cost[S]: fewest back arrows among the files of S placed first, in
	// some order; a file placed after S has its arrows into S counted.
	size := 1 << n
	cost := make([]int32, size)
	last := make([]int8, size)
	for s := 1; s < size; s++ {
		cost[s] = 1 << 30
		for i := range n {
			if s&(1<<i) == 0 {
				continue
			}
			prev := s &^ (1 << i)
			c := cost[prev] + int32(bits.OnesCount32(out[i]&uint32(prev)))
			if c < cost[s] {
				cost[s], last[s] = c, int8(i)
			}
		}
	}
	order := make([]string, n)
	for s, k := size-1, n-1; s != 0; k-- {
		i := last[s]
		order[k] = comp[i]
		s &^= 1 << i
	}
	return order
}

// greedyOrder orders a group too large to order exactly: each step puts
// next the file that uses the files left most and is used by them least
// (the Eades-Lin-Smyth heuristic without its sink and source rules).
func (g *graph) greedyOrder(comp []string) []string {
	left := slices.Clone(comp)
	var order []string
	for len(left) > 0 {
		best, bestScore := 0, math.MinInt
		for i, f := range left {
			score := 0
			for _, o := range left {
				if g.Uses[f][o] != nil {
					score++
				}
				if g.Uses[o][f] != nil {
					score--
				}
			}
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		order = append(order, left[best])
		left = slices.Delete(left, best, best+1)
	}
	return order
}

// Report writes the counts and, with verbose, every mutual pair and
// back-arrow with the names that make it.
func (g *graph) Report(w io.Writer, verbose bool) {
	pairs, back := g.MutualPairs(), g.BackArrows()
	fmt.Fprintf(w, "files %d, arrows %d, back-arrows %d, mutual pairs %d\n", len(g.Files), g.Arrows(), len(back), len(pairs))
	if !verbose {
		return
	}
	for _, p := range pairs {
		fmt.Fprintf(w, "mutual %s <-> %s: %s uses %s; %s uses %s\n", p[0], p[1],
			p[0], strings.Join(g.Uses[p[0]][p[1]], ","), p[1], strings.Join(g.Uses[p[1]][p[0]], ","))
	}
	for _, a := range back {
		fmt.Fprintf(w, "back %s -> %s: %s\n", a[0], a[1], strings.Join(g.Uses[a[0]][a[1]], ","))
	}
}
