// Command releasetool publishes the repository's modules, as committed at a
// revision, to a directory laid out as a Go module proxy (GOPROXY=file://…).
// The consumption test and scripts/release.sh use it to see the release
// exactly as a user's go command will: zips built by golang.org/x/mod/zip
// from git, nested modules left out, the root LICENSE copied into each
// nested module the way the module proxy does.
//
// Usage:
//
//	releasetool modules -repo DIR -rev REV
//	releasetool publish -repo DIR -rev REV -out PROXYDIR [-version vX.Y.Z] [-tags]
//	releasetool tidy    -repo DIR -rev REV [-check | -release]
//	releasetool prepare -repo DIR -version X.Y.Z [-date YYYY-MM-DD]
//
// modules prints the directory of every released module, the root first.
// publish writes list, .info, .mod and .zip for each of them at the version
// the root's Version constant declares (or -version); with -tags a module
// whose release tag exists is published from that tag, as the proxy would.
// tidy runs go mod tidy (with -check: go mod tidy -diff) in every module of
// the work tree, outside the workspace, against such a proxy (see tidy.go).
// prepare bumps Version, the requires between the modules, go.work and the
// CHANGELOG together, after checking that they agree (see prepare.go).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// versionFile holds the SDK's Version constant, relative to the repository root.
const versionFile = "version.go"

var versionRE = regexp.MustCompile(`(?m)^const Version = "([^"]+)"$`)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	repo := fs.String("repo", ".", "repository root (a git work tree)")
	rev := fs.String("rev", "HEAD", "git revision to publish")
	out := fs.String("out", "", "proxy directory to write (publish)")
	version := fs.String("version", "", "version (publish: default v + the root's Version; prepare: X.Y.Z)")
	tags := fs.Bool("tags", false, "publish: take a module from its release tag when the tag exists")
	check := fs.Bool("check", false, "tidy: report (go mod tidy -diff) instead of writing")
	release := fs.Bool("release", false, "tidy: write the go.sum lines of our own unreleased version too (scripts/release.sh)")
	date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "prepare: release date for the CHANGELOG heading")
	_ = fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "modules":
		var mods []mod
		mods, err = modules(*repo, *rev)
		for _, m := range mods {
			fmt.Println(m.dir)
		}
	case "publish":
		if *out == "" {
			usage()
		}
		err = publish(*repo, *rev, *out, *version, *tags, os.Stdout)
	case "tidy":
		err = tidy(*repo, *rev, *check, *release)
	case "prepare":
		err = prepare(*repo, *version, *date)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasetool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: releasetool modules|publish|tidy|prepare -repo DIR [-rev REV] [-out PROXYDIR] [-version V] [-tags] [-check] [-date D]")
	os.Exit(2)
}

// mod is one released module: its directory in the repository ("." for the
// root) and its module path.
type mod struct {
	dir, path string
	gomod     []byte
}

// modules lists the released modules at rev: every go.mod in the tree except
// those under scripts/ (tooling such as this one) and testdata/.
func modules(repo, rev string) ([]mod, error) {
	ls, err := git(repo, "ls-tree", "-r", "--name-only", rev)
	if err != nil {
		return nil, err
	}
	var mods []mod
	for _, name := range strings.Split(strings.TrimSpace(string(ls)), "\n") {
		if path.Base(name) != "go.mod" || strings.HasPrefix(name, "scripts/") || strings.Contains("/"+name, "/testdata/") {
			continue
		}
		data, err := git(repo, "show", rev+":"+name)
		if err != nil {
			return nil, err
		}
		mp := modfile.ModulePath(data)
		if mp == "" {
			return nil, fmt.Errorf("%s at %s: no module path", name, rev)
		}
		mods = append(mods, mod{dir: path.Dir(name), path: mp, gomod: data})
	}
	sort.Slice(mods, func(i, j int) bool {
		if (mods[i].dir == ".") != (mods[j].dir == ".") {
			return mods[i].dir == "."
		}
		return mods[i].dir < mods[j].dir
	})
	if len(mods) == 0 || mods[0].dir != "." {
		return nil, fmt.Errorf("no go.mod at the repository root at %s", rev)
	}
	return mods, nil
}

// rootVersion reads "v" + the Version constant at rev.
func rootVersion(repo, rev string) (string, error) {
	src, err := git(repo, "show", rev+":"+versionFile)
	if err != nil {
		return "", err
	}
	m := versionRE.FindSubmatch(src)
	if m == nil {
		return "", fmt.Errorf("%s at %s: no `const Version = \"…\"`", versionFile, rev)
	}
	v := "v" + string(m[1])
	if !semver.IsValid(v) {
		return "", fmt.Errorf("%s at %s: Version %q is not semantic", versionFile, rev, m[1])
	}
	return v, nil
}

// tagName is the tag Go expects for a module's release: vX.Y.Z at the root,
// dir/vX.Y.Z for a nested module.
func tagName(dir, version string) string {
	if dir == "." {
		return version
	}
	return dir + "/" + version
}

func publish(repo, rev, out, version string, preferTags bool, log io.Writer) error {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if version == "" {
		if version, err = rootVersion(abs, rev); err != nil {
			return err
		}
	}
	commit, err := git(abs, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return err
	}
	mods, err := modules(abs, rev)
	if err != nil {
		return err
	}
	// zip.CreateFromVCS wants the root of an ordinary clone (a linked work
	// tree's .git is a file): read through a clone sharing this repository's
	// objects, so commits no ref names yet are there too.
	clone, err := os.MkdirTemp("", "releasetool-clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(clone)
	if _, err := git(abs, "clone", "-q", "--shared", "--no-checkout", abs, clone); err != nil {
		return err
	}
	when := time.Now().UTC()
	if ct, err := git(abs, "show", "-s", "--format=%cI", rev); err == nil {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(ct))); err == nil {
			when = t.UTC()
		}
	}
	src := publishSource{repo: abs, clone: clone, commit: strings.TrimSpace(string(commit)), when: when, preferTags: preferTags}
	for _, m := range mods {
		if err := src.module(m, out, version); err != nil {
			return err
		}
		fmt.Fprintf(log, "%s@%s (%s)\n", m.path, version, m.dir)
	}
	return nil
}

// publishSource is where publish reads the modules from.
type publishSource struct {
	repo, clone, commit string
	when                time.Time // the commit's time, the versions' Time
	preferTags          bool      // a module's tag, when it exists, over commit
}

// module writes m at version into the file proxy out.
func (src publishSource) module(m mod, out, version string) error {
	mv := module.Version{Path: m.path, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	subdir := ""
	if m.dir != "." {
		subdir = m.dir
	}
	from := src.commit
	gomod := m.gomod
	if src.preferTags {
		if c, err := git(src.repo, "rev-parse", "-q", "--verify", "refs/tags/"+tagName(m.dir, version)+"^{commit}"); err == nil {
			from = strings.TrimSpace(string(c))
			if gomod, err = git(src.repo, "show", from+":"+path.Join(m.dir, "go.mod")); err != nil {
				return err
			}
		}
	}
	var zbuf bytes.Buffer
	if err := zip.CreateFromVCS(&zbuf, mv, src.clone, from, subdir); err != nil {
		return fmt.Errorf("%s: %w", m.dir, err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, src.when})
	files := map[string][]byte{
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  zbuf.Bytes(),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(dir, "list"), version)
}

// addToList records version in a proxy's list file, once.
func addToList(file, version string) error {
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(file, append(old, version+"\n"...), 0o644)
}

func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
