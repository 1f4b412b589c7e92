// Command benchtable runs the SDK's benchmarks beside their floors (plain
// net/http + encoding/json against the same loopback server, see
// bench_test.go) and the fake server's throughput benchmark, and prints one
// Markdown table of SDK/floor ratios with the targets checked.
//
//	go run ./scripts/benchtable                 # -count 5 -benchtime 1s
//	go run ./scripts/benchtable -count 10 -raw bench.txt
//	go run ./scripts/benchtable -count 10 -server=false -bench '^Benchmark(GetPayment|CreatePayment|CreatePayout)$'
//	                                           # the per-call targets alone
//
// Each figure is the median over -count runs; each SDK/floor ratio is taken
// per run (the SDK and the floor of the same round) and given as its median
// and its range over the runs. The raw `go test` output is kept in -raw
// (default bench.txt, git-ignored) for benchstat.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Targets (issue #5).
const (
	maxTimeRatio   = 1.10
	maxAllocsRatio = 1.5
	callers        = 64
	minServerRPS   = 20000
)

var (
	count     = flag.Int("count", 5, "runs per benchmark; figures are medians")
	benchtime = flag.String("benchtime", "1s", "go test -benchtime")
	raw       = flag.String("raw", "bench.txt", "file for the raw go test output (empty: none)")
	server    = flag.Bool("server", true, "also run the fake server's benchmark (cryptopaytest)")
	only      = flag.String("bench", sdkBench, "the root package's benchmarks to run (a go test -bench pattern)")
)

// sdkBench selects the root package's SDK-vs-floor benchmarks.
const sdkBench = `^Benchmark(GetPayment|CreatePayment|CreatePayout|ListPayouts100|WebhookPayment|WebhookPaymentReread|ClientOverheadGetPayment)$`

// serverBench selects the fake server's throughput benchmark.
const serverBench = `^BenchmarkServerGetPayment$`

func main() {
	flag.Parse()
	var out bytes.Buffer
	run := func(pkg, bench string) {
		args := []string{"test", "-run", "^$", "-bench", bench, "-benchmem",
			"-count", strconv.Itoa(*count), "-benchtime", *benchtime, pkg}
		fmt.Fprintf(os.Stderr, "go %s\n", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Stdout = io.MultiWriter(&out, os.Stderr)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	run(".", *only)
	if *server {
		run("./cryptopaytest", serverBench)
	}
	if *raw != "" {
		if err := os.WriteFile(*raw, out.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	res := parse(&out)
	printTable(os.Stdout, res)
}

// results maps a benchmark name without the -GOMAXPROCS suffix to its
// metrics (unit -> values over the runs).
type results map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) results {
	res := results{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		m := res[name]
		if m == nil {
			m = map[string][]float64{}
			res[name] = m
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			m[f[i+1]] = append(m[f[i+1]], v)
		}
	}
	return res
}

// median of name's unit, and whether it was measured.
func (r results) median(name, unit string) (float64, bool) {
	v := slices.Clone(r[name][unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// ratios pairs the runs of a and b (run i of each: the benchmarks
// alternate which of the two goes first from one round to the next) and
// returns a/b for each pair.
func (r results) ratios(a, b, unit string) []float64 {
	av, bv := r[a][unit], r[b][unit]
	out := make([]float64, 0, min(len(av), len(bv)))
	for i := range min(len(av), len(bv)) {
		if bv[i] > 0 {
			out = append(out, av[i]/bv[i])
		}
	}
	return out
}

// spread formats the median of v with its range over the runs, "1.02
// (0.97–1.08)", and returns the median.
func spread(v []float64) (string, float64) {
	if len(v) == 0 {
		return "–", 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", med, s[0], s[len(s)-1]), med
}

// max of name's unit over the runs.
func (r results) max(name, unit string) (float64, bool) {
	v := r[name][unit]
	if len(v) == 0 {
		return 0, false
	}
	return slices.Max(v), true
}

func printTable(w io.Writer, r results) {
	fmt.Fprintf(w, "\n%s, %s/%s, %d CPU (%s), %s; median of %d runs, -benchtime %s\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(),
		time.Now().UTC().Format("2006-01-02"), *count, *benchtime)
	fmt.Fprintln(w, "| Operation | Callers | SDK ns/op | Floor ns/op | × median (min–max) | CPU × median (min–max) | SDK B/op | Floor B/op | × | SDK allocs | Floor allocs | × | Conns SDK / floor, median (max) | Targets |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	missed := printRows(w, r)
	printFloatFloor(w, r)
	missed = printDiagnostics(w, r, missed)
	fmt.Fprintln(w)
	if len(missed) == 0 {
		fmt.Fprintln(w, "All targets met.")
	} else {
		fmt.Fprintf(w, "Targets missed: %s\n", strings.Join(missed, "; "))
	}
}

// printRows writes the SDK-versus-floor rows and returns the targets missed.
func printRows(w io.Writer, r results) []string {
	var missed []string
	for _, op := range []string{"GetPayment", "CreatePayment", "CreatePayout", "ListPayouts100", "WebhookPayment", "WebhookPaymentReread"} {
		for _, mode := range []string{"seq", "par64"} {
			sdk, floor := op+"/"+mode+"/sdk", op+"/"+mode+"/floor"
			sn, ok1 := r.median(sdk, "ns/op")
			fn, ok2 := r.median(floor, "ns/op")
			if !ok1 || !ok2 {
				continue
			}
			sb, _ := r.median(sdk, "B/op")
			fb, _ := r.median(floor, "B/op")
			sa, _ := r.median(sdk, "allocs/op")
			fa, _ := r.median(floor, "allocs/op")
			n := 1
			if mode == "par64" {
				n = callers
			}
			timeX, timeRatio := spread(r.ratios(sdk, floor, "ns/op"))
			cpu, _ := spread(r.ratios(sdk, floor, "cpu-ns/op"))
			conns := "–"
			sc, okc := r.max(sdk, "conns")
			fc, _ := r.max(floor, "conns")
			if okc {
				smed, _ := r.median(sdk, "conns")
				fmed, _ := r.median(floor, "conns")
				conns = fmt.Sprintf("%.0f (%.0f) / %.0f (%.0f)", smed, sc, fmed, fc)
			}
			var verdict []string
			check := func(ok bool, what string) {
				if ok {
					verdict = append(verdict, what+" ok")
				} else {
					verdict = append(verdict, "**"+what+" MISSED**")
					missed = append(missed, fmt.Sprintf("%s %s: %s", op, mode, what))
				}
			}
			check(timeRatio <= maxTimeRatio, "time")
			check(sa/fa <= maxAllocsRatio, "allocs")
			if okc {
				check(sc <= float64(n), "conns")
			}
			fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %s | %s |\n",
				op, n, sn, fn, timeX, cpu, sb, fb, sb/fb, sa, fa, sa/fa, conns, strings.Join(verdict, ", "))
		}
	}
	return missed
}

// printFloatFloor writes the float64 floor's table, for scale.
func printFloatFloor(w io.Writer, r results) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "× = SDK/floor, per run (SDK and floor of the same round), then the median and the range over the runs; the time target applies to the median. CPU × compares the process's CPU time per call (client and in-process server), which other load disturbs less than wall time. Conns: connections the server saw opened by a fresh client (median and max over runs; the target applies to the max).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Floor with float64 amounts (inexact money; for scale, not a target):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Operation | Callers | Float floor ns/op | B/op | allocs |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|")
	for _, op := range []string{"GetPayment", "ListPayouts100"} {
		for _, mode := range []string{"seq", "par64"} {
			name := op + "/" + mode + "/floatfloor"
			ns, ok := r.median(name, "ns/op")
			if !ok {
				continue
			}
			b, _ := r.median(name, "B/op")
			a, _ := r.median(name, "allocs/op")
			n := 1
			if mode == "par64" {
				n = callers
			}
			fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f |\n", op, n, ns, b, a)
		}
	}
}

// printDiagnostics writes the client-alone and fake-server lines, adding
// to missed.
func printDiagnostics(w io.Writer, r results, missed []string) []string {
	if sn, ok := r.median("ClientOverheadGetPayment/seq/sdk", "ns/op"); ok {
		fn, _ := r.median("ClientOverheadGetPayment/seq/floor", "ns/op")
		sa, _ := r.median("ClientOverheadGetPayment/seq/sdk", "allocs/op")
		fa, _ := r.median("ClientOverheadGetPayment/seq/floor", "allocs/op")
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Client alone (GetPayment over an in-memory transport, no sockets; diagnostic): SDK %.0f ns/op, %.0f allocs; floor %.0f ns/op, %.0f allocs; × %.2f\n", sn, sa, fn, fa, sn/fn)
	}
	if rps, ok := r.median("ServerGetPayment", "req/s"); ok {
		fmt.Fprintln(w)
		verdict := "ok"
		if rps < minServerRPS {
			verdict = "**MISSED**"
			missed = append(missed, "fake server req/s")
		}
		fmt.Fprintf(w, "Fake server (cryptopaytest BenchmarkServerGetPayment, GET status over loopback): %.0f req/s (target ≥ %d: %s)\n", rps, minServerRPS, verdict)
	}
	return missed
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
