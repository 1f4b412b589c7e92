//go:build unix

package benchfloor

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user + system) the process has used so far:
// the benchmarks report it per call as "cpu-ns/op", which a busy shared
// machine disturbs less than wall time. ok is false where it is not
// measured.
func ProcessCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
