package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFillChangelog(t *testing.T) {
	const links = "\n[Unreleased]: https://example.com/r/compare/v0.1.0...HEAD\n[0.1.0]: https://example.com/r/releases/tag/v0.1.0\n"
	const movedLinks = "\n[Unreleased]: https://example.com/r/compare/v0.2.0...HEAD\n[0.2.0]: https://example.com/r/releases/tag/v0.2.0\n[0.1.0]: https://example.com/r/releases/tag/v0.1.0\n"
	const older = "## [0.1.0] - 2026-01-01\n\n### Added\n- first\n"
	tests := []struct {
		name    string
		in      string
		version string
		want    string
		wantErr string
	}{
		{
			name: "entries move before the section's own, subsections in Keep a Changelog's order, links moved",
			in: "# Changelog\n\nintro\n\n## [Unreleased]\n\n### Fixed\n- fix u\n\n### Added\n- add u\n\n" +
				"## [0.2.0]\n\n### Added\n- add r\n\n" + older + links,
			version: "0.2.0",
			want: "# Changelog\n\nintro\n\n## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\n" +
				"### Added\n- add u\n- add r\n\n### Fixed\n- fix u\n\n" + older + movedLinks,
		},
		{
			name:    "a heading with a placeholder date gets the date; an empty [Unreleased] moves nothing",
			in:      "## [Unreleased]\n\n## [0.2.0] - Unreleased\n\n### Changed\n- c\n\n" + older + links,
			version: "0.2.0",
			want:    "## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\n### Changed\n- c\n\n" + older + movedLinks,
		},
		{
			name:    "[Unreleased]'s text before its subsections follows the section's own",
			in:      "## [Unreleased]\n\nUnreleased note.\n\n### Removed\n- r\n\n## [0.2.0]\n\nRelease note.\n" + links,
			version: "0.2.0",
			want:    "## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\nRelease note.\n\nUnreleased note.\n\n### Removed\n- r\n" + movedLinks,
		},
		{
			name:    "a subsection of another name goes after the known ones",
			in:      "## [Unreleased]\n\n### Changed: the API cut\n| a | b |\n\n### Security\n- s\n\n## [0.2.0]\n" + links,
			version: "0.2.0",
			want:    "## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\n### Security\n- s\n\n### Changed: the API cut\n| a | b |\n" + movedLinks,
		},
		{
			name:    "an existing link for the version is kept, not repeated",
			in:      "## [Unreleased]\n\n## [0.2.0]\n\n### Fixed\n- f\n\n[Unreleased]: https://example.com/r/compare/v0.1.0...HEAD\n[0.2.0]: https://example.com/r/releases/tag/v0.2.0\n",
			version: "0.2.0",
			want:    "## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\n### Fixed\n- f\n\n[Unreleased]: https://example.com/r/compare/v0.2.0...HEAD\n[0.2.0]: https://example.com/r/releases/tag/v0.2.0\n",
		},
		{
			name:    "a pre-release",
			in:      "## [Unreleased]\n\n### Added\n- a\n\n## [1.0.0-rc.1]\n" + links,
			version: "1.0.0-rc.1",
			want:    "## [Unreleased]\n\n## [1.0.0-rc.1] - 2026-11-23\n\n### Added\n- a\n\n[Unreleased]: https://example.com/r/compare/v1.0.0-rc.1...HEAD\n[1.0.0-rc.1]: https://example.com/r/releases/tag/v1.0.0-rc.1\n[0.1.0]: https://example.com/r/releases/tag/v0.1.0\n",
		},
		{
			name:    "no section for the version",
			in:      "## [Unreleased]\n\n### Added\n- a\n\n" + older + links,
			version: "0.2.0",
			wantErr: `CHANGELOG.md has no "## [0.2.0]" section`,
		},
		{
			name:    "a section of a longer version is not the version's",
			in:      "## [Unreleased]\n\n## [0.2.0-rc.1]\n" + links,
			version: "0.2.0",
			wantErr: `CHANGELOG.md has no "## [0.2.0]" section`,
		},
		{
			name:    "no [Unreleased] section",
			in:      "## [0.2.0]\n\n### Added\n- a\n" + links,
			version: "0.2.0",
			wantErr: `"## [Unreleased]" must come before "## [0.2.0]"`,
		},
		{
			name:    "[Unreleased] after the version",
			in:      "## [0.2.0]\n\n## [Unreleased]\n" + links,
			version: "0.2.0",
			wantErr: `"## [Unreleased]" must come before "## [0.2.0]"`,
		},
		{
			name:    "another section between [Unreleased] and the version",
			in:      "## [Unreleased]\n\n## [0.3.0]\n\n## [0.2.0]\n" + links,
			version: "0.2.0",
			wantErr: "another section lies between [Unreleased] and [0.2.0]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fillChangelog(tt.in, tt.version, "2026-11-23")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// ours is the module set of the fixture repository of these tests.
var ours = map[string]bool{"example.com/r": true, "example.com/r/cmd": true, "example.com/r/pgs": true}

func TestBumpModFile(t *testing.T) {
	const cmdMod = "module example.com/r/cmd\n\ngo 1.26.0\n\nrequire (\n\texample.com/other v1.2.3\n\texample.com/r v0.1.0\n\texample.com/r/pgs v0.1.0\n)\n"
	tests := []struct {
		name         string
		dir, in      string
		want         string // "" when unchanged
		wantDisagree []string
		wantErr      string
	}{
		{
			name: "every require of ours moves to the new version, a third party's stays",
			dir:  "cmd",
			in:   cmdMod,
			want: strings.ReplaceAll(cmdMod, "v0.1.0", "v0.2.0"),
		},
		{
			name: "an indirect require of ours moves too",
			dir:  "pgs",
			in:   "module example.com/r/pgs\n\ngo 1.26.0\n\nrequire example.com/r v0.1.0 // indirect\n",
			want: "module example.com/r/pgs\n\ngo 1.26.0\n\nrequire example.com/r v0.2.0 // indirect\n",
		},
		{
			name: "no require of ours: unchanged",
			dir:  ".",
			in:   "module example.com/r\n\ngo 1.26.0\n\nrequire example.com/other v1.2.3\n",
		},
		{
			name: "a replace of a third-party module is the module's own business",
			dir:  "pgs",
			in:   "module example.com/r/pgs\n\ngo 1.26.0\n\nrequire example.com/r v0.1.0\n\nreplace example.com/other => ../other\n",
			want: "module example.com/r/pgs\n\ngo 1.26.0\n\nrequire example.com/r v0.2.0\n\nreplace example.com/other => ../other\n",
		},
		{
			name:         "a require of ours at another version",
			dir:          "cmd",
			in:           strings.Replace(cmdMod, "example.com/r/pgs v0.1.0", "example.com/r/pgs v0.0.9", 1),
			wantDisagree: []string{"cmd/go.mod requires example.com/r/pgs v0.0.9"},
		},
		{
			name:         "a pseudo-version of ours",
			dir:          "pgs",
			in:           "module example.com/r/pgs\n\nrequire example.com/r v0.0.0-00010101000000-000000000000\n",
			wantDisagree: []string{"pgs/go.mod requires example.com/r v0.0.0-00010101000000-000000000000"},
		},
		{
			name: "a replace of ours, with or without a version",
			dir:  "cmd",
			in:   cmdMod + "\nreplace example.com/r => ../\n\nreplace example.com/r/pgs v0.1.0 => ../pgs\n",
			wantDisagree: []string{
				"cmd/go.mod replaces example.com/r (a user's go command ignores it, go install refuses it)",
				"cmd/go.mod replaces example.com/r/pgs (a user's go command ignores it, go install refuses it)",
			},
		},
		{
			name:    "not a go.mod",
			dir:     "cmd",
			in:      "module example.com/r/cmd\n\nrequire (\n",
			wantErr: "cmd/go.mod",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, disagree, err := bumpModFile(tt.dir, []byte(tt.in), ours, "v0.1.0", "v0.2.0")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantDisagree, disagree)
			if tt.wantDisagree != nil {
				return
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			assert.Equal(t, want, string(got))
		})
	}
}

func TestBumpWorkFile(t *testing.T) {
	const work = "go 1.26.0\n\nuse (\n\t.\n\t./cmd\n\t./pgs\n)\n\nreplace (\n\texample.com/r v0.1.0 => ./\n\texample.com/r/pgs v0.1.0 => ./pgs\n)\n"
	tests := []struct {
		name, in, want, wantErr string
	}{
		{
			name: "the versioned replaces of ours move, their targets stay",
			in:   work,
			want: strings.ReplaceAll(work, "v0.1.0", "v0.2.0"),
		},
		{
			name: "a replace of ours without a version, and a third party's, stay",
			in:   "go 1.26.0\n\nuse .\n\nreplace example.com/r/cmd => ./cmd\n\nreplace example.com/other v1.0.0 => ../other\n\nreplace example.com/r v0.1.0 => ./\n",
			want: "go 1.26.0\n\nuse .\n\nreplace example.com/r/cmd => ./cmd\n\nreplace example.com/other v1.0.0 => ../other\n\nreplace example.com/r v0.2.0 => ./\n",
		},
		{
			name:    "a versioned replace of ours at another version",
			in:      strings.Replace(work, "example.com/r/pgs v0.1.0", "example.com/r/pgs v0.0.9", 1),
			wantErr: "go.work replaces example.com/r/pgs v0.0.9, not Version v0.1.0",
		},
		{
			name:    "not a go.work",
			in:      "go 1.26.0\n\nuse (\n",
			wantErr: "go.work",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bumpWorkFile([]byte(tt.in), ours, "v0.1.0", "v0.2.0")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// prepareFixture is a repository shaped like this one: a root module whose
// Version is 0.1.0, a companion requiring it and a command requiring both,
// a go.work standing in for the unreleased version, and a CHANGELOG with a
// [0.2.0] section.
var prepareFixture = map[string]string{
	"version.go": "package r\n\n// Version is the SDK's version.\nconst Version = \"0.1.0\"\n",
	"go.mod":     "module example.com/r\n\ngo 1.26.0\n",
	"pgs/go.mod": "module example.com/r/pgs\n\ngo 1.26.0\n\nrequire example.com/r v0.1.0\n",
	"cmd/go.mod": "module example.com/r/cmd\n\ngo 1.26.0\n\nrequire (\n\texample.com/r v0.1.0\n\texample.com/r/pgs v0.1.0\n)\n",
	"go.work":    "go 1.26.0\n\nuse (\n\t.\n\t./cmd\n\t./pgs\n)\n\nreplace (\n\texample.com/r v0.1.0 => ./\n\texample.com/r/pgs v0.1.0 => ./pgs\n)\n",
	"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n### Added\n- a\n\n## [0.2.0]\n\n## [0.1.0] - 2026-01-01\n\n" +
		"[Unreleased]: https://example.com/r/compare/v0.1.0...HEAD\n",
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name    string
		change  map[string]string // committed over the fixture
		version string
		want    map[string]string // files changed by prepare
		wantErr string
	}{
		{
			name:    "Version, requires, go.work and CHANGELOG move together",
			version: "0.2.0",
			want: map[string]string{
				"version.go": strings.Replace(prepareFixture["version.go"], `"0.1.0"`, `"0.2.0"`, 1),
				"pgs/go.mod": strings.ReplaceAll(prepareFixture["pgs/go.mod"], "v0.1.0", "v0.2.0"),
				"cmd/go.mod": strings.ReplaceAll(prepareFixture["cmd/go.mod"], "v0.1.0", "v0.2.0"),
				"go.work":    strings.ReplaceAll(prepareFixture["go.work"], "v0.1.0", "v0.2.0"),
				"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-11-23\n\n### Added\n- a\n\n## [0.1.0] - 2026-01-01\n\n" +
					"[Unreleased]: https://example.com/r/compare/v0.2.0...HEAD\n[0.2.0]: https://example.com/r/releases/tag/v0.2.0\n",
			},
		},
		{name: "two numbers", version: "0.2", wantErr: `version "0.2": want X.Y.Z`},
		{name: "a leading zero", version: "01.2.0", wantErr: `version "01.2.0": want X.Y.Z`},
		{name: "build metadata", version: "0.2.0+build", wantErr: `version "0.2.0+build": want X.Y.Z`},
		{name: "a v prefix (release.sh strips it)", version: "v0.2.0", wantErr: `version "v0.2.0": want X.Y.Z`},
		{name: "no CHANGELOG section for the version", version: "0.3.0", wantErr: `CHANGELOG.md has no "## [0.3.0]" section`},
		{
			name:    "requires that disagree with Version, every one named",
			change:  map[string]string{"pgs/go.mod": strings.Replace(prepareFixture["pgs/go.mod"], "v0.1.0", "v0.0.9", 1), "cmd/go.mod": strings.Replace(prepareFixture["cmd/go.mod"], "example.com/r/pgs v0.1.0", "example.com/r/pgs v0.1.1", 1)},
			version: "0.2.0",
			wantErr: "the modules disagree with Version v0.1.0:\n\tcmd/go.mod requires example.com/r/pgs v0.1.1\n\tpgs/go.mod requires example.com/r v0.0.9",
		},
		{
			name:    "a replace of ours in a go.mod",
			change:  map[string]string{"pgs/go.mod": prepareFixture["pgs/go.mod"] + "\nreplace example.com/r => ../\n"},
			version: "0.2.0",
			wantErr: "pgs/go.mod replaces example.com/r",
		},
		{
			name:    "go.work's replace at another version",
			change:  map[string]string{"go.work": strings.Replace(prepareFixture["go.work"], "example.com/r v0.1.0", "example.com/r v0.0.9", 1)},
			version: "0.2.0",
			wantErr: "go.work replaces example.com/r v0.0.9, not Version v0.1.0",
		},
		{
			name:    "no Version constant",
			change:  map[string]string{"version.go": "package r\n\nvar Version = \"0.1.0\"\n"},
			version: "0.2.0",
			wantErr: "version.go: no `const Version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, prepareFixture)
			if len(tt.change) > 0 {
				writeFiles(t, dir, tt.change)
				commitAll(t, dir, "change")
			}
			before := readTree(t, dir)
			err := prepare(dir, tt.version, "2026-11-23")
			after := readTree(t, dir)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, before, after, "a refusal changes nothing")
				return
			}
			require.NoError(t, err)
			for name, content := range tt.want {
				assert.Equal(t, content, after[name], name)
				before[name] = content
			}
			assert.Equal(t, before, after, "prepare changes only Version, the go.mod files, go.work and CHANGELOG")
		})
	}
}

// readTree returns every file under dir but .git, by slash-separated name.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	require.NoError(t, err)
	return files
}
