package oapibench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/benchfloor"
)

// The clients compared, and the calls: the SDK; the generated client on
// the SDK's transport settings and per-attempt timeout (the same work);
// the generated client on its defaults (no timeout, the default
// transport); the floor; and, to price the timeout, the SDK without it
// (WithTimeout(0); the call's ctx still bounds the call).
var (
	clients = []string{"sdk", "oapi", "oapidefault", "floor", "sdknotimeout"}
	ops     = []string{"GetPayment", "CreatePayment"}
)

var errNotPaid = errors.New("paidAmount not decoded")

// newCaller returns client's call of op against the server at url, on a
// fresh client; id is the payment read.
func newCaller(tb testing.TB, client, op, url, id string) func(context.Context) error {
	tb.Helper()
	get := op == "GetPayment"
	switch client {
	case "sdk", "sdknotimeout":
		var opts []cryptopay.Option
		if client == "sdknotimeout" {
			opts = append(opts, cryptopay.WithTimeout(0))
		}
		c := newSDK(tb, url, apiKey, opts...)
		if get {
			return func(ctx context.Context) error {
				p, err := c.GetPayment(ctx, id)
				if err == nil && !p.PaidAmount.Valid {
					err = errNotPaid
				}
				return err
			}
		}
		return func(ctx context.Context) error { _, err := c.CreatePayment(ctx, createParams); return err }
	case "oapi", "oapidefault":
		var hc *http.Client
		if client == "oapi" {
			hc = newHTTPClient(tb)
		}
		c := newOAPI(tb, url, apiKey, hc)
		if get {
			return func(ctx context.Context) error { _, err := oapiGetPayment(ctx, c, id); return err }
		}
		return func(ctx context.Context) error {
			_, err := oapiCreatePayment(ctx, c, oapiCreate(createParams))
			return err
		}
	case "floor":
		f := benchfloor.New(newHTTPClient(tb), url, apiKey)
		if get {
			return func(ctx context.Context) error { _, err := f.GetPayment(ctx, id); return err }
		}
		return func(ctx context.Context) error {
			_, err := f.CreatePayment(ctx, benchfloor.CreatePaymentParams(createParams))
			return err
		}
	}
	tb.Fatalf("no client %q", client)
	return nil
}

// runCalls makes b.N calls of client's op on a fresh server and client
// and returns the process's CPU time per call (client and server: the
// same server for every client), reporting it as "cpu-ns/op".
func runCalls(b *testing.B, a answers, client, op string) float64 {
	s := newCannedServer(b, a)
	call := newCaller(b, client, op, s.URL, a.id)
	ctx := context.Background()
	b.ReportAllocs()
	cpu0, ok0 := benchfloor.ProcessCPU()
	b.ResetTimer()
	for range b.N {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu1, ok1 := benchfloor.ProcessCPU()
	if !ok0 || !ok1 {
		return 0
	}
	perCall := float64(cpu1-cpu0) / float64(b.N)
	b.ReportMetric(perCall, "cpu-ns/op")
	return perCall
}

// benchOrder rotates which client runs first from one -count round to the
// next, so none always inherits another's heap and scheduler state.
var benchOrder atomic.Int64

func benchOp(b *testing.B, op string) {
	a := fakeAnswers(b)
	first := int(benchOrder.Add(1)-1) % len(clients)
	for i := range clients {
		client := clients[(first+i)%len(clients)]
		b.Run("seq/"+client, func(b *testing.B) { runCalls(b, a, client, op) })
	}
}

// BenchmarkGetPayment and BenchmarkCreatePayment run each client alone
// (seq/sdk, seq/oapi, seq/floor): what scripts/instructions.sh counts.
func BenchmarkGetPayment(b *testing.B)    { benchOp(b, "GetPayment") }
func BenchmarkCreatePayment(b *testing.B) { benchOp(b, "CreatePayment") }

// rounds is how many times BenchmarkSideBySide runs every client.
var rounds = flag.Int("rounds", 5, "rounds of BenchmarkSideBySide, each every client once, interleaved")

// BenchmarkSideBySide runs, for each call, the three clients one after the
// other in one process, -rounds times (the first client rotating from
// round to round; keep -count at 1), and prints each round's ratios of
// process CPU per call, the SDK's ÷ each other client's, with their
// medians and ranges: on a shared machine compare clients within a round.
func BenchmarkSideBySide(b *testing.B) {
	a := fakeAnswers(b)
	for _, op := range ops {
		ratios := map[string][]float64{}
		for r := range *rounds {
			cpu := map[string]float64{}
			for i := range clients {
				client := clients[(r+i)%len(clients)]
				b.Run(fmt.Sprintf("%s/round=%d/%s", op, r+1, client), func(b *testing.B) {
					cpu[client] = runCalls(b, a, client, op)
				})
			}
			for _, other := range clients[1:] {
				if cpu[other] > 0 {
					ratios[other] = append(ratios[other], cpu["sdk"]/cpu[other])
				}
			}
		}
		for _, other := range clients[1:] {
			// Printed, not logged: a passing benchmark's log is shown only with -v.
			fmt.Printf("%s CPU per call, sdk ÷ %s by round: %.2f; %s\n", op, other, ratios[other], spread(ratios[other]))
		}
	}
}

// spread gives the median of xs and their range.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "no ratio (process CPU not measured here)"
	}
	s := slices.Sorted(slices.Values(xs))
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + median) / 2
	}
	return fmt.Sprintf("median %.2f (%.2f–%.2f)", median, s[0], s[len(s)-1])
}
