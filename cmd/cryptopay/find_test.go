package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestPayoutFind(t *testing.T) {
	f := setup(t)
	f.createPayout("po-other", "1")
	f.createPayout("po-find", "2.000001")
	hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name        string
		args        []string
		wantCode    int
		wantVerdict string
	}{
		{"exists, attempted a minute ago", []string{"--order-id", "po-find", "--attempted-at", "1m"}, 0, "exists"},
		{"exists, RFC 3339 time", []string{"--order-id", "po-find", "--attempted-at", hourAgo}, 0, "exists"},
		{"exists, time unknown", []string{"--order-id", "po-find"}, 0, "exists"},
		{"not created, attempted an hour ago", []string{"--order-id", "po-missing", "--attempted-at", "1h"}, exitNo, "not_created"},
		{"not created, time unknown", []string{"--order-id", "po-missing"}, exitNo, "not_created"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.run(append([]string{"payout", "find"}, tt.args...)...)
			assert.Equal(t, tt.wantCode, r.code, r.stderr)
			var out findOutput
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
			assert.Equal(t, tt.wantVerdict, out.Verdict)
			assert.NotEmpty(t, out.Reason)
			if len(tt.args) == 2 {
				assert.NotContains(t, out.Reason, "the attempt", "no --attempted-at: there is no attempt time to talk about")
			}
			if tt.wantVerdict == "exists" {
				require.NotNil(t, out.Payout)
				assert.Equal(t, "2.000001", out.Payout.Amount)
				assert.Equal(t, "po-find", out.Payout.OrderID)
			} else {
				assert.Nil(t, out.Payout)
			}
		})
	}

	r := f.runCLI(terms{stdout: true}, "", "payout", "find", "--order-id", "po-find")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Verdict\s+exists \(the payout exists: do NOT create it again\)`, r.stdout)
	assert.Regexp(t, `Amount\s+2\.000001 usdt on tron`, r.stdout)

	r = f.runCLI(terms{stdout: true}, "", "payout", "find", "--order-id", "po-missing", "--attempted-at", "2h")
	assert.Equal(t, exitNo, r.code, r.stderr)
	assert.Regexp(t, `Verdict\s+not_created \(no payout was created: creating it again is safe\)`, r.stdout)

	// A list that cannot be read is no evidence: still_unknown, exit 2,
	// with the error on stderr.
	f.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 404})
	r = f.run("payout", "find", "--order-id", "po-missing", "--attempted-at", "1h")
	assert.Equal(t, exitNotYet, r.code, r.stderr)
	var out findOutput
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, "still_unknown", out.Verdict)
	assert.Contains(t, out.Reason, "could not be read")
	assert.Regexp(t, `^cryptopay: payout find: still_unknown: .*404.*\n$`, r.stderr)

	r = f.runCLI(terms{stdout: true}, "", "payout", "find", "--order-id", "po-find")
	require.Equal(t, 0, r.code, "the fault was used up: %s", r.stderr)

	for _, args := range [][]string{
		{"payout", "find"},
		{"payout", "find", "--order-id", "x", "--attempted-at", "yesterday"},
		{"payout", "find", "--order-id", "x", "--attempted-at", "-5m"},
	} {
		r = f.run(args...)
		assert.Equal(t, exitUsage, r.code, "%v", args)
	}
}
