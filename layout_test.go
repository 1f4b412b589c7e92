package cryptopay

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxFuncLines is the longest a function of the repository may be, from
// its func line to its closing brace: a longer one does several things and
// is split along them.
const maxFuncLines = 60

// repositorySources calls f with every non-test Go file of the repository,
// parsed: the root module and every module below it (cmd, console,
// pgstore, ...; only those present: a module's zip holds its own files
// alone), not testdata, vendor, node_modules or hidden directories.
func repositorySources(t *testing.T, f func(path string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch name := d.Name(); {
		case err != nil:
			return err
		case d.IsDir() && path != "." && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")):
			return filepath.SkipDir
		case d.IsDir() || filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(path), fset, file)
		return nil
	})
	require.NoError(t, err)
}

// TestFunctionsAreShort: no function of the repository's modules (the
// root and every module below it; tests and generated code aside) is
// longer than maxFuncLines.
func TestFunctionsAreShort(t *testing.T) {
	var long []string
	repositorySources(t, func(path string, fset *token.FileSet, file *ast.File) {
		if ast.IsGenerated(file) {
			return // "// Code generated ... DO NOT EDIT.": its generator decides
		}
		for _, decl := range file.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
					long = append(long, path+": "+fd.Name.Name+" has "+strconv.Itoa(n)+" lines")
				}
			}
		}
	})
	assert.Empty(t, long, "functions longer than %d lines", maxFuncLines)
}

// house is the path every package of this repository starts with.
const house = "github.com/cryptopay/cryptopay-go"

// importArrow is one import of a package of this repository by another
// (from and to are import paths). byCode is set when a non-test file
// makes it; test files' imports are arrows too.
type importArrow struct {
	from, to string
	byCode   bool
}

// houseGraph is the import graph of the repository's own packages, over
// every module of it, read with go/parser (build tags aside: every file
// counts).
type houseGraph struct {
	modules  map[string]string          // module path -> its go.mod's text
	arrows   map[[2]string]*importArrow // {from, to} -> the arrow
	packages int
}

// readHouseGraph parses the imports of every Go file under root (not
// testdata, nor directories Go ignores) and keeps the house's arrows.
func readHouseGraph(t *testing.T, root string) *houseGraph {
	t.Helper()
	g := &houseGraph{modules: map[string]string{}, arrows: map[[2]string]*importArrow{}}
	modDirs := map[string]string{} // directory -> module path
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")):
			return filepath.SkipDir
		case d.Name() == "go.mod":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			mod := modulePath(string(data))
			if mod == "" {
				return fmt.Errorf("%s names no module", path)
			}
			modDirs[filepath.Dir(path)], g.modules[mod] = mod, string(data)
		case filepath.Ext(path) == ".go":
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	pkgs := map[string]bool{}
	for _, path := range files {
		from := importPathOf(modDirs, filepath.Dir(path))
		require.NotEmpty(t, from, "%s is in no module", path)
		pkgs[from] = true
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range file.Imports {
			to, _ := strconv.Unquote(imp.Path.Value)
			if to == from || (to != house && !strings.HasPrefix(to, house+"/")) {
				continue
			}
			a := g.arrows[[2]string{from, to}]
			if a == nil {
				a = &importArrow{from: from, to: to}
				g.arrows[[2]string{from, to}] = a
			}
			a.byCode = a.byCode || !strings.HasSuffix(path, "_test.go")
		}
	}
	g.packages = len(pkgs)
	return g
}

// modulePath returns the path a go.mod's module line names ("" if none).
func modulePath(gomod string) string {
	for _, line := range strings.Split(gomod, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// importPathOf returns the import path of the package in dir, from the
// nearest go.mod at or above it ("" if none).
func importPathOf(modDirs map[string]string, dir string) string {
	for rel := ""; ; {
		if mod, ok := modDirs[dir]; ok {
			return strings.TrimSuffix(mod+"/"+rel, "/")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		rel = strings.TrimSuffix(filepath.ToSlash(filepath.Base(dir))+"/"+rel, "/")
		dir = parent
	}
}

// moduleOf returns the module that holds package p: the longest module
// path that is p or a prefix of it.
func (g *houseGraph) moduleOf(p string) string {
	best := ""
	for mod := range g.modules {
		if (p == mod || strings.HasPrefix(p, mod+"/")) && len(mod) > len(best) {
			best = mod
		}
	}
	return best
}

// within reports whether package p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// runsBackUp reports whether arrow a starts in a package under an
// internal directory D/internal and ends above it: at a package of D's
// tree (the packages D/internal serves) outside D/internal, or at a
// package of a module that a's own module does not require (so not one
// below it). An arrow within D/internal's subtree, or down to a module
// that is required, does not.
func (g *houseGraph) runsBackUp(a *importArrow) bool {
	i := strings.LastIndex(a.from+"/", "/internal/")
	if i < 0 {
		return false
	}
	d := a.from[:i]
	switch {
	case within(a.to, d+"/internal"):
		return false
	case within(a.to, d):
		return true
	}
	target := g.moduleOf(a.to)
	for _, line := range strings.Split(g.modules[g.moduleOf(a.from)], "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require")); len(f) >= 2 && f[0] == target && strings.HasPrefix(f[1], "v") {
			return false
		}
	}
	return true
}

// testOnly lists the root module's internal packages that only tests may
// import: test fixtures, the notice of a test skipped for a missing
// program and the benchmarks' floor, which no program links.
var testOnly = []string{house + "/internal/testfix", house + "/internal/toolnotice", house + "/internal/benchfloor"}

// TestLeafPackagesImportNothingOfTheModule: every package under the root
// module's internal/ (the SDK's leaf packages, and the test-only testfix,
// toolnotice and benchfloor) imports no package of the module, in its code
// or its tests; only tests import those three, in every module; and no
// import arrow of the repository runs back up out of an internal
// directory (runsBackUp), so what sits under internal/ is below
// everything that uses it.
func TestLeafPackagesImportNothingOfTheModule(t *testing.T) {
	g := readHouseGraph(t, ".")
	rules := []struct {
		rule   string
		breaks func(a *importArrow) bool
	}{
		{"a package under internal/ imports nothing of the module", func(a *importArrow) bool {
			return within(a.from, house+"/internal") && g.moduleOf(a.to) == house
		}},
		{"only tests import it", func(a *importArrow) bool {
			return a.byCode && slices.ContainsFunc(testOnly, func(p string) bool { return within(a.to, p) })
		}},
		{"the arrow runs back up out of an internal directory", g.runsBackUp},
	}
	for _, r := range rules {
		var bad []string
		for _, a := range g.arrows {
			if r.breaks(a) {
				bad = append(bad, a.from+" imports "+a.to)
			}
		}
		slices.Sort(bad)
		assert.Empty(t, bad, "%s:\n%s", r.rule, strings.Join(bad, "\n"))
	}
	up := 0
	for _, a := range g.arrows {
		if g.runsBackUp(a) {
			up++
		}
	}
	t.Logf("%d packages, %d house import arrows, %d running back up", g.packages, len(g.arrows), up)
}

// TestRunsBackUp: which arrows run back up out of an internal directory,
// on a made-up repository of three modules (cmd requires the root, not
// pgstore).
func TestRunsBackUp(t *testing.T) {
	g := &houseGraph{modules: map[string]string{
		house:              "module " + house + "\n",
		house + "/cmd":     "module " + house + "/cmd\n\nrequire (\n\t" + house + " v0.9.0\n)\n",
		house + "/pgstore": "module " + house + "/pgstore\n\nrequire " + house + " v0.9.0\n",
	}}
	for _, tt := range []struct {
		from, to string
		up       bool
	}{
		{"/internal/wire", "", true},
		{"/internal/testkit/replicatest", "/webhook", true},
		{"/internal/wire", "/internal/ids", false},
		{"/cryptopaytest/replicatest", "", false},
		{"/webhook", "/internal/ids", false},
		{"/cmd/internal/dashboard", "/cmd/internal/fakeserve", false},
		{"/cmd/internal/dashboard", "/cryptopaytest", false},
		{"/cmd/internal/dashboard", "/cmd/cryptopay", true},
		{"/cmd/internal/dashboard", "/pgstore", true},
		{"/pgstore/internal/pgtest", "/pgstore/pgstoretest", true},
		{"/pgstore/internal/pgtest", "/internal/ids", false},
	} {
		a := &importArrow{from: house + tt.from, to: house + tt.to}
		assert.Equal(t, tt.up, g.runsBackUp(a), "%s imports %s", a.from, a.to)
	}
}
