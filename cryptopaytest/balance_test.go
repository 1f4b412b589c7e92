package cryptopaytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestBalanceUnknownPair: a pair the server never saw reads as zero, and
// pairs set later are listed after the supported ones, in the order set.
func TestBalanceUnknownPair(t *testing.T) {
	s := newServer(t, cryptopaytest.WithBalance("xmr", "monero", dec("3")))
	assert.True(t, s.Balance("xmr", "monero").Equal(dec("3")))
	assert.True(t, s.Balance("nope", "nope").IsZero())
	s.SetBalance("doge", "doge", dec("7"))
	list := call(t, s, "GET", "/v1/balance", "").arr(t)
	n := len(cryptopaytest.DefaultCurrencies())
	require.Len(t, list, n+2)
	assert.Equal(t, "xmr", list[n]["currency"])
	assert.Equal(t, "doge", list[n+1]["currency"])
}
