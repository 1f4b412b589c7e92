package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// "cryptopay payout --help" prints the payout commands, not the top-level
// help; the group alone is a usage error with the same list on stderr.
func TestGroupHelp(t *testing.T) {
	f := setup(t)
	tests := []struct {
		args     []string
		code     int
		want     []string
		notWant  []string
		onStderr bool
	}{
		{[]string{"payout", "--help"}, exitOK, []string{"Usage: cryptopay payout <command>", "payout batch FILE", "'payout queue show|approve|reject|retry|resolve|cancel ORDER_ID'"},
			[]string{"balances", "payment get", "Exit codes:"}, false},
		{[]string{"payout", "-h"}, exitOK, []string{"payout create"}, []string{"webhook url"}, false},
		{[]string{"payment", "help"}, exitOK, []string{"payment wait ID", "payment create"}, []string{"payout"}, false},
		{[]string{"webhook", "--help"}, exitOK, []string{"webhook url", "webhook send"}, []string{"payment get", "balances"}, false},
		{[]string{"payout"}, exitUsage, []string{"Usage: cryptopay payout <command>"}, []string{"Exit codes:"}, true},
		// A payout requires a network (it picks the address check) and an
		// orderId; a payment requires neither.
		{[]string{"payout", "create", "--help"}, exitOK, []string{"for example tron (required)", "reconciled) (required)"}, nil, false},
		{[]string{"payment", "create", "--help"}, exitOK, []string{"for example tron\n", "reconciled) (required)\n"}, []string{"tron (required)"}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := f.run(tt.args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			out := r.stdout
			if tt.onStderr {
				out = r.stderr
			}
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, out, w)
			}
		})
	}
}
