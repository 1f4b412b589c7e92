#!/usr/bin/env bash
# API compatibility check: compares the exported API of every package of the
# root module (cryptopay, webhook, cryptopaytest and the rest; apidiff -m
# walks the whole module) with the baseline commit named in .api-baseline,
# and fails on any incompatible change. After a deliberate
# breaking change (recorded in CHANGELOG.md), move the baseline forward:
# commit the change, then write that commit's hash into .api-baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(tr -d ' \n' < .api-baseline)
export PATH="$(go env GOPATH)/bin:$PATH"
command -v apidiff >/dev/null 2>&1 || go install golang.org/x/exp/cmd/apidiff@v0.0.0-20261014143641-f0251eb4aa3e
git cat-file -e "$base^{commit}" 2>/dev/null || git fetch -q origin "$base" 2>/dev/null || {
  echo "apicheck: baseline commit $base is not in this clone" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/base" "$base"
# The root module alone (GOWORK=off): the baseline may predate go.work, and
# -mod=mod (for a baseline's stale go.sum) is refused in workspace mode.
(cd "$tmp/base" && GOWORK=off GOFLAGS=-mod=mod apidiff -m -w "$tmp/base.api" github.com/cryptopay/cryptopay-go 2>/dev/null)
report=$(GOWORK=off apidiff -m -incompatible "$tmp/base.api" github.com/cryptopay/cryptopay-go 2> >(grep -v "^Ignoring internal" >&2))
if [ -n "$report" ]; then
  echo "apicheck: incompatible API changes since $base:"
  echo "$report"
  exit 1
fi
echo "apicheck: no incompatible change since ${base:0:12}"
