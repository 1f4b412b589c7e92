package cryptopay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestSecurityPathEscaping: ids that try to leave their path segment are
// refused before sending (empty, ".", "..", control characters) or,
// escaped, stay in their one segment and reach no other endpoint (a 404);
// a payment id that is not a UUID is refused before sending.
func TestSecurityPathEscaping(t *testing.T) {
	s := cryptopaytest.NewServer()
	t.Cleanup(s.Close)
	c := s.Client()
	ctx := context.Background()
	hostile := []string{"../balance", "../../v1/balance", "x/../../v1/currencies", "..", "%2e%2e", "a?limit=1", "a#frag", "list", "x/status", " /v1/balance", "po\r\nX-Api-Key: other",
		"po_ü+1", "a:b", "po;x", "po&limit=1", `po'"<>`, "~user", "po..", "%", "@evil.example"}
	refused := 0
	for _, id := range hostile {
		before := s.Requests(cryptopaytest.RouteGetPayout)
		_, err := c.GetPayout(ctx, id)
		require.Error(t, err, "%q", id)
		if errors.Is(err, cryptopay.ErrInvalidParams) {
			refused++
			assert.Equal(t, before, s.Requests(cryptopaytest.RouteGetPayout), "%q refused before sending", id)
		} else {
			assert.ErrorIs(t, err, cryptopay.ErrNotFound, "%q reaches the payout status route as an id", id)
			// The fake routes on the unescaped path, so an id holding a
			// slash (sent as %2F, inside its one segment) matches no route
			// there: a 404 that reaches no endpoint at all.
			want := before + 1
			if strings.Contains(id, "/") {
				want = before
			}
			assert.Equal(t, want, s.Requests(cryptopaytest.RouteGetPayout), "%q", id)
		}

		_, err = c.GetPayment(ctx, id)
		assert.ErrorIs(t, err, cryptopay.ErrInvalidParams, "%q is not a payment id", id)
	}
	for _, r := range []cryptopaytest.Route{cryptopaytest.RouteBalance, cryptopaytest.RouteCurrencies, cryptopaytest.RouteListPayouts, cryptopaytest.RouteGetPayment, cryptopaytest.RouteCreatePayout, cryptopaytest.RouteCreatePayment} {
		assert.Zero(t, s.Requests(r), "no hostile id reached %s", r)
	}
	t.Logf("%d of %d hostile payout ids refused before sending, the rest escaped into one segment", refused, len(hostile))
}
