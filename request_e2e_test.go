package cryptopay_test

import (
	"context"
	"strings"
	"testing"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end tests of request.go against the fake server.

// TestSecurityHugeBodiesCapped: a server (or a proxy in front of it) that
// answers with a huge body cannot make the client hold it: an error body
// is kept to 8 KiB, a success body beyond WithMaxResponseBytes is refused.
func TestSecurityHugeBodiesCapped(t *testing.T) {
	s := cryptopaytest.NewServer()
	t.Cleanup(s.Close)
	ctx := context.Background()
	huge := strings.Repeat("<p>spam spam spam</p>", 4<<20/21) // 4 MiB of HTML

	c := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{}))
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 500, Body: huge, ContentType: "text/html"})
	_, err := c.GetBalances(ctx)
	var apiErr *cryptopay.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.LessOrEqual(t, len(apiErr.Body), 8<<10)
	assert.LessOrEqual(t, len(apiErr.Message), 600)
	assert.Less(t, len(err.Error()), 1024)

	small := s.Client(cryptopay.WithMaxResponseBytes(1 << 20))
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Status: 200, Body: `[` + strings.Repeat(`{"currency":"usdt","network":"tron"},`, 2<<20/36) + `{}]`})
	_, err = small.ListCurrencies(ctx)
	assert.ErrorIs(t, err, cryptopay.ErrUnexpectedResponse)
	assert.Contains(t, err.Error(), "larger than")
}
