#!/usr/bin/env bash
# Consumption test: is the tree, as committed, installable by a user?
#
# Publishes every module of the repository at HEAD, at the version the SDK's
# Version constant declares, to a file-based module proxy (zips built by
# golang.org/x/mod/zip in scripts/releasetool). Then, outside the workspace
# and on an empty module cache, as a user would:
#   - a fresh module go gets each module alone and builds every package of it,
#     and a program importing them, also after go mod vendor;
#   - go install of both commands at that version;
#   - the installed cryptopay CLI reads from the installed fake server, and
#     its exit codes survive (0 for an answer, 3 for a failed request).
# Third-party modules come through the usual proxy. Nothing listens beyond
# 127.0.0.1.
#
#   scripts/consumetest.sh            # HEAD of this clone
#   REV=<commit> scripts/consumetest.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rev="${REV:-HEAD}"
tmp="$(mktemp -d)"
server_pid=""
cleanup() {
	local rc=$?
	if [[ -n "$server_pid" ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ $rc -ne 0 ]]; then
		echo "consumetest: FAILED" >&2
		[[ -s "$tmp/server.log" ]] && { echo "fake server log:" >&2; cat "$tmp/server.log" >&2; }
	fi
	chmod -R u+w "$tmp" 2>/dev/null || true
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "consumetest: $*" >&2; exit 1; }

usual_proxy="$(go env GOPROXY)"
local_cache="$(go env GOMODCACHE)/cache/download"
tool="$tmp/releasetool"
GOWORK=off go -C "$root/scripts/releasetool" build -o "$tool" .
version="v$(git -C "$root" show "$rev:version.go" | sed -n 's/^const Version = "\(.*\)"$/\1/p')"
echo "== publish $rev as $version to a file proxy"
"$tool" publish -repo "$root" -rev "$rev" -out "$tmp/proxy" -version "$version"
mapfile -t dirs < <("$tool" modules -repo "$root" -rev "$rev")
sdk="$(git -C "$root" show "$rev:go.mod" | sed -n 's/^module //p')"

# A user's environment: no workspace, an empty module cache, our modules
# from the file proxy (not in the checksum database before they are
# released), everything else from the usual proxy (read first from this
# machine's download cache, a copy of it, when there is one; the checksum
# database still checks every third-party module).
export GOWORK=off GOFLAGS=-modcacherw GOMODCACHE="$tmp/modcache" GOBIN="$tmp/bin"
export GOPROXY="file://$tmp/proxy,$usual_proxy" GONOSUMDB="$sdk" GOTOOLCHAIN=local
if [[ -z "${CONSUMETEST_NO_LOCAL_CACHE:-}" && -d "$local_cache" ]]; then
	GOPROXY="file://$tmp/proxy,file://$local_cache,$usual_proxy"
fi

for dir in "${dirs[@]}"; do
	mod="$sdk"; [[ "$dir" == "." ]] || mod="$sdk/$dir"
	echo "== go get $mod@$version in a fresh module (at ${SECONDS}s)"
	user="$tmp/user-${dir//\//-}"
	mkdir -p "$user"
	(
		cd "$user"
		go mod init example.com/user >/dev/null 2>&1
		go get "$mod@$version" || fail "go get $mod@$version"
		# Everything in the module builds for the user (commands included)...
		go build -mod=mod "$mod/..." || fail "$mod: go build $mod/..."
		# ...and a program of the user's imports every package it can (no
		# main, no internal).
		mapfile -t pkgs < <(go list -mod=mod -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' "$mod/..." | grep -v '/internal\(/\|$\)' || true)
		if [[ ${#pkgs[@]} -gt 0 ]]; then
			{
				echo "package main"
				echo
				echo "import ("
				for p in "${pkgs[@]}"; do echo "	_ \"$p\""; done
				echo ")"
				echo
				echo "func main() {}"
			} >main.go
			go build -mod=mod -o /dev/null . || fail "$mod: a program importing it"
			# ...also vendored (go mod vendor copies only packages, so an
			# asset outside the embedding package's tree would be lost).
			go mod tidy >/dev/null 2>&1 || fail "$mod: go mod tidy of a program importing it"
			go mod vendor || fail "$mod: go mod vendor of a program importing it"
			go build -mod=vendor -o /dev/null . || fail "$mod: a vendored program importing it"
			rm -rf vendor
		fi
		echo "built against ${#pkgs[@]} package(s) of $mod@$version"
	)
done

echo "== go install both commands at $version (at ${SECONDS}s)"
(
	cd "$tmp"
	go install "$sdk/cmd/cryptopay@$version" || fail "go install cmd/cryptopay@$version"
	go install "$sdk/cmd/cryptopay-fakeserver@$version" || fail "go install cmd/cryptopay-fakeserver@$version"
)

echo "== the installed CLI against the installed fake server"
"$GOBIN/cryptopay-fakeserver" -addr 127.0.0.1:0 >"$tmp/server.out" 2>"$tmp/server.log" &
server_pid=$!
url=""
for _ in $(seq 1 100); do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\)$/\1/p' "$tmp/server.out")"
	[[ -n "$url" ]] && break
	kill -0 "$server_pid" 2>/dev/null || fail "the fake server exited: $(cat "$tmp/server.log")"
	sleep 0.1
done
[[ -n "$url" ]] || fail "the fake server did not say where it listens"
case "$url" in http://127.0.0.1:*) ;; *) fail "the fake server listens on $url, not loopback" ;; esac

key="$(git -C "$root" show "$rev:cryptopaytest/options.go" | sed -n 's/^const DefaultAPIKey = "\(.*\)"$/\1/p')"
# cli KEY NAME ARGS...: runs the installed CLI against the fake with KEY,
# prints and keeps its output in $tmp/NAME.out, and sets rc to its exit code.
cli() {
	local key="$1" name="$2"
	shift 2
	set +e
	CRYPTOPAY_BASE_URL="$url" CRYPTOPAY_API_KEY="$key" "$GOBIN/cryptopay" "$@" >"$tmp/$name.out" 2>&1
	rc=$?
	set -e
	cat "$tmp/$name.out"
}
cli "$key" currencies currencies
[[ $rc -eq 0 ]] || fail "cryptopay currencies exited $rc, want 0"
grep -q "\"usdt\"" "$tmp/currencies.out" || fail "cryptopay currencies printed no usdt"

# A refused key: the request fails, exit code 3 (not 1, as go run makes it).
cli not-the-key balances balances
[[ $rc -eq 3 ]] || fail "cryptopay balances with a wrong key exited $rc, want 3"
grep -q "not-the-key" "$tmp/balances.out" && fail "the CLI printed the API key"
echo "consumetest: ok: every module of $rev fetched alone at $version, both commands installed and run"
