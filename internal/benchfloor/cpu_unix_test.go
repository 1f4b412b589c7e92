//go:build unix

package benchfloor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProcessCPUIsMeasured: on unix the process's CPU time is read.
func TestProcessCPUIsMeasured(t *testing.T) {
	_, ok := ProcessCPU()
	assert.True(t, ok)
}
