package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// tidy runs `go mod tidy` (check: `go mod tidy -diff`) in every module of
// the work tree, this tool's own included, outside the workspace (go mod
// tidy reads no go.work anyway) and with the repository's modules served at
// their version from a file proxy built from rev. Third-party modules come
// from the usual proxy through a fresh module cache, so a version of ours
// cached from another tree is never used.
//
// The go.sum lines of one of our modules at a version that has no release
// tag yet depend on every byte of the tree to be tagged, so they cannot be
// committed ahead of the release: scripts/release.sh writes them in the
// release commit. The check therefore requires them to be absent and
// ignores only their addition; every other difference fails it.
//
// Without check, tidy writes go.mod and go.sum the same way, leaving those
// lines out too, unless release is set (scripts/release.sh).
func tidy(repo, rev string, check, release bool) error {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	version, err := rootVersion(abs, rev)
	if err != nil {
		return err
	}
	mods, err := modules(abs, rev)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "releasetool-tidy-")
	if err != nil {
		return err
	}
	defer func() {
		_ = exec.Command("chmod", "-R", "u+w", tmp).Run()
		_ = os.RemoveAll(tmp)
	}()
	proxy := filepath.Join(tmp, "proxy")
	if err := publish(abs, rev, proxy, version, true, io.Discard); err != nil {
		return err
	}
	untagged := untaggedVersions(abs, mods, version)
	env := append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-modcacherw",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+goEnv("GOPROXY"),
		"GONOSUMDB="+mods[0].path,
	)
	dirs, err := git(abs, "ls-files", "go.mod", "**/go.mod")
	if err != nil {
		return err
	}
	var failed []string
	for _, f := range strings.Fields(string(dirs)) {
		dir := path.Dir(f)
		if strings.Contains("/"+dir+"/", "/testdata/") {
			continue
		}
		ok, err := tidyModule(filepath.Join(abs, dir), dir, env, untagged, check, release)
		if err != nil {
			return err
		}
		if !ok {
			failed = append(failed, dir)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("not tidy: %s (run: go -C scripts/releasetool run . tidy -repo ../..)", strings.Join(failed, ", "))
	}
	return nil
}

// untaggedVersions returns our unreleased versions, as "path version":
// each module's version has no release tag in this clone.
func untaggedVersions(abs string, mods []mod, version string) map[string]bool {
	untagged := map[string]bool{}
	for _, m := range mods {
		if _, err := git(abs, "rev-parse", "-q", "--verify", "refs/tags/"+tagName(m.dir, version)); err != nil {
			untagged[m.path+" "+version] = true
		}
	}
	return untagged
}

// tidyModule runs go mod tidy (with check, -diff) in the module at modDir
// (dir, relative to the repository, names it in messages) with env, and
// reports whether it is tidy. What fails is written to stderr; err is for
// what stops the whole run.
func tidyModule(modDir, dir string, env []string, untagged map[string]bool, check, release bool) (bool, error) {
	args := []string{"mod", "tidy"}
	if check {
		args = append(args, "-diff")
		if bad := sumLines(filepath.Join(modDir, "go.sum"), untagged); len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "%s/go.sum: lines for an unreleased version of this repository's modules (scripts/release.sh writes them at the release):\n\t%s\n", dir, strings.Join(bad, "\n\t"))
			return false, nil
		}
	}
	if release {
		// Computed again from this round's proxy: a line from an earlier
		// round is stale when the module's zip changed since (its go.sum
		// did), and go would refuse it as a checksum mismatch.
		if err := dropSumLines(filepath.Join(modDir, "go.sum"), untagged); err != nil {
			return false, err
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = modDir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if runErr == nil {
		if !check && !release {
			if err := dropSumLines(filepath.Join(modDir, "go.sum"), untagged); err != nil {
				return false, err
			}
		}
		fmt.Printf("tidy: %s ok\n", dir)
		return true, nil
	}
	if check && onlyOurSums(out.String(), untagged) {
		fmt.Printf("tidy: %s ok (go.sum will gain the release's own lines)\n", dir)
		return true, nil
	}
	fmt.Fprintf(os.Stderr, "tidy: %s: %v\n%s", dir, runErr, out.String())
	return false, nil
}

// sumLines returns the lines of a go.sum file for the given "path version"s.
func sumLines(file string, of map[string]bool) []string {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var bad []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && of[f[0]+" "+strings.TrimSuffix(f[1], "/go.mod")] {
			bad = append(bad, line)
		}
	}
	return bad
}

// dropSumLines removes from a go.sum file the lines for the given
// "path version"s.
func dropSumLines(file string, of map[string]bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	bad := map[string]bool{}
	for _, l := range sumLines(file, of) {
		bad[l] = true
	}
	if len(bad) == 0 {
		return nil
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !bad[strings.TrimSuffix(line, "\n")] {
			keep = append(keep, line)
		}
	}
	return os.WriteFile(file, []byte(strings.Join(keep, "")), 0o644)
}

// onlyOurSums reports whether a go mod tidy -diff output is a diff whose
// only changes add go.sum lines for the given "path version"s.
func onlyOurSums(out string, ours map[string]bool) bool {
	sawDiff, sawChange := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "go: downloading "):
		case strings.HasPrefix(line, "diff "):
			if !strings.HasSuffix(line, "go.sum") {
				return false
			}
			sawDiff = true
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "@@"), strings.HasPrefix(line, " "), line == "":
		case strings.HasPrefix(line, "+"):
			f := strings.Fields(line[1:])
			if len(f) != 3 || !ours[f[0]+" "+strings.TrimSuffix(f[1], "/go.mod")] {
				return false
			}
			sawChange = true
		default:
			return false
		}
	}
	return sawDiff && sawChange
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
