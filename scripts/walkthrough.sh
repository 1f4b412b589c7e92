#!/usr/bin/env bash
# Runs the testing guide's curl walk-through (the sh block after the
# "<!-- walkthrough" marker in docs/testing.md, extracted as it is, so the
# guide and this script cannot drift apart) against a fresh
# cryptopay-fakeserver on a free loopback port:
#
#   scripts/walkthrough.sh                         # builds the server first
#   FAKESERVER=/path/to/binary scripts/walkthrough.sh
#   DOC=/other/guide.md scripts/walkthrough.sh     # another document
#
# Every curl of the block fails the run on a non-2xx answer or no answer
# (curl --fail-with-body under set -e), except where the guide itself
# handles the failure (`curl ... || echo ...`). The walk-through's output
# goes to stdout; the server's log is shown when the run fails. Nothing
# leaves 127.0.0.1. Needs bash, curl (7.76 or later), awk and sed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
server_pid=""
cleanup() {
	local rc=$?
	if [[ $rc -ne 0 && -s "$tmp/server.log" ]]; then
		echo "walkthrough: FAILED; server log:" >&2
		cat "$tmp/server.log" >&2
	fi
	if [[ -n "$server_pid" ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT

# The block, from the guide.
doc="${DOC:-$root/docs/testing.md}"
awk '/<!-- walkthrough/ { armed = 1; next }
     armed && /^```sh$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$doc" >"$tmp/block.sh"
if [[ ! -s "$tmp/block.sh" ]]; then
	echo "walkthrough: no sh block after the walkthrough marker in $doc" >&2
	exit 1
fi

bin="${FAKESERVER:-}"
if [[ -z "$bin" ]]; then
	bin="$tmp/cryptopay-fakeserver"
	go -C "$root/cmd" build -o "$bin" ./cryptopay-fakeserver
fi

# Port 0: the server picks a free port and prints its URL first.
"$bin" -addr 127.0.0.1:0 >"$tmp/server.log" 2>&1 &
server_pid=$!
api=""
for _ in $(seq 1 200); do
	api="$(sed -n 's/^cryptopay-fakeserver listening on \(http:\/\/127\.0\.0\.1:[0-9]*\)$/\1/p' "$tmp/server.log")"
	[[ -n "$api" ]] && break
	if ! kill -0 "$server_pid" 2>/dev/null; then
		cat "$tmp/server.log" >&2
		echo "walkthrough: the server exited" >&2
		exit 1
	fi
	sleep 0.05
done
if [[ -z "$api" ]]; then
	cat "$tmp/server.log" >&2
	echo "walkthrough: the server did not print its URL" >&2
	exit 1
fi
echo "walkthrough: server at $api"

# curl fails on any non-2xx answer and ends each answer with a newline.
{
	echo 'set -euo pipefail'
	echo 'curl() { local rc=0; command curl -sS --fail-with-body --max-time 10 "$@" || rc=$?; echo; return "$rc"; }'
	cat "$tmp/block.sh"
} >"$tmp/run.sh"
env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy \
	NO_PROXY='*' API="$api" bash "$tmp/run.sh"
echo "walkthrough: OK"
