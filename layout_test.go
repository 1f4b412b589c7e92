package cryptopay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
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

// moduleSources calls f with every non-test Go file of the root module
// (not the companion modules below it, not testdata), parsed.
func moduleSources(t *testing.T, f func(path string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	goSources(t, false, f)
}

// repositorySources calls f with every non-test Go file of the repository,
// parsed: the root module and every module below it (cmd, console,
// pgstore, ...; only those present: a module's zip holds its own files
// alone), not testdata, vendor or node_modules.
func repositorySources(t *testing.T, f func(path string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	goSources(t, true, f)
}

// goSources walks the tree from the repository's root and calls f with
// each non-test Go file, parsed; nested says whether it enters the
// directories of other modules (those with their own go.mod).
func goSources(t *testing.T, nested bool, f func(path string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			if skipDir(path, d.Name(), nested) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(path), fset, file)
		return nil
	})
	require.NoError(t, err)
}

// skipDir says whether the walk leaves out the directory at path: test
// data, vendored or JavaScript packages, hidden directories and, unless
// nested, another module's.
func skipDir(path, name string, nested bool) bool {
	switch {
	case name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, "."):
		return true
	case nested:
		return false
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// TestFunctionsAreShort: no function of the repository's modules (the
// root and every module below it; tests aside) is longer than
// maxFuncLines.
func TestFunctionsAreShort(t *testing.T) {
	var long []string
	repositorySources(t, func(path string, fset *token.FileSet, file *ast.File) {
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

// TestLeafPackagesImportNothingOfTheModule: the SDK's leaf packages under
// internal/ (wire, ids, addrcodec) import no package of this module, and no
// package's own code imports the test harnesses of internal/testkit (only
// tests do): every import of a leaf runs down, and no program links a
// harness.
func TestLeafPackagesImportNothingOfTheModule(t *testing.T) {
	const module = "github.com/cryptopay/cryptopay-go"
	var bad []string
	moduleSources(t, func(path string, _ *token.FileSet, file *ast.File) {
		leaf := strings.HasPrefix(path, "internal/") && !strings.HasPrefix(path, "internal/testkit/")
		harness := strings.HasPrefix(path, "internal/testkit/")
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case leaf && (p == module || strings.HasPrefix(p, module+"/")):
				bad = append(bad, path+" imports "+p+": a leaf package imports nothing of the module")
			case !harness && strings.HasPrefix(p, module+"/internal/testkit/"):
				bad = append(bad, path+" imports "+p+": only tests use the harnesses")
			}
		}
	})
	assert.Empty(t, bad)
}
