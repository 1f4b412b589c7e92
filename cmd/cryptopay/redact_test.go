package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRedactSecrets(t *testing.T) {
	const key = "sk_Live_9fQ2xW7pL4vR8tY3"
	tests := []struct{ name, in, want string }{
		{"none", "GET /v1/balance: 401 unauthorized", "GET /v1/balance: 401 unauthorized"},
		{"whole", "bad key " + key + " refused", "bad key [REDACTED] refused"},
		{"upper case", "BAD " + strings.ToUpper(key), "BAD [REDACTED]"},
		{"cut at the end", "id r" + key[:12], "id r[REDACTED]"},
		{"cut at the start", key[9:] + "…", "[REDACTED]…"},
		{"percent-encoded", "k=sk_Live_9fQ2x%2F" + key[12:], "k=[REDACTED]%2F[REDACTED]"},
		{"the CLI's own words kept", "run 'cryptopay payout find'", "run 'cryptopay payout find'"},
		{"twice", key + "," + key, "[REDACTED],[REDACTED]"},
		{"invalid UTF-8 before", "\xff\xfe" + key, "\xff\xfe[REDACTED]"},
		{"short run kept", "Live_9fQ2xW", "Live_9fQ2xW"},
		{"low-entropy run kept", "12.000000000000000001", "12.000000000000000001"},
		{"the key's public prefix kept", "fault injected by cryptopaytest; the request was not processed",
			"fault injected by cryptopaytest; the request was not processed"},
		{"a run past the public prefix redacted", "key test_key_cryptopaytest_0000000001", "key test_key_cry[REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, redactSecrets(tt.in, key, "0000000000000000", "cryptopay_live_0123456789", "test_key_cryptopaytest_0000000001"))
		})
	}
}
