package oapibench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The SDK's allocations per call over loopback (the in-process server's
// included, the same for every client), every check on, bounded from
// above; the other clients' are logged beside them.
// The bounds are this change's counts (BENCHMARKS.md, "The SDK beside an
// oapi-codegen client"), the same in every run (AllocsPerRun truncates the
// mean, so a rare redial does not move it): a change that adds an
// allocation per call fails here.
func TestAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector changes allocation counts (CI runs this test without -race too)")
	}
	bound := map[string]float64{"GetPayment": maxGetAllocs, "CreatePayment": maxCreateAllocs}
	a := fakeAnswers(t)
	s := newCannedServer(t, a)
	ctx := context.Background()
	for _, op := range ops {
		got := map[string]float64{}
		for _, client := range clients {
			call := newCaller(t, client, op, s.URL, a.id)
			got[client] = testing.AllocsPerRun(500, func() {
				if err := call(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
		t.Logf("%s allocations per call: %v", op, got)
		assert.LessOrEqual(t, got["sdk"], bound[op], op)
	}
}

const (
	maxGetAllocs    = 102
	maxCreateAllocs = 118
)
