package cryptopay_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/internal/toolnotice"
)

// The Go snippets of README.md, docs/*.md and doc.go are checked here, so a renamed
// or changed API cannot leave the documentation behind:
//
//   - a snippet of the root module is compiled, as a package of its own, by
//     `go build` with an overlay (nothing is written into the repository and
//     nothing is downloaded). A snippet that starts with `package` is a whole
//     file; one with a top-level `func` is a set of declarations; anything
//     else is a function body. The standard and SDK packages it names are
//     imported for it, and snippetPrelude declares the few variables that
//     fragments take from their surroundings (ctx, client, secret, ...).
//     "declared and not used" and "imported and not used" are ignored: a
//     fragment shows how a value is made, not everything done with it.
//   - a snippet that uses a companion module (pgstore, redisstore,
//     otelcryptopay) needs that module's dependencies, so it must appear
//     verbatim (indentation aside) in a Go file of that module, usually one
//     of its Examples, which that module's own build compiles.
//   - a block of signatures (every line that is not blank or a comment is a
//     `func` declaration without its body) must match declarations of the
//     repository's Go source, line for line: a documented signature that no
//     longer compiles (a parameter added, a result changed) fails.
//   - every snippet of README.md, but a whole program (`package main`,
//     compiled as it stands), also appears verbatim in a Go file of the
//     repository: an Example or an example program that runs it.
//
// Every error names the Markdown file and line of the snippet.

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file string // as given to docSnippets, e.g. "README.md"
	line int    // line of the snippet's first code line, 1-based
	code string
}

// docSnippets returns the ```go blocks of the named Markdown files.
func docSnippets(t *testing.T, root string, files []string) []snippet {
	t.Helper()
	var out []snippet
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		var cur *snippet
		var body []string
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case cur == nil && strings.TrimSpace(line) == "```go":
				cur = &snippet{file: name, line: n + 1}
				body = body[:0]
			case cur != nil && strings.TrimSpace(line) == "```":
				cur.code = strings.Join(body, "\n") + "\n"
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				body = append(body, line)
			}
		}
		require.NoError(t, sc.Err())
		require.Nil(t, cur, "%s: a ```go block is not closed", name)
	}
	return out
}

// goDocSnippets returns the code blocks (tab-indented lines) of a Go file's
// comments, such as the package overview in doc.go.
func goDocSnippets(t *testing.T, root, name string) []snippet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	var out []snippet
	var cur *snippet
	for n, line := range strings.Split(string(data), "\n") {
		code, ok := strings.CutPrefix(strings.TrimPrefix(line, "//"), "\t")
		switch {
		case ok && cur == nil:
			cur = &snippet{file: name, line: n + 1, code: code + "\n"}
		case ok:
			cur.code += code + "\n"
		case cur != nil:
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

// companionUses maps the package names only a companion module's snippets
// use to that module's directory.
var companionUses = []struct{ name, module string }{
	{"pgstore", "pgstore"}, {"pgx", "pgstore"}, {"pgxpool", "pgstore"},
	{"redisstore", "redisstore"}, {"redis", "redisstore"},
	{"otelcryptopay", "otelcryptopay"},
	{"console", "console"}, {"claim", "pgstore"},
}

// snippetImports are the packages a root snippet may name without importing
// them itself.
var snippetImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "io": "io",
	"log": "log", "slog": "log/slog", "os": "os", "strings": "strings",
	"time": "time", "testing": "testing", "rand": "crypto/rand",
	"http": "net/http", "httptest": "net/http/httptest",
	"json":          "encoding/json",
	"decimal":       "github.com/shopspring/decimal",
	"cryptopay":     "github.com/cryptopay/cryptopay-go",
	"cryptopaytest": "github.com/cryptopay/cryptopay-go/cryptopaytest",
	"dedupetest":    "github.com/cryptopay/cryptopay-go/cryptopaytest/dedupetest",
	"webhook":       "github.com/cryptopay/cryptopay-go/webhook",
}

// snippetPrelude declares what fragments take from their surroundings.
const snippetPrelude = `package snippet

import (
	"context"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

var (
	ctx             context.Context
	store           webhook.DedupeStore
	client          *cryptopay.Client
	srv             *cryptopaytest.Server
	params          cryptopay.CreatePayoutParams
	payment         *cryptopay.Payment
	paid            chan *cryptopay.Payment
	bus             cryptopay.WakeupBus
	secret          []byte
	baseURL, apiKey string
	traceID         string
	err             error
)
`

var (
	lineComment = regexp.MustCompile(`(^|\s)//.*`)
	// pkgUse finds "name." not preceded by an identifier character or a dot.
	pkgUse       = regexp.MustCompile(`(?:^|[^\w.])([a-z][a-z0-9]*)\.`)
	topLevelFunc = regexp.MustCompile(`(?m)^func `)
	compileMsg   = regexp.MustCompile(`^(.+?):(\d+)(:\d+)?: (.*)$`)
)

// usedPackages returns the package-like names code refers to, comments
// left out.
func usedPackages(code string) map[string]bool {
	used := map[string]bool{}
	for _, m := range pkgUse.FindAllStringSubmatch(lineComment.ReplaceAllString(code, ""), -1) {
		used[m[1]] = true
	}
	return used
}

// companionModule returns the companion module a snippet needs, or "".
func companionModule(code string) string {
	used := usedPackages(code)
	for _, c := range companionUses {
		if used[c.name] {
			return c.module
		}
	}
	return ""
}

// normalizedLines is code's non-blank lines without surrounding spaces,
// joined by "\n" and framed by "\n".
func normalizedLines(code string) string {
	var b strings.Builder
	b.WriteString("\n")
	for l := range strings.Lines(code) {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// checkCompanion reports a problem unless s appears in a Go file of its
// module.
func checkCompanion(t *testing.T, root, module string, s snippet) []string {
	t.Helper()
	want := normalizedLines(s.code)
	found := false
	err := filepath.WalkDir(filepath.Join(root, module), func(path string, d os.DirEntry, err error) error {
		if err != nil || found || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(normalizedLines(string(data)), want) {
			found = true
		}
		return err
	})
	require.NoError(t, err)
	if found {
		return nil
	}
	return []string{fmt.Sprintf("%s:%d: this %s snippet appears in no Go file of %s/ (copy it from one of its Examples, or put it in one)", s.file, s.line, module, module)}
}

// isSignatures reports whether code is a block of signatures: each line
// that is not blank or a comment declares a func without its body.
func isSignatures(code string) bool {
	n := 0
	for l := range strings.Lines(code) {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "//"):
		case strings.HasPrefix(l, "func ") && !strings.HasSuffix(l, "{") && !strings.HasSuffix(l, "}"):
			n++
		default:
			return false
		}
	}
	return n > 0
}

// declarationLines returns the lines of the repository's Go source (test
// files and testdata left out) that declare a func, cut before the body's
// "{", once.
var declarationLines = sync.OnceValues(func() (map[string]bool, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	decls := map[string]bool{}
	err = walkGoFiles(root, func(path, src string) {
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		for l := range strings.Lines(src) {
			if decl, _, ok := strings.Cut(strings.TrimSpace(l), " {"); ok && strings.HasPrefix(l, "func ") {
				decls[decl] = true
			}
		}
	})
	return decls, err
})

// walkGoFiles calls fn with every Go file of the repository (testdata and
// hidden directories left out) and its text.
func walkGoFiles(root string, fn func(path, src string)) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil {
			fn(path, string(data))
		}
		return err
	})
}

// checkSignatures reports each signature of s that declares nothing in the
// repository's source.
func checkSignatures(t *testing.T, root string, s snippet) []string {
	t.Helper()
	decls, err := declarationLines()
	require.NoError(t, err)
	var problems []string
	n := 0
	for l := range strings.Lines(s.code) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "func ") && !decls[l] {
			problems = append(problems, fmt.Sprintf("%s:%d: this signature declares nothing in the source (changed or removed?): %s", s.file, s.line+n, l))
		}
		n++
	}
	return problems
}

// snippetSource turns a root snippet into a Go file whose positions are the
// Markdown file's (a //line directive).
func snippetSource(root string, s snippet) string {
	at := fmt.Sprintf("//line %s:%d\n", filepath.Join(root, s.file), s.line)
	if rest, ok := strings.CutPrefix(s.code, "package main\n"); ok {
		// Compiled as a library, so that go build writes no executable
		// into the repository.
		return at + "package snippet\n" + rest
	}
	if strings.HasPrefix(strings.TrimSpace(s.code), "package ") {
		return at + s.code
	}
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	used := usedPackages(s.code)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range used {
			if _, ok := snippetImports[name]; ok && !yield(name) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "\t%s %q\n", name, snippetImports[name])
	}
	b.WriteString(")\n\n")
	if topLevelFunc.MatchString(s.code) {
		b.WriteString(at + s.code)
	} else {
		b.WriteString("func _() {\n" + at + s.code + "}\n")
	}
	return b.String()
}

// compileSnippets checks the snippets and returns one line per problem.
func compileSnippets(t *testing.T, root string, snippets []snippet) []string {
	t.Helper()
	var problems, pkgs []string
	overlay := map[string]string{}
	tmp := t.TempDir()
	for i, s := range snippets {
		if isSignatures(s.code) {
			problems = append(problems, checkSignatures(t, root, s)...)
			continue
		}
		if module := companionModule(s.code); module != "" {
			problems = append(problems, checkCompanion(t, root, module, s)...)
			continue
		}
		dir := fmt.Sprintf("internal/docsnippets/s%03d", i)
		files := map[string]string{"snippet.go": snippetSource(root, s)}
		if !strings.HasPrefix(strings.TrimSpace(s.code), "package ") {
			files["prelude.go"] = snippetPrelude
		}
		for name, src := range files {
			real := filepath.Join(tmp, fmt.Sprintf("s%03d_%s", i, name))
			require.NoError(t, os.WriteFile(real, []byte(src), 0o600))
			overlay[filepath.Join(root, dir, name)] = real
		}
		pkgs = append(pkgs, "./"+dir)
	}
	if len(pkgs) == 0 {
		return problems
	}
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	ovFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ovFile, ov, 0o600))

	cmd := exec.Command("go", append([]string{"build", "-overlay=" + ovFile, "-gcflags=-e"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return problems
	}
	ignored := 0
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "# "):
		case strings.Contains(l, "declared and not used") || strings.Contains(l, "imported and not used"):
			ignored++
		case compileMsg.MatchString(l):
			problems = append(problems, strings.TrimPrefix(strings.TrimPrefix(l, root+string(filepath.Separator)), "./"))
		default:
			problems = append(problems, "go build: "+l)
		}
	}
	if ignored == 0 && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("go build failed: %v\n%s", err, out))
	}
	return problems
}

// TestDocSnippetsCompile compiles every Go snippet of README.md, docs/*.md
// and the package overview in doc.go (see the comment at the top of this
// file).
func TestDocSnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		toolnotice.Missing(t, "the go command is not on PATH")
	}
	root, err := os.Getwd()
	require.NoError(t, err)
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, g := range guides {
		files = append(files, filepath.Join("docs", filepath.Base(g)))
	}
	snippets := append(docSnippets(t, root, files), goDocSnippets(t, root, "doc.go")...)
	require.NotEmpty(t, snippets)
	assert.Empty(t, compileSnippets(t, root, snippets), "Go snippets in the documentation that no longer compile")
}

// TestDocSnippetsCheckFails proves the check catches what it is for: a
// snippet that does not compile, and a companion snippet found in no file of
// its module, each named by its Markdown line.
func TestDocSnippetsCheckFails(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	cases := []struct {
		name string
		code string
		want string // "" when the snippet is fine; else what its one problem says
		at   int    // the problem's line within the snippet, from 0
	}{
		{"fragment that compiles", "p, err := client.GetPayment(ctx, \"id\")\n", "", 0},
		{"whole file that compiles", "package main\n\nfunc main() {}\n", "", 0},
		{"declarations that compile", "func TestX(t *testing.T) { t.Log(cryptopay.Version) }\n", "", 0},
		{"renamed method", "p, err := client.GetPaymentByID(ctx, \"id\")\n", "GetPaymentByID undefined", 0},
		{"wrong type, second line", "var n int\nn = cryptopay.Version\n", "cannot use cryptopay.Version", 1},
		{"companion snippet in no file", "store, err := pgstore.NoSuchThing(pool)\n", "this pgstore snippet appears in no Go file", 0},
		{"signatures that match", "func (h *Handler) Refusals() RefusalStats\nfunc (c *Client) Notify(ctx context.Context, obj any) int\n", "", 0},
		{"signature changed", "// the enqueue\nfunc (q *Queue) EnqueueBy(ctx context.Context, tx pgx.Tx, actor string, p cryptopay.CreatePayoutParams) (created bool, err error)\n",
			"this signature declares nothing in the source", 1},
	}
	// One build for all cases: case i starts at line 100*i+10 of its own
	// file, so each problem names its case.
	var snippets []snippet
	for i, tc := range cases {
		snippets = append(snippets, snippet{file: fmt.Sprintf("case%d.md", i), line: 100*i + 10, code: tc.code})
	}
	problems := compileSnippets(t, root, snippets)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mine []string
			for _, p := range problems {
				if strings.HasPrefix(p, fmt.Sprintf("case%d.md:", i)) {
					mine = append(mine, p)
				}
			}
			if tc.want == "" {
				assert.Empty(t, mine)
				return
			}
			require.Len(t, mine, 1, "%q", problems)
			assert.Contains(t, mine[0], fmt.Sprintf("case%d.md:%d:", i, 100*i+10+tc.at))
			assert.Contains(t, mine[0], tc.want)
		})
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(md, ""), -1) {
		slug := slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		anchors[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return anchors
}

// TestDocLinks checks that every relative link of README.md and docs/*.md
// to a Markdown file reaches an existing file and, with a #fragment, an
// existing heading: moving a section is then caught where it is linked.
func TestDocLinks(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	// Each target's headings, read once (a guide is linked hundreds of
	// times; reading and scanning it for every link took seconds under
	// -race).
	anchors := map[string]map[string]bool{}
	headings := func(target string) (map[string]bool, error) {
		if a, ok := anchors[target]; ok {
			return a, nil
		}
		md, err := os.ReadFile(target)
		if err != nil {
			return nil, err
		}
		anchors[target] = headingAnchors(string(md))
		return anchors[target], nil
	}
	for _, file := range append([]string{filepath.Join(root, "README.md")}, guides...) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		text := mdFence.ReplaceAllString(string(data), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			path, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(path, "://") || (path != "" && !strings.HasSuffix(path, ".md")) {
				continue
			}
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
			}
			name, _ := filepath.Rel(root, file)
			heads, err := headings(target)
			if !assert.NoError(t, err, "%s links to %s", name, m[1]) || anchor == "" {
				continue
			}
			assert.True(t, heads[anchor], "%s links to %s: no such heading", name, m[1])
		}
	}
}

// mdCode is a Markdown code span.
var mdCode = regexp.MustCompile("`([^`\n]+)`")

// fileMapped are the directories docs/project.md maps file by file; every
// other package of the root module is mapped as a whole, by its directory.
var fileMapped = []string{".", "webhook", "cryptopaytest", "pgstore", "cmd/cryptopay"}

// mappedRoots are the trees whose source files the map must name: the root
// module, and the companion modules' packages it maps file by file (with
// their subpackages, by directory).
var mappedRoots = []string{".", "pgstore", "cmd/cryptopay"}

// TestProjectMapListsEverySourceFile checks that the map of the code in
// docs/project.md ("How the code is laid out") names every Go source file
// of the root module, pgstore and the CLI: a file of the root package in
// the SDK's table, a file of webhook, pgstore or cmd/cryptopay by its path,
// a file of cryptopaytest in that directory's row; any other package by
// its directory, or by its name in its parent directory's row. A new or
// moved file is then caught until the map says where it is.
func TestProjectMapListsEverySourceFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("docs", "project.md"))
	require.NoError(t, err)
	_, layout, ok := strings.Cut(string(data), "\n## How the code is laid out\n")
	require.True(t, ok, "docs/project.md has no section \"How the code is laid out\"")
	layout, _, _ = strings.Cut(layout, "\n## ")
	sdkTable, _, _ := strings.Cut(layout, "\nAround it:")
	spans := func(text string) map[string]bool {
		set := map[string]bool{}
		for _, m := range mdCode.FindAllStringSubmatch(text, -1) {
			set[m[1]] = true
		}
		return set
	}
	anywhere, inSDK := spans(layout), spans(sdkTable)
	// row returns the code spans of the table rows whose first cell is
	// `dir/`.
	row := func(dir string) map[string]bool {
		var rows []string
		for _, line := range strings.Split(layout, "\n") {
			if first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |"); strings.Contains(first, "`"+dir+"/`") {
				rows = append(rows, line)
			}
		}
		return spans(strings.Join(rows, "\n"))
	}
	listed := func(dir, file string) bool {
		switch {
		case dir == ".":
			return inSDK[file]
		case anywhere[dir+"/"+file] || row(dir)[file]:
			return true
		case slices.Contains(fileMapped, dir):
			return false
		}
		return anywhere[dir] || anywhere[dir+"/"] || row(filepath.ToSlash(filepath.Dir(dir)))[filepath.Base(dir)]
	}
	var missing []string
	for _, root := range mappedRoots {
		err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
					return filepath.SkipDir // a companion module: walked from mappedRoots, or not mapped file by file
				}
				return nil
			}
			if filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			if dir := filepath.ToSlash(filepath.Dir(path)); !listed(dir, d.Name()) {
				missing = append(missing, filepath.ToSlash(path))
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Empty(t, missing, "source files docs/project.md's map of the code does not list")
}

// TestReadmeIsShort: the README is the first page a newcomer reads, and
// at most 500 lines; the guides belong in docs/.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(data), "\n"), 500, "README.md: move a section to docs/")
}

// TestReadmeSnippetsLiveInGoFiles: every Go snippet of README.md but a whole
// program (compiled as it stands by TestDocSnippetsCompile) appears
// verbatim, indentation aside, in a Go file of the repository, an Example
// or an example program that runs it (signature blocks are checked
// against the source instead).
func TestReadmeSnippetsLiveInGoFiles(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	var sources []string
	require.NoError(t, walkGoFiles(root, func(path, src string) {
		if filepath.Base(path) != "docs_test.go" {
			sources = append(sources, normalizedLines(src))
		}
	}))
	snippets := docSnippets(t, root, []string{"README.md"})
	require.NotEmpty(t, snippets)
	for _, s := range snippets {
		if strings.HasPrefix(s.code, "package main\n") || isSignatures(s.code) {
			continue
		}
		want := normalizedLines(s.code)
		assert.True(t, slices.ContainsFunc(sources, func(src string) bool { return strings.Contains(src, want) }),
			"%s:%d: this snippet appears in no Go file: put it in an Example or an example program that runs it", s.file, s.line)
	}
}
