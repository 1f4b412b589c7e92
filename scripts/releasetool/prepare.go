package main

import (
	"fmt"
	"os"
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
	src, err := os.ReadFile(filepath.Join(abs, versionFile))
	if err != nil {
		return err
	}
	m := versionRE.FindSubmatch(src)
	if m == nil {
		return fmt.Errorf("%s: no `const Version = \"…\"`", versionFile)
	}
	cur := "v" + string(m[1])
	mods, err := modules(abs, "HEAD")
	if err != nil {
		return err
	}
	// Check everything before changing anything.
	files := map[string][]byte{}
	if err := bumpRequires(abs, mods, cur, v, files); err != nil {
		return err
	}
	if err := bumpWork(abs, mods, cur, v, files); err != nil {
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

// ourPaths are the module paths of mods.
func ourPaths(mods []mod) map[string]bool {
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.path] = true
	}
	return ours
}

// bumpRequires puts into files each module's go.mod with its requires of
// our modules moved from cur to v; it refuses a require not at cur and a
// replace of one of our modules.
func bumpRequires(abs string, mods []mod, cur, v string, files map[string][]byte) error {
	ours := ourPaths(mods)
	var disagree []string
	for _, m := range mods {
		name := filepath.Join(abs, m.dir, "go.mod")
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			return err
		}
		for _, r := range f.Require {
			if !ours[r.Mod.Path] {
				continue
			}
			if r.Mod.Version != cur {
				disagree = append(disagree, fmt.Sprintf("%s/go.mod requires %s %s", m.dir, r.Mod.Path, r.Mod.Version))
				continue
			}
			if err := f.AddRequire(r.Mod.Path, v); err != nil {
				return err
			}
		}
		for _, r := range f.Replace {
			if ours[r.Old.Path] {
				disagree = append(disagree, fmt.Sprintf("%s/go.mod replaces %s (a user's go command ignores it, go install refuses it)", m.dir, r.Old.Path))
			}
		}
		f.Cleanup()
		if files[name], err = f.Format(); err != nil {
			return err
		}
	}
	if len(disagree) > 0 {
		return fmt.Errorf("the modules disagree with Version %s:\n\t%s", cur, strings.Join(disagree, "\n\t"))
	}
	return nil
}

// bumpWork puts into files go.work (if any) with its versioned replaces of
// our modules moved from cur to v.
func bumpWork(abs string, mods []mod, cur, v string, files map[string][]byte) error {
	ours := ourPaths(mods)
	workName := filepath.Join(abs, "go.work")
	data, err := os.ReadFile(workName)
	if err != nil {
		return nil // no go.work
	}
	wf, err := modfile.ParseWork(workName, data, nil)
	if err != nil {
		return err
	}
	for _, r := range slices.Clone(wf.Replace) {
		if ours[r.Old.Path] && r.Old.Version != "" {
			if r.Old.Version != cur {
				return fmt.Errorf("go.work replaces %s %s, not Version %s", r.Old.Path, r.Old.Version, cur)
			}
			oldPath, oldVersion, newPath, newVersion := r.Old.Path, r.Old.Version, r.New.Path, r.New.Version
			if err := wf.DropReplace(oldPath, oldVersion); err != nil {
				return err
			}
			if err := wf.AddReplace(oldPath, v, newPath, newVersion); err != nil {
				return err
			}
		}
	}
	wf.Cleanup()
	files[workName] = modfile.Format(wf.Syntax)
	return nil
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
	out = append(out, releaseLinks(lines[rEnd:], version)...)
	return []byte(strings.Join(out, "\n")), nil
}

// releaseLinks updates the link definitions in rest (the lines after the
// release's section): [Unreleased] compares from the new version's tag,
// and the version gets its own link if it has none.
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
