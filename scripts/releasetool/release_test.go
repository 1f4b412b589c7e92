package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// TestReleaseScript runs scripts/release.sh as a maintainer would, in a
// clone of this repository (with the work tree's uncommitted changes
// committed on top, so that a change to the script or the tool is what is
// tested). Every refusal leaves the clone's files, index, commits and tags
// as they were; one release bumps and tags every module, and its result
// passes CI's tidy check. Nothing reaches the network: third-party modules
// come from this machine's module download cache, and an HTTP(S) proxy on
// loopback that counts its connections stands in for the internet.
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("TestReleaseScript: skipped with -short (a release runs go mod tidy in every module twice, the check once more)")
	}
	for _, tool := range []string{"git", "bash", "go"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "TestReleaseScript needs %s", tool)
	}
	env, connects := offlineEnv(t)
	base := cloneWorkTree(t)
	cur := versionIn(t, base)
	next := nextMinor(t, cur)
	later := nextMinor(t, next)
	addChangelogSection(t, base, next)
	sdk := modfile.ModulePath([]byte(readFile(t, base, "go.mod")))
	require.NotEmpty(t, sdk)

	type setup func(t *testing.T, dir string)
	edit := func(name, old, new string) setup {
		return func(t *testing.T, dir string) {
			data := readFile(t, dir, name)
			require.Contains(t, data, old, "%s: the fixture's edit finds nothing to change", name)
			writeFiles(t, dir, map[string]string{name: strings.Replace(data, old, new, 1)})
			commitAll(t, dir, "an edit for the test")
		}
	}
	tag := func(name string) setup {
		return func(t *testing.T, dir string) { gitT(t, dir, "tag", "-a", "-m", name, name) }
	}
	refusals := []struct {
		name  string
		setup setup
		args  []string
		want  []string // in the output, in this order
	}{
		{
			name: "a changed file",
			setup: func(t *testing.T, dir string) {
				writeFiles(t, dir, map[string]string{"client.go": readFile(t, dir, "client.go") + "\n// edited\n"})
			},
			args: []string{next},
			want: []string{"release: the work tree is not clean", "client.go"},
		},
		{
			name: "a staged change",
			setup: func(t *testing.T, dir string) {
				writeFiles(t, dir, map[string]string{"pgstore/staged.go": "package pgstore\n"})
				gitT(t, dir, "add", "pgstore/staged.go")
			},
			args: []string{next},
			want: []string{"release: the work tree is not clean", "pgstore/staged.go"},
		},
		{
			name:  "an untracked file",
			setup: func(t *testing.T, dir string) { writeFiles(t, dir, map[string]string{"notes.txt": "draft\n"}) },
			args:  []string{next},
			want:  []string{"release: the work tree is not clean", "notes.txt"},
		},
		{
			name: "no CHANGELOG section for the version",
			args: []string{later},
			want: []string{`CHANGELOG.md has no "## [` + later + `]" section`, "release: refused; nothing changed"},
		},
		{
			name:  "a companion module requires the SDK at another version",
			setup: edit("redisstore/go.mod", sdk+" v"+cur, sdk+" v0.0.9"),
			args:  []string{next},
			want:  []string{"redisstore/go.mod requires " + sdk + " v0.0.9", "release: refused; nothing changed"},
		},
		{
			name:  "cmd requires pgstore at another version",
			setup: edit("cmd/go.mod", sdk+"/pgstore v"+cur, sdk+"/pgstore v0.0.9"),
			args:  []string{next},
			want:  []string{"cmd/go.mod requires " + sdk + "/pgstore v0.0.9", "release: refused; nothing changed"},
		},
		{
			name: "a go.mod replaces the SDK",
			setup: func(t *testing.T, dir string) {
				edit("pgstore/go.mod", "\nrequire", "\nreplace "+sdk+" => ../\n\nrequire")(t, dir)
			},
			args: []string{next},
			want: []string{"pgstore/go.mod replaces " + sdk + " ", "release: refused; nothing changed"},
		},
		{
			name:  "go.work replaces the SDK at another version",
			setup: edit("go.work", sdk+" v"+cur+" =>", sdk+" v0.0.9 =>"),
			args:  []string{next},
			want:  []string{"go.work replaces " + sdk + " v0.0.9, not Version v" + cur, "release: refused; nothing changed"},
		},
		{name: "the root module's tag exists", setup: tag("v" + next), args: []string{next}, want: []string{"release: tag v" + next + " exists already"}},
		{name: "a nested module's tag exists", setup: tag("otelcryptopay/v" + next), args: []string{"v" + next}, want: []string{"release: tag otelcryptopay/v" + next + " exists already"}},
		{name: "two numbers", args: []string{"0.2"}, want: []string{"release: version 0.2: want X.Y.Z"}},
		{name: "four numbers", args: []string{next + ".1"}, want: []string{"release: version " + next + ".1: want X.Y.Z"}},
		{name: "a word", args: []string{"latest"}, want: []string{"release: version latest: want X.Y.Z"}},
		{name: "an empty version", args: []string{""}, want: []string{"release: version : want X.Y.Z"}},
		{name: "build metadata", args: []string{next + "+build.1"}, want: []string{"release: version " + next + "+build.1: want X.Y.Z"}},
		{name: "a leading zero", args: []string{"0" + next}, want: []string{`version "0` + next + `": want X.Y.Z`, "release: refused; nothing changed"}},
		{name: "no version", want: []string{"release: usage: scripts/release.sh X.Y.Z"}},
		{name: "two versions", args: []string{next, later}, want: []string{"release: usage: scripts/release.sh X.Y.Z"}},
	}
	// The subtests run side by side (each in its own clone); the count of
	// connections is checked once they all have finished.
	t.Cleanup(func() { assert.Zero(t, connects.Load(), "connections to the stand-in for the internet") })
	for _, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			t.Parallel()
			dir := cloneRepo(t, base)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			before := repoState(t, dir)
			out, code := runRelease(t, dir, env, tt.args...)
			assert.NotZero(t, code, "release.sh exit code; output:\n%s", out)
			at := 0
			for _, w := range tt.want {
				i := strings.Index(out[at:], w)
				if !assert.GreaterOrEqual(t, i, 0, "output lacks %q (after byte %d):\n%s", w, at, out) {
					break
				}
				at += i + len(w)
			}
			assert.NotContains(t, out, "tagged ")
			assert.Empty(t, stateChanges(before, repoState(t, dir)), "a refusal changes nothing")
		})
	}

	t.Run("releases every module", func(t *testing.T) {
		t.Parallel()
		dir := cloneRepo(t, base)
		head := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		oldTags := strings.Fields(gitT(t, dir, "tag", "--list"))
		old := readTree(t, dir)
		mods, err := modules(dir, "HEAD")
		require.NoError(t, err)
		var dirs []string
		for _, m := range mods {
			dirs = append(dirs, m.dir)
		}
		assert.Subset(t, dirs, []string{".", "cmd", "redisstore", "pgstore", "otelcryptopay"})

		dayBefore := time.Now().UTC().Format(time.DateOnly)
		out, code := runRelease(t, dir, env, next)
		dayAfter := time.Now().UTC().Format(time.DateOnly)
		require.Zero(t, code, "release.sh %s:\n%s", next, out)
		v := "v" + next

		// One new commit, on top of what was there, and nothing left over.
		assert.Equal(t, "1", strings.TrimSpace(gitT(t, dir, "rev-list", "--count", head+"..HEAD")))
		assert.Equal(t, head, strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD^")))
		assert.Empty(t, gitT(t, dir, "status", "--porcelain", "--untracked-files=all"))
		release := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))

		// Tags: vX.Y.Z and DIR/vX.Y.Z, annotated, at the release commit, and no other.
		var wantTags []string
		for _, d := range dirs {
			name := tagName(d, v)
			wantTags = append(wantTags, name)
			assert.Contains(t, out, "tagged "+name+"\n")
			if assert.Contains(t, strings.Fields(gitT(t, dir, "tag", "--list", name)), name) {
				assert.Equal(t, "tag", strings.TrimSpace(gitT(t, dir, "cat-file", "-t", name)), name)
				assert.Equal(t, release, strings.TrimSpace(gitT(t, dir, "rev-parse", name+"^{commit}")), name)
			}
		}
		assert.ElementsMatch(t, append(oldTags, wantTags...), strings.Fields(gitT(t, dir, "tag", "--list")))

		// The release commit changes Version, go.mod, go.sum, go.work and
		// CHANGELOG.md, and nothing else.
		for _, name := range strings.Fields(gitT(t, dir, "diff", "--name-only", head, "HEAD")) {
			assert.Contains(t, []string{versionFile, changelogFile, "go.work", "go.mod", "go.sum"}, path.Base(name), "the release commit changes %s", name)
		}
		now := readTree(t, dir)
		assert.Equal(t, strings.Replace(old[versionFile], `const Version = "`+cur+`"`, `const Version = "`+next+`"`, 1), now[versionFile])

		// Every require of one of our modules moves from cur to next, in
		// place; every companion requires the SDK; go.sum holds the new
		// version's lines.
		for _, m := range mods {
			name := path.Join(m.dir, "go.mod")
			f, err := modfile.Parse(name, []byte(now[name]), nil)
			require.NoError(t, err)
			want, requiresSDK := old[name], false
			for _, r := range f.Require {
				if !modulePaths(mods)[r.Mod.Path] {
					continue
				}
				requiresSDK = requiresSDK || r.Mod.Path == sdk
				assert.Equal(t, v, r.Mod.Version, "%s requires %s", name, r.Mod.Path)
				want = strings.ReplaceAll(want, r.Mod.Path+" v"+cur+"\n", r.Mod.Path+" "+v+"\n")
				sum := now[path.Join(m.dir, "go.sum")]
				assert.Contains(t, sum, r.Mod.Path+" "+v+" h1:", "%s/go.sum", m.dir)
				assert.Contains(t, sum, r.Mod.Path+" "+v+"/go.mod h1:", "%s/go.sum", m.dir)
			}
			assert.Equal(t, want, now[name])
			assert.Equal(t, m.dir != ".", requiresSDK, "%s requires the SDK", name)
		}

		// go.work's versioned replaces move to next, nothing else changes.
		wf, err := modfile.ParseWork("go.work", []byte(old["go.work"]), nil)
		require.NoError(t, err)
		wantWork, moved := old["go.work"], 0
		for _, r := range wf.Replace {
			if modulePaths(mods)[r.Old.Path] && r.Old.Version != "" {
				wantWork = strings.Replace(wantWork, r.Old.Path+" "+r.Old.Version+" =>", r.Old.Path+" "+v+" =>", 1)
				moved++
			}
		}
		assert.Positive(t, moved, "go.work has a versioned replace of ours")
		assert.Equal(t, wantWork, now["go.work"])

		// CHANGELOG: [Unreleased] is empty, its entries are in the dated
		// section, and the links point at the new tag.
		heading := regexp.QuoteMeta("## [" + next + "] - ")
		assert.Regexp(t, `(?m)^## \[Unreleased\]\n\n`+heading+`(`+dayBefore+`|`+dayAfter+`)\n`, now[changelogFile])
		released := sectionBody(t, now[changelogFile], "## ["+next+"]")
		for _, l := range sectionBody(t, old[changelogFile], "## [Unreleased]") {
			if strings.TrimSpace(l) != "" {
				assert.Contains(t, released, l, "an [Unreleased] line missing from [%s]", next)
			}
		}
		assert.Contains(t, released, "- Release "+next+" of every module (a test of scripts/release.sh).")
		assert.Regexp(t, `(?m)^\[Unreleased\]: \S+/compare/`+regexp.QuoteMeta(v)+`\.\.\.HEAD$`, now[changelogFile])
		assert.Regexp(t, `(?m)^\[`+regexp.QuoteMeta(next)+`\]: \S+/releases/tag/`+regexp.QuoteMeta(v)+`$`, now[changelogFile])

		// CI's check passes on the release.
		check := exec.Command("go", "run", ".", "tidy", "-repo", "../..", "-check")
		check.Dir = filepath.Join(dir, "scripts", "releasetool")
		check.Env = env
		checkOut, err := check.CombinedOutput()
		assert.NoError(t, err, "releasetool tidy -check after the release:\n%s", checkOut)
		assert.NotContains(t, string(checkOut), "will gain", "every go.sum line of the release is committed")
	})
}

// offlineEnv is the environment of release.sh and of the go commands: our
// modules come from file proxies of the clone (release.sh and the tidy
// check build those), everything else from this machine's module download
// cache read as a file proxy, with no fall-back. HTTP and HTTPS go to a
// proxy on loopback that closes every connection; the count of its
// connections is returned, and must stay 0: a checksum database lookup or a
// toolchain download would show up there.
func offlineEnv(t *testing.T) ([]string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var connects atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connects.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	proxy := "http://" + ln.Addr().String()
	return append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")),
		"GOPRIVATE=", "GONOPROXY=", "GOTOOLCHAIN=local", "GOWORK=off",
		"HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "ALL_PROXY="+proxy,
		"http_proxy="+proxy, "https_proxy="+proxy, "all_proxy="+proxy,
		"NO_PROXY=", "no_proxy=",
	), &connects
}

// cloneWorkTree clones the repository this test runs in and commits on top
// the work tree's changes (tracked files changed or deleted, untracked
// files not ignored), reading the repository and writing nothing to it.
func cloneWorkTree(t *testing.T) string {
	t.Helper()
	root := strings.TrimSpace(gitT(t, ".", "rev-parse", "--show-toplevel"))
	dir := cloneRepo(t, root)
	changed := gitT(t, root, "diff", "--name-only", "-z", "HEAD") + gitT(t, root, "ls-files", "-z", "--others", "--exclude-standard")
	for _, name := range strings.Split(changed, "\x00") {
		if name == "" {
			continue
		}
		src, dst := filepath.Join(root, name), filepath.Join(dir, name)
		info, err := os.Stat(src)
		if errors.Is(err, os.ErrNotExist) {
			require.NoError(t, os.RemoveAll(dst))
			continue
		}
		require.NoError(t, err)
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, info.Mode().Perm()))
		require.NoError(t, os.Chmod(dst, info.Mode().Perm()))
	}
	if gitT(t, dir, "status", "--porcelain") != "" {
		commitAll(t, dir, "the work tree's uncommitted changes")
	}
	return dir
}

// cloneRepo clones repo into a temporary directory, with no remote.
func cloneRepo(t *testing.T, repo string) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, repo, "clone", "--quiet", repo, dir)
	gitT(t, dir, "remote", "remove", "origin")
	return dir
}

// versionIn reads the Version constant of the work tree in dir.
func versionIn(t *testing.T, dir string) string {
	t.Helper()
	m := versionRE.FindStringSubmatch(readFile(t, dir, versionFile))
	require.NotNil(t, m, "no Version in %s", versionFile)
	return m[1]
}

// nextMinor is the release after version X.Y.Z: X.(Y+1).0.
func nextMinor(t *testing.T, version string) string {
	t.Helper()
	var major, minor int
	_, err := fmt.Sscanf(semver.MajorMinor("v"+version), "v%d.%d", &major, &minor)
	require.NoError(t, err, "version %q", version)
	return fmt.Sprintf("%d.%d.0", major, minor+1)
}

// addChangelogSection commits a "## [version]" section, with one entry,
// right after [Unreleased]'s entries, as a maintainer does before a release.
func addChangelogSection(t *testing.T, dir, version string) {
	t.Helper()
	cl := strings.Split(readFile(t, dir, changelogFile), "\n")
	u := -1
	for i, l := range cl {
		if u < 0 && (l == "## [Unreleased]" || strings.HasPrefix(l, "## [Unreleased] ")) {
			u = i
			continue
		}
		if u >= 0 && (strings.HasPrefix(l, "## ") || linkRE.MatchString(l)) {
			cl = append(cl[:i], append([]string{"## [" + version + "]", "", "### Added", "- Release " + version + " of every module (a test of scripts/release.sh).", ""}, cl[i:]...)...)
			break
		}
	}
	require.GreaterOrEqual(t, u, 0, "%s has no [Unreleased] section", changelogFile)
	writeFiles(t, dir, map[string]string{changelogFile: strings.Join(cl, "\n")})
	commitAll(t, dir, "CHANGELOG: the "+version+" section")
}

// sectionBody returns the lines of a CHANGELOG section, after its heading
// (which starts with prefix) up to the next section or link definitions.
func sectionBody(t *testing.T, text, prefix string) []string {
	t.Helper()
	cl := strings.Split(text, "\n")
	for i, l := range cl {
		if l != prefix && !strings.HasPrefix(l, prefix+" ") {
			continue
		}
		for j := i + 1; j < len(cl); j++ {
			if strings.HasPrefix(cl[j], "## ") || linkRE.MatchString(cl[j]) {
				return cl[i+1 : j]
			}
		}
		return cl[i+1:]
	}
	t.Fatalf("no %q section", prefix)
	return nil
}

// runRelease runs scripts/release.sh args in dir, returning its output
// (standard output and error) and exit code.
func runRelease(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(dir, "scripts", "release.sh")}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

// repoState is everything a release could change in a clone: HEAD, every
// ref (branches and tags), the index against HEAD, and every file of the
// work tree.
func repoState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := readTree(t, dir)
	state[".git HEAD"] = gitT(t, dir, "rev-parse", "HEAD")
	state[".git refs"] = gitT(t, dir, "for-each-ref", "--format=%(objectname) %(refname)")
	state[".git index"] = gitT(t, dir, "diff", "--cached", "--binary", "HEAD")
	state[".git status"] = gitT(t, dir, "status", "--porcelain", "--untracked-files=all")
	return state
}

// stateChanges names what differs between two repoStates: a file by its
// name, git's state with both values.
func stateChanges(before, after map[string]string) []string {
	var changes []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			changes = append(changes, name+": removed")
		case a != b && strings.HasPrefix(name, ".git "):
			changes = append(changes, fmt.Sprintf("%s: %q, was %q", name, a, b))
		case a != b:
			changes = append(changes, name+": changed")
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			changes = append(changes, name+": added")
		}
	}
	sort.Strings(changes)
	return changes
}

// modulePaths is the set of module paths of mods.
func modulePaths(mods []mod) map[string]bool {
	set := map[string]bool{}
	for _, m := range mods {
		set[m.path] = true
	}
	return set
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(data)
}
