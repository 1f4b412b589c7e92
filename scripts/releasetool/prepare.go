package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// changelogFile is the CHANGELOG, relative to the repository root.
const changelogFile = "CHANGELOG.md"

// prepare bumps the work tree to version (X.Y.Z): the root's Version
// constant, every require of one of this repository's modules, the versioned
// replace in go.work, and the CHANGELOG (the [Unreleased] entries move into
// the "## [X.Y.Z]" section, which gets the date). It refuses, changing
// nothing, when the CHANGELOG has no "## [X.Y.Z]" section or when a require
// of one of our modules is not at the version Version declares.
func prepare(repo, version, date string) error {
	v := "v" + version
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q: want X.Y.Z (or X.Y.Z-pre)", version)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	src, cur, err := readVersion(abs)
	if err != nil {
		return err
	}
	// Check everything before changing anything.
	files, err := bumpModules(abs, cur, v)
	if err != nil {
		return err
	}
	clName := filepath.Join(abs, changelogFile)
	cl, err := os.ReadFile(clName)
	if err != nil {
		return err
	}
	if files[clName], err = fillChangelog(string(cl), version, date); err != nil {
		return err
	}
	files[filepath.Join(abs, versionFile)] = versionRE.ReplaceAll(src, []byte(`const Version = "`+version+`"`))

	for name, data := range files {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("prepared %s (was %s)\n", v, cur)
	return nil
}

// readVersion returns the file that declares Version (under the repository
// root abs) and the version it declares, as "vX.Y.Z".
func readVersion(abs string) (src []byte, cur string, err error) {
	src, err = os.ReadFile(filepath.Join(abs, versionFile))
	if err != nil {
		return nil, "", err
	}
	m := versionRE.FindSubmatch(src)
	if m == nil {
		return nil, "", fmt.Errorf("%s: no `const Version = \"…\"`", versionFile)
	}
	return src, "v" + string(m[1]), nil
}

// bumpModules returns every module's go.mod, and go.work, as they would be
// with each require (and the workspace's replace) of one of this
// repository's modules moved from cur to v, keyed by file name; it refuses
// when any of them disagrees with cur. Nothing is written.
func bumpModules(abs, cur, v string) (map[string][]byte, error) {
	mods, err := modules(abs, "HEAD")
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.path] = true
	}
	files := map[string][]byte{}
	var disagree []string
	for _, m := range mods {
		name := filepath.Join(abs, m.dir, "go.mod")
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out, why, err := bumpModFile(m.dir, data, ours, cur, v)
		if err != nil {
			return nil, err
		}
		disagree = append(disagree, why...)
		files[name] = out
	}
	if len(disagree) > 0 {
		return nil, fmt.Errorf("the modules disagree with Version %s:\n\t%s", cur, strings.Join(disagree, "\n\t"))
	}
	workName := filepath.Join(abs, "go.work")
	if data, err := os.ReadFile(workName); err == nil {
		if files[workName], err = bumpWorkFile(data, ours, cur, v); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// bumpModFile moves every require in go.mod data (of the module in dir) of
// one of ours (module paths) from cur to v. It returns the file as it would
// be written, and what stops the move: a require of one of ours at another
// version than cur, or a replace of one of ours (a user's go command ignores
// it and go install refuses it).
func bumpModFile(dir string, data []byte, ours map[string]bool, cur, v string) ([]byte, []string, error) {
	f, err := modfile.Parse(path.Join(dir, "go.mod"), data, nil)
	if err != nil {
		return nil, nil, err
	}
	var disagree []string
	for _, r := range f.Require {
		if !ours[r.Mod.Path] {
			continue
		}
		if r.Mod.Version != cur {
			disagree = append(disagree, fmt.Sprintf("%s/go.mod requires %s %s", dir, r.Mod.Path, r.Mod.Version))
			continue
		}
		if err := f.AddRequire(r.Mod.Path, v); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range f.Replace {
		if ours[r.Old.Path] {
			disagree = append(disagree, fmt.Sprintf("%s/go.mod replaces %s (a user's go command ignores it, go install refuses it)", dir, r.Old.Path))
		}
	}
	f.Cleanup()
	out, err := f.Format()
	return out, disagree, err
}

// bumpWorkFile moves go.work's versioned replaces of our modules from cur
// to v, keeping their targets. A versioned replace of ours at another
// version than cur is an error.
func bumpWorkFile(data []byte, ours map[string]bool, cur, v string) ([]byte, error) {
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Clone(wf.Replace) {
		if !ours[r.Old.Path] || r.Old.Version == "" {
			continue
		}
		if r.Old.Version != cur {
			return nil, fmt.Errorf("go.work replaces %s %s, not Version %s", r.Old.Path, r.Old.Version, cur)
		}
		// Add before dropping: the new line goes next to the old one, in
		// its replace block, and the file keeps its layout.
		oldPath, oldVersion, newPath, newVersion := r.Old.Path, r.Old.Version, r.New.Path, r.New.Version
		if err := wf.AddReplace(oldPath, v, newPath, newVersion); err != nil {
			return nil, err
		}
		if err := wf.DropReplace(oldPath, oldVersion); err != nil {
			return nil, err
		}
	}
	wf.Cleanup()
	return modfile.Format(wf.Syntax), nil
}

// sectionOrder is Keep a Changelog's order of a release's subsections.
var sectionOrder = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

var linkRE = regexp.MustCompile(`^\[[^\]]+\]: `)

// fillChangelog moves the [Unreleased] entries into the "## [version]"
// section (before that section's own entries of the same kind), dates its
// heading, leaves [Unreleased] empty and updates the link definitions.
func fillChangelog(text, version, date string) ([]byte, error) {
	lines := strings.Split(text, "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if l == prefix || strings.HasPrefix(l, prefix+" ") {
				return i
			}
		}
		return -1
	}
	u, r := find("## [Unreleased]"), find("## ["+version+"]")
	if r < 0 {
		return nil, fmt.Errorf("%s has no \"## [%s]\" section: write it (its entries, or an empty heading under [Unreleased]'s) before releasing", changelogFile, version)
	}
	if u < 0 || u > r {
		return nil, fmt.Errorf("%s: \"## [Unreleased]\" must come before \"## [%s]\"", changelogFile, version)
	}
	end := func(start int) int {
		for i := start + 1; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "## ") || linkRE.MatchString(lines[i]) {
				return i
			}
		}
		return len(lines)
	}
	uEnd, rEnd := end(u), end(r)
	if uEnd != r {
		return nil, fmt.Errorf("%s: another section lies between [Unreleased] and [%s]", changelogFile, version)
	}
	unrel := parseSection(lines[u+1 : uEnd])
	rel := parseSection(lines[r+1 : rEnd])
	for _, name := range unrel.order {
		if _, ok := rel.subs[name]; !ok {
			rel.order = append(rel.order, name)
		}
		rel.subs[name] = append(slices.Clone(unrel.subs[name]), rel.subs[name]...)
	}
	slices.SortStableFunc(rel.order, func(a, b string) int { return rank(a) - rank(b) })
	if p := trimBlank(unrel.preamble); len(p) > 0 {
		rel.preamble = append(append(trimBlank(rel.preamble), ""), p...)
	}

	var out []string
	out = append(out, lines[:u+1]...)
	out = append(out, "", fmt.Sprintf("## [%s] - %s", version, date), "")
	if p := trimBlank(rel.preamble); len(p) > 0 {
		out = append(append(out, p...), "")
	}
	for _, name := range rel.order {
		out = append(out, "### "+name)
		out = append(append(out, trimBlank(rel.subs[name])...), "")
	}
	rest := releaseLinks(lines[rEnd:], version)
	out = append(out, rest...)
	return []byte(strings.Join(out, "\n")), nil
}

// releaseLinks moves the CHANGELOG's "[Unreleased]: …/compare/…" link to
// start at version and adds a "[version]: …" link after it when there is
// none; rest is the CHANGELOG from the end of the release's section.
func releaseLinks(rest []string, version string) []string {
	base := "https://github.com/cryptopay/cryptopay-go"
	hasLink := false
	for i, l := range rest {
		if strings.HasPrefix(l, "[Unreleased]: ") {
			base = strings.SplitN(strings.TrimPrefix(l, "[Unreleased]: "), "/compare/", 2)[0]
			rest[i] = fmt.Sprintf("[Unreleased]: %s/compare/v%s...HEAD", base, version)
		}
		hasLink = hasLink || strings.HasPrefix(l, "["+version+"]: ")
	}
	if !hasLink {
		for i, l := range rest {
			if strings.HasPrefix(l, "[Unreleased]: ") {
				rest = slices.Insert(rest, i+1, fmt.Sprintf("[%s]: %s/releases/tag/v%s", version, base, version))
				break
			}
		}
	}
	return rest
}

type section struct {
	preamble []string
	order    []string
	subs     map[string][]string
}

func parseSection(lines []string) section {
	s := section{subs: map[string][]string{}}
	cur := ""
	for _, l := range lines {
		if name, ok := strings.CutPrefix(l, "### "); ok {
			cur = strings.TrimSpace(name)
			if _, seen := s.subs[cur]; !seen {
				s.order = append(s.order, cur)
				s.subs[cur] = nil
			}
			continue
		}
		if cur == "" {
			s.preamble = append(s.preamble, l)
		} else {
			s.subs[cur] = append(s.subs[cur], l)
		}
	}
	for k, v := range s.subs {
		s.subs[k] = trimBlank(v)
	}
	return s
}

func rank(name string) int {
	if i := slices.Index(sectionOrder, name); i >= 0 {
		return i
	}
	return len(sectionOrder)
}

func trimBlank(l []string) []string {
	for len(l) > 0 && strings.TrimSpace(l[0]) == "" {
		l = l[1:]
	}
	for len(l) > 0 && strings.TrimSpace(l[len(l)-1]) == "" {
		l = l[:len(l)-1]
	}
	return l
}
