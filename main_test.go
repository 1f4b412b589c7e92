package cryptopay_test

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// parallelCells is how many parallel tests of this package run at once
// unless -parallel says otherwise. The default, GOMAXPROCS, is 2 on a
// 2-core machine; the fault matrix's cells (TestFaultMatrix) spend their
// time waiting on timeouts and backoffs, not on a CPU, so 2 at a time
// made the package wait for them in turn: the same cells, run 8 at a time,
// use the same CPU in about a third less time.
const parallelCells = 8

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); !set && p != nil {
		if n, ok := p.Value.(flag.Getter).Get().(int); ok && n < parallelCells {
			_ = p.Value.Set(strconv.Itoa(parallelCells))
		}
	}
	os.Exit(m.Run())
}
