package cryptopaytest_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// ctl sends a control request; the control API needs no key.
func ctl(t *testing.T, s *cryptopaytest.Server, method, path, body string) reply {
	t.Helper()
	return call(t, s, method, "/_control"+path, body, "x-api-key", "")
}

func TestControlPayments(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI())
	id := createPayment(t, s, paymentBody)

	r := ctl(t, s, "POST", "/payments/"+id+"/pay", `{"amount":"4.1"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	m := r.obj(t)
	assert.Equal(t, "paid_partial", m["status"])
	assert.True(t, num(t, m, "paidAmount").Equal(dec("4.1")))

	r = ctl(t, s, "POST", "/payments/"+id+"/pay", `{"amount":6}`)
	assert.Equal(t, "paid", r.obj(t)["status"])

	r = ctl(t, s, "GET", "/payments/"+id, "")
	assert.Equal(t, "paid", r.obj(t)["status"])

	id2 := createPayment(t, s, paymentBody)
	r = ctl(t, s, "POST", "/payments/"+id2+"/status", `{"status":"expired"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	m = r.obj(t)
	assert.Equal(t, "expired", m["status"])
	// Forced to expired, it expired now: expiredAt is not left in the future.
	exp, err := time.Parse(time.RFC3339Nano, m["expiredAt"].(string))
	require.NoError(t, err)
	assert.False(t, exp.After(s.Now()), "expiredAt %s is after the fake's now %s", exp, s.Now())

	tests := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/payments/" + id + "/status", `{"status":"failed"}`, 409, "conflict"},
		{"POST", "/payments/nope/pay", `{"amount":1}`, 404, "not_found"},
		{"GET", "/payments/nope", ``, 404, "not_found"},
		{"POST", "/payments/" + id + "/pay", `{"amount":0}`, 400, "invalid_request"},
		{"POST", "/payments/" + id + "/pay", `{"amount":"x"}`, 400, "invalid_request"},
		{"POST", "/payments/" + id + "/pay", `{}`, 400, "invalid_request"},
		{"POST", "/payments/" + id + "/pay", `{"amount":1,"amuont":2}`, 400, "invalid_request"},
		{"POST", "/payments/" + id + "/status", `{"status":"done"}`, 400, "invalid_request"},
		{"GET", "/nothing", ``, 404, "not_found"},
		{"GET", "/payments/" + id + "/pay/more", ``, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path+tt.body, func(t *testing.T) {
			r := ctl(t, s, tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, r.Status, "%s", r.Body)
			assert.Equal(t, tt.code, r.obj(t)["code"])
		})
	}
}

func TestControlWrongMethodIs405(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI())
	id := createPayment(t, s, paymentBody)
	tests := []struct {
		method, path string
		allow        []string
	}{
		{"GET", "/payments/" + id + "/pay", []string{"POST"}},
		{"PUT", "/payments/" + id + "/status", []string{"POST"}},
		{"DELETE", "/payments/" + id, []string{"GET", "HEAD"}},
		{"POST", "/payouts/x", []string{"GET", "HEAD"}},
		{"GET", "/payouts/x/status", []string{"POST"}},
		{"POST", "/clock", []string{"GET", "HEAD"}},
		{"GET", "/clock/advance", []string{"POST"}},
		{"GET", "/faults", []string{"DELETE", "POST"}},
		{"GET", "/balances", []string{"PUT"}},
		{"POST", "/webhooks", []string{"GET", "HEAD"}},
		{"DELETE", "/state", []string{"GET", "HEAD"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			r := ctl(t, s, tt.method, tt.path, "")
			require.Equal(t, http.StatusMethodNotAllowed, r.Status, "%s", r.Body)
			assert.Equal(t, "method_not_allowed", r.obj(t)["code"])
			allow := strings.Split(r.Header.Get("Allow"), ", ")
			slices.Sort(allow)
			assert.Equal(t, tt.allow, allow)
		})
	}
}

func TestControlPayoutsBalancesState(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI())
	id := createPayout(t, s, payoutBody)
	for _, st := range []string{"processing", "paid"} {
		r := ctl(t, s, "POST", "/payouts/"+id+"/status", `{"status":"`+st+`"}`)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, st, r.obj(t)["status"])
	}
	r := ctl(t, s, "POST", "/payouts/"+id+"/status", `{"status":"failed"}`)
	assert.Equal(t, 409, r.Status)
	assert.Contains(t, r.obj(t)["message"], "final")
	assert.Equal(t, "paid", ctl(t, s, "GET", "/payouts/"+id, "").obj(t)["status"])
	assert.Equal(t, 404, ctl(t, s, "POST", "/payouts/nope/status", `{"status":"paid"}`).Status)

	r = ctl(t, s, "PUT", "/balances", `{"currency":"usdt","network":"tron","amount":"12.5"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.True(t, s.Balance("usdt", "tron").Equal(dec("12.5")))
	assert.Equal(t, 400, ctl(t, s, "PUT", "/balances", `{"currency":"usdt","network":"tron","amount":-1}`).Status)

	st := ctl(t, s, "GET", "/state", "").obj(t)
	assert.Equal(t, "1", st["payouts"].(interface{ String() string }).String())
	assert.Contains(t, st, "requests")
	assert.Contains(t, st, "balances")
	assert.Contains(t, st, "connectionsOpened")
	reqs := st["requests"].(map[string]any)
	assert.Equal(t, "1", reqs[string(cryptopaytest.RouteCreatePayout)].(interface{ String() string }).String())
}

func TestControlClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newServer(t, cryptopaytest.WithControlAPI(), cryptopaytest.WithStartTime(start))
	id := createPayment(t, s, paymentBody)

	r := ctl(t, s, "POST", "/clock/advance", `{"seconds":3600}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	now, err := time.Parse(time.RFC3339, r.obj(t)["now"].(string))
	require.NoError(t, err)
	assert.False(t, now.Before(start.Add(time.Hour)), "an hour on")
	assert.False(t, now.After(s.Now()), "the clock the server reads")
	st, _ := s.PaymentStatus(id)
	assert.Equal(t, cryptopay.PaymentExpired, st)

	r = ctl(t, s, "POST", "/clock/advance", `{"duration":"90m"}`)
	require.Equal(t, 200, r.Status)
	assert.False(t, s.Now().Before(start.Add(150*time.Minute)), "an hour and a half more")

	r = ctl(t, s, "POST", "/clock/advance", `{"seconds":0.5}`)
	require.Equal(t, 200, r.Status)

	for _, bad := range []string{`{}`, `{"seconds":-1}`, `{"duration":"-1h"}`, `{"duration":"soon"}`, `{"seconds":1,"duration":"1s"}`} {
		assert.Equal(t, 400, ctl(t, s, "POST", "/clock/advance", bad).Status, bad)
	}
	_, err = time.Parse(time.RFC3339, ctl(t, s, "GET", "/clock", "").obj(t)["now"].(string))
	assert.NoError(t, err)
}

func TestControlFaultsAndWebhooks(t *testing.T) {
	rcv := newHookReceiver(t, nil)
	s := newServer(t, cryptopaytest.WithControlAPI())
	r := ctl(t, s, "POST", "/faults", `{"route":"POST /v1/payout","fault":{"times":2,"process":true,"status":500,"delay":"1ms"}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "2", r.obj(t)["pending"].(interface{ String() string }).String())

	_, err := s.Client().CreatePayout(ctx(t), payoutParams("po-ctl"))
	assert.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
	assert.Equal(t, 1, s.PayoutsWithOrderID("po-ctl"))

	assert.Equal(t, 204, ctl(t, s, "DELETE", "/faults", "").Status)
	assert.Equal(t, 0, s.PendingFaults(cryptopaytest.RouteCreatePayout))

	for _, bad := range []string{
		`{"route":"POST /v9/x","fault":{}}`,
		`{"route":"POST /v1/payout","fault":{"delay":"x"}}`,
		`{"route":"POST /v1/payout","fault":{"status":1000}}`,
		`{"route":"POST /v1/payout","fault":{"times":-1}}`,
		`{"route":"POST /v1/payout","fault":{"stauts":500}}`,
	} {
		assert.Equal(t, 400, ctl(t, s, "POST", "/faults", bad).Status, bad)
	}

	id := createPayment(t, s, `{"amount":1,"platformFeeByUser":false,"currency":"eth","network":"eth",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","webhookUrl":"`+rcv.URL+`"}`)
	require.NoError(t, s.SetPaymentStatus(id, cryptopay.PaymentLocked))
	require.NoError(t, s.WaitWebhooksIdle(ctx(t)))
	list := ctl(t, s, "GET", "/webhooks", "").arr(t)
	require.Len(t, list, 1)
	assert.Equal(t, "payment", list[0]["kind"])
	assert.Equal(t, id, list[0]["objectId"])
	assert.Equal(t, "locked", list[0]["status"])
	assert.Equal(t, true, list[0]["delivered"])
	assert.Equal(t, "locked", list[0]["body"].(map[string]any)["status"], "the body is embedded as JSON")
}

func TestControlHandlerStandalone(t *testing.T) {
	s := newServer(t)
	hs := httptest.NewServer(s.ControlHandler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/_control/clock")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	// Without WithControlAPI the API listener does not serve it.
	assert.Equal(t, 404, call(t, s, "GET", "/_control/clock", "").Status)
}

func TestControlRefusesBrowsers(t *testing.T) {
	s := newServer(t, cryptopaytest.WithControlAPI())
	r := call(t, s, "GET", "/_control/state", "", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, r.Status)
	r = call(t, s, "GET", "/_control/state", "", "Host", "rebound.example:8080")
	assert.Equal(t, http.StatusForbidden, r.Status)
	r = call(t, s, "GET", "/_control/state", "", "Host", "localhost:8080")
	assert.Equal(t, http.StatusOK, r.Status)
}
