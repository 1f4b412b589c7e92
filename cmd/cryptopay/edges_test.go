package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The payout queue's commands and payout batch never call the API: their
// help lists none of the API's flags, and they refuse them.
func TestQueueCommandsListOnlyTheirFlags(t *testing.T) {
	f := setup(t)
	for _, cmd := range [][]string{{"payout", "queue", "list"}, {"payout", "queue", "show"}, {"payout", "queue", "approve"},
		{"payout", "queue", "reject"}, {"payout", "queue", "retry"}, {"payout", "batch"}} {
		name := strings.Join(cmd, " ")
		t.Run(name, func(t *testing.T) {
			r := f.run(append(cmd, "--help")...)
			assert.Equal(t, exitOK, r.code, r.stderr)
			for _, unused := range []string{"-api-key-file", "-base-url", "-request-timeout"} {
				assert.NotContains(t, r.stdout, unused)
			}
			assert.Contains(t, r.stdout, "-database-url")
			assert.Contains(t, r.stdout, "-output")

			r = f.run(append(cmd, "--base-url", "http://127.0.0.1:1")...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, "flag provided but not defined: -base-url")
		})
	}
}
