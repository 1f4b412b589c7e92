package cryptopaytest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// WithPayoutListLag hides a payout from the list (items and count) until
// the lag has passed on the server clock; the status endpoint sees it at
// once.
func TestPayoutListLag(t *testing.T) {
	s := newServer(t, cryptopaytest.WithPayoutListLag(time.Hour))
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = createPayout(t, s, strings.Replace(payoutBody, `"po-1"`, fmt.Sprintf(`"po-%d"`, i), 1))
	}
	listed := func() (string, int) {
		r := call(t, s, "GET", "/v1/payout/list", "")
		require.Equal(t, http.StatusOK, r.Status)
		m := r.obj(t)
		return m["count"].(fmt.Stringer).String(), len(m["payout"].([]any))
	}
	count, items := listed()
	assert.Equal(t, "0", count, "created within the lag: not counted")
	assert.Equal(t, 0, items)
	for _, id := range ids {
		assert.Equal(t, http.StatusOK, call(t, s, "GET", "/v1/payout/"+id+"/status", "").Status, "status is not lagged")
	}
	s.Advance(time.Hour)
	count, items = listed()
	assert.Equal(t, "3", count)
	assert.Equal(t, 3, items)
}

func TestPayoutListLagNegative(t *testing.T) {
	_, err := cryptopaytest.StartServer(cryptopaytest.WithPayoutListLag(-time.Second))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithPayoutListLag")
}
