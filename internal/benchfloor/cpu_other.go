//go:build !unix

package benchfloor

import "time"

// ProcessCPU is not measured on this platform: ok is false.
func ProcessCPU() (cpu time.Duration, ok bool) { return 0, false }
