#!/usr/bin/env bash
# Cuts release VERSION (X.Y.Z) of every module of the repository at once:
#
#   scripts/release.sh 0.2.0
#
# 1. Refuses a dirty work tree, a CHANGELOG without a "## [X.Y.Z]" section,
#    and modules whose requires of one another disagree with Version (or
#    carry a replace of one of them).
# 2. Bumps together: Version (version.go), every companion module's require of
#    this repository's modules, the versioned replace in go.work, and the
#    CHANGELOG (the [Unreleased] entries move into [X.Y.Z], dated today).
# 3. Writes each module's go.sum lines for the new version, computed from the
#    release tree exactly as the module proxy will build it (a file proxy of
#    a commit of that tree, zips by golang.org/x/mod/zip).
# 4. Commits, and creates the tags Go expects: vX.Y.Z for the root module and
#    DIR/vX.Y.Z for each nested one (cmd/vX.Y.Z, redisstore/vX.Y.Z, …).
#
# Nothing is pushed; the last line says what to push.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
die() { echo "release: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: scripts/release.sh X.Y.Z"
version="${1#v}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version $1: want X.Y.Z"
tag="v$version"

[[ -z "$(git status --porcelain)" ]] || die "the work tree is not clean (commit or stash first):
$(git status --short)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tool="$tmp/releasetool"
GOWORK=off go -C scripts/releasetool build -o "$tool" .

mapfile -t dirs < <("$tool" modules -repo . -rev HEAD)
for d in "${dirs[@]}"; do
	t="$tag"; [[ "$d" == "." ]] || t="$d/$tag"
	if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then die "tag $t exists already"; fi
done

# Checks, then edits (nothing is changed when a check fails).
"$tool" prepare -repo . -version "$version" -date "$(date -u +%Y-%m-%d)" || {
	git checkout -q -- . ; die "refused; nothing changed"; }

# go.sum: each module's lines for the new version of the others, from a
# commit of the release tree that no ref names (the tags will point at the
# same tree for every module, since no module's zip holds another's files).
# A module's zip holds its go.sum, so when a round changes a module's lines,
# the lines of the modules requiring it change in the next round (cmd
# requires pgstore, which requires the SDK): go round until nothing moves,
# at most once per module and once more.
settled=""
for ((round = 0; round <= ${#dirs[@]}; round++)); do
	git add -A
	draft="$(git commit-tree "$(git write-tree)" -p HEAD -m "release $tag (draft)")"
	"$tool" tidy -release -repo . -rev "$draft" >/dev/null || { git reset -q --hard HEAD; die "go mod tidy failed; nothing changed"; }
	if git diff --quiet; then settled=1; break; fi
done
[[ -n "$settled" ]] || { git reset -q --hard HEAD; die "go.sum did not settle; nothing changed"; }

git commit -q -m "Release $tag: Version, the modules' requires of one another, go.work and CHANGELOG"
for d in "${dirs[@]}"; do
	t="$tag"; [[ "$d" == "." ]] || t="$d/$tag"
	git tag -a -m "$t" "$t"
	echo "tagged $t"
done
echo "release: done. Push with: git push origin HEAD $(for d in "${dirs[@]}"; do t="$tag"; [[ "$d" == "." ]] || t="$d/$tag"; printf '%s ' "$t"; done)"
