package cryptopaytest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// GET /_control/ answers with every endpoint (the fake's banner names it;
// it answered 404), and each one listed is routed; GET /_control/payouts
// and /_control/payments list the ids.
func TestControlIndexAndLists(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI())
	payout := createPayout(t, s, payoutBody)
	payment := createPayment(t, s, paymentBody)

	r := ctl(t, s, "GET", "/", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var endpoints []string
	for _, e := range r.obj(t)["endpoints"].([]any) {
		endpoints = append(endpoints, e.(string))
	}
	assert.Contains(t, endpoints, "GET /_control/payouts")
	assert.Contains(t, endpoints, "GET /_control/payments")
	assert.Contains(t, endpoints, "POST /_control/payouts/{id}/status")
	for _, e := range endpoints {
		method, path, _ := strings.Cut(e, " ")
		path = strings.NewReplacer("{id}", "x", "{$}", "").Replace(path)
		got := call(t, s, method, path, "{}", "x-api-key", "")
		assert.False(t, got.Status == 404 && strings.Contains(string(got.Body), "no such control endpoint"), "%s is not routed", e)
	}

	list := ctl(t, s, "GET", "/payouts", "").arr(t)
	require.Len(t, list, 1)
	assert.Equal(t, payout, list[0]["id"])
	assert.Equal(t, "created", list[0]["status"])
	assert.NotEmpty(t, list[0]["orderId"])

	list = ctl(t, s, "GET", "/payments", "").arr(t)
	require.Len(t, list, 1)
	assert.Equal(t, payment, list[0]["id"])
}
