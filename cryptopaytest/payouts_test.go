package cryptopaytest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"net/http"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/google/uuid"
)

func TestPayoutBalances(t *testing.T) {
	tests := []struct {
		final     cryptopay.PayoutStatus
		feeByUser bool
		balance   string // after the final status, starting from 100
		paid      string
		merchant  string
	}{
		{"paid", true, "90", "9.95", "10"},
		{"paid", false, "89.95", "10", "10.05"},
		{"failed", true, "100", "", ""},
		{"cancelled", false, "100", "", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/feeByUser=%t", tt.final, tt.feeByUser), func(t *testing.T) {
			s := newServer(t, cryptopaytest.WithBalance("eth", "eth", dec("100")))
			body := fmt.Sprintf(`{"walletAddress":"0xabc","networkFeeByUser":%t,"amount":"10","currency":"eth","network":"eth",
				"customerId":"c","customerIp":"1.2.3.4","orderId":"o"}`, tt.feeByUser)
			id := createPayout(t, s, body)
			if tt.feeByUser {
				assert.True(t, s.Balance("eth", "eth").Equal(dec("90")))
			} else {
				assert.True(t, s.Balance("eth", "eth").Equal(dec("89.95")))
			}
			if tt.final != "cancelled" {
				require.NoError(t, s.SetPayoutStatus(id, "processing"))
			}
			require.NoError(t, s.SetPayoutStatus(id, tt.final))
			assert.True(t, s.Balance("eth", "eth").Equal(dec(tt.balance)), "balance %s", s.Balance("eth", "eth"))
			m := call(t, s, "GET", "/v1/payout/"+id+"/status", "").obj(t)
			if tt.paid == "" {
				assert.True(t, num(t, m, "paidAmount").IsZero(), "never paid")
				return
			}
			assert.True(t, num(t, m, "paidAmount").Equal(dec(tt.paid)))
			assert.True(t, num(t, m, "merchantAmount").Equal(dec(tt.merchant)))
			list := call(t, s, "GET", "/v1/payout/list", "").obj(t)["payout"].([]any)
			assert.Equal(t, tt.merchant, list[0].(map[string]any)["merchantAmount"].(fmt.Stringer).String())
		})
	}
}

func TestInsufficientFundsExactEdge(t *testing.T) {
	s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("25")), cryptopaytest.WithNetworkFeePercent(dec("0")))
	createPayout(t, s, payoutBody) // exactly the balance
	assert.True(t, s.Balance("usdt", "tron").IsZero())
	r := call(t, s, "POST", "/v1/payout", payoutBody)
	assert.Equal(t, 400, r.Status)
	assert.Equal(t, "insufficient_funds", r.obj(t)["code"])
	s.SetBalance("usdt", "tron", dec("25"))
	createPayout(t, s, payoutBody)
	assert.Equal(t, 2, s.PayoutsWithOrderID("po-1"), "the fake never deduplicates by orderId")
	assert.Len(t, s.PayoutIDsWithOrderID("po-1"), 2)
	assert.Equal(t, 0, s.PayoutsWithOrderID("other"))
}

func TestPayoutWire(t *testing.T) {
	s := newServer(t)
	r := call(t, s, "POST", "/v1/payout", payoutBody)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m := r.obj(t)
	assert.Equal(t, payoutKeys, keys(m))
	id := m["payoutId"].(string)
	_, err := uuid.Parse(id)
	assert.NoError(t, err)
	assert.Equal(t, "created", m["status"])
	assert.True(t, num(t, m, "amount").Equal(dec("25")))
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", m["walletAddress"])
	assert.Equal(t, true, m["networkFeeByUser"])
	assert.Equal(t, "po-1", m["orderId"])

	g := call(t, s, "GET", "/v1/payout/"+id+"/status", "")
	require.Equal(t, http.StatusOK, g.Status)
	gm := g.obj(t)
	assert.Equal(t, sorted(append(payoutKeys, "paidAmount", "merchantAmount")...), keys(gm))
	assert.True(t, num(t, gm, "paidAmount").IsZero(), "0 before the payout is paid: the spec says number")
	assert.True(t, num(t, gm, "merchantAmount").IsZero())

	require.NoError(t, s.SetPayoutStatus(id, "processing"))
	require.NoError(t, s.SetPayoutStatus(id, "paid"))
	gm = call(t, s, "GET", "/v1/payout/"+id+"/status", "").obj(t)
	assert.Equal(t, "paid", gm["status"])
	assert.True(t, num(t, gm, "paidAmount").Equal(dec("24.875")), "user bears the 0.5%% network fee")
	assert.True(t, num(t, gm, "merchantAmount").Equal(dec("25")))
}

func TestListPayoutsWire(t *testing.T) {
	s := newServer(t)
	for i := range 25 {
		createPayout(t, s, strings.Replace(payoutBody, `"po-1"`, fmt.Sprintf(`"po-%02d"`, i), 1))
	}
	r := call(t, s, "GET", "/v1/payout/list", "")
	require.Equal(t, http.StatusOK, r.Status)
	m := r.obj(t)
	assert.Equal(t, []string{"count", "payout"}, keys(m))
	assert.Equal(t, "25", m["count"].(fmt.Stringer).String())
	items := m["payout"].([]any)
	require.Len(t, items, cryptopaytest.DefaultListLimit)
	first := items[0].(map[string]any)
	assert.Equal(t, sorted("status", "amount", "merchantAmount", "paidAddress", "orderId", "customerId",
		"payCurrency", "payNetwork", "createdAt", "payoutWallet"), keys(first))
	assert.Equal(t, "po-00", first["orderId"], "creation order")
	assert.Equal(t, map[string]any{"name": "usdt"}, first["payCurrency"])
	assert.Equal(t, map[string]any{"name": "tron"}, first["payNetwork"])
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", first["payoutWallet"].(map[string]any)["address"])
	assert.Equal(t, "customer cust-1", first["payoutWallet"].(map[string]any)["label"])
	assert.Equal(t, "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G", first["paidAddress"])

	tests := []struct {
		query     string
		status    int
		n         int
		firstID   string
		errorCode string
	}{
		{"?limit=5", 200, 5, "po-00", ""},
		{"?limit=5&offset=20", 200, 5, "po-20", ""},
		{"?limit=10&offset=20", 200, 5, "po-20", ""},
		{"?offset=25", 200, 0, "", ""},
		{"?offset=1000", 200, 0, "", ""},
		{"?limit=1000", 200, 25, "po-00", ""},
		{"?limit=0", 400, 0, "", "invalid_request"},
		{"?limit=-1", 400, 0, "", "invalid_request"},
		{"?limit=x", 400, 0, "", "invalid_request"},
		{"?offset=-1", 400, 0, "", "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := call(t, s, "GET", "/v1/payout/list"+tt.query, "")
			require.Equal(t, tt.status, r.Status, "%s", r.Body)
			m := r.obj(t)
			if tt.errorCode != "" {
				assert.Equal(t, tt.errorCode, m["code"])
				assert.NotEmpty(t, m["message"])
				return
			}
			items := m["payout"].([]any)
			require.Len(t, items, tt.n)
			assert.Equal(t, "25", m["count"].(fmt.Stringer).String())
			if tt.n > 0 {
				assert.Equal(t, tt.firstID, items[0].(map[string]any)["orderId"])
			}
		})
	}
}

func TestListPayoutsCap(t *testing.T) {
	t.Parallel()
	s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("100000")))
	for i := range cryptopaytest.MaxListLimit + 5 {
		createPayout(t, s, strings.Replace(payoutBody, `"po-1"`, fmt.Sprintf(`"po-%d"`, i), 1))
	}
	m := call(t, s, "GET", "/v1/payout/list?limit=500", "").obj(t)
	assert.Len(t, m["payout"].([]any), cryptopaytest.MaxListLimit)
	assert.Equal(t, fmt.Sprint(cryptopaytest.MaxListLimit+5), m["count"].(fmt.Stringer).String())
}
