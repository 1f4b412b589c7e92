#!/usr/bin/env bash
# Runs every fuzz target of the module, one after the other, for FUZZTIME
# each (default 60s):
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   FUZZTIME=20s scripts/fuzz.sh    # shorter
#   scripts/fuzz.sh FuzzPayoutJSON  # only the targets named
#
# Targets are found with `go test -list '^Fuzz'` in every package, so a new
# one is picked up without editing this file. A crash is reported, the
# failing input is saved under <package>/testdata/fuzz/<Target>/ (commit it
# with the fix: it becomes a regression seed of the normal `go test`), the
# remaining targets still run, and the script exits non-zero. Nothing here
# uses the network beyond 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-60s}"
only=("$@")
failed=0
for pkg in $(go list ./...); do
	targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " =~ " $t " ]]; then
			continue
		fi
		echo "=== $pkg $t ($FUZZTIME)"
		if ! go test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg"; then
			echo "--- FAIL: $pkg $t" >&2
			failed=1
		fi
	done
done
exit $failed
