#!/usr/bin/env bash
# instructions.sh counts the CPU instructions per call of the SDK and of the
# floor in the root package's benchmarks, with valgrind's callgrind: a count
# that other load on the machine does not change, unlike a clock. Each
# figure is (run of HI calls - run of LO calls) / (HI - LO), so set-up costs
# cancel, the median of three; garbage collection is in it, as it is in a
# real call.
#
#	scripts/instructions.sh                                   # the client alone: GET and POST
#	scripts/instructions.sh 'GetPayment|CreatePayment' 500 2000  # over loopback (slower)
#	DIR=scripts/oapibench WHO='sdk oapi oapidefault floor sdknotimeout' \
#		scripts/instructions.sh 'GetPayment|CreatePayment' 500 2000  # beside oapi-codegen
#
# DIR is the package whose benchmarks run (default: the root's); WHO the
# clients, each a sub-benchmark seq/<who> (default: sdk floor).
#
# Needs valgrind. The test binary is built without cgo and run with one P
# and without asynchronous preemption, which callgrind cannot follow.
set -euo pipefail
cd "$(dirname "$0")/.."
benches=${1:-'ClientOverheadGetPayment|ClientOverheadCreatePayment'}
lo=${2:-1000}
hi=${3:-4000}
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not on PATH (apt-get install valgrind)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go -C "${DIR:-.}" test -c -o "$tmp/sdk.test" .

count() { # count BENCH N: the instructions of one run
	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
		"$tmp/sdk.test" -test.run '^$' -test.bench "^Benchmark$1\$" -test.benchtime "${2}x" >/dev/null 2>&1
	awk '/^summary:/ {print $2}' "$tmp/cg"
}

for b in ${benches//|/ }; do
	for who in ${WHO:-sdk floor}; do
		runs=()
		for _ in 1 2 3; do
			a=$(count "$b/seq/$who" "$lo")
			z=$(count "$b/seq/$who" "$hi")
			runs+=($(((z - a) / (hi - lo))))
		done
		printf '%-34s %-5s %s\n' "$b" "$who" "$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)"
	done
done
