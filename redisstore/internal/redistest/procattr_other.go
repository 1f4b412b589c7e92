//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing off Linux: Stop, run by t.Cleanup, ends the
// server when the test ends normally.
func dieWithParent(*exec.Cmd) {}
