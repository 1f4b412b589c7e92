package cryptopaytest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

var creationPaymentKeys = sorted("paymentId", "status", "payAmount", "payAddress", "payQrCodeUri", "currency",
	"network", "customerId", "customerIp", "orderId", "platformFeeByUser", "createdAt", "updatedAt",
	"expiredAt")

// payoutKeys are a payout's keys when it was created without a webhookUrl
// (which is then left out: the spec types it as a uri, and "" is none).
var payoutKeys = sorted("payoutId", "status", "amount", "walletAddress", "networkFeeByUser", "currency", "network",
	"customerId", "customerIp", "orderId", "createdAt", "updatedAt")

func TestCreatePaymentWire(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newServer(t, cryptopaytest.WithStartTime(start))
	r := call(t, s, "POST", "/v1/payment", paymentBody)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.NotEmpty(t, r.Header.Get("X-Request-Id"))

	m := r.obj(t)
	assert.Equal(t, creationPaymentKeys, keys(m),
		"creation response carries exactly the spec's creation fields, less the webhookUrl that was not sent")
	_, err := uuid.Parse(m["paymentId"].(string))
	assert.NoError(t, err)
	assert.Equal(t, "waiting", m["status"])
	assert.True(t, num(t, m, "payAmount").Equal(dec("10.1")), "10 + 1%% fee borne by the user")
	assert.Equal(t, "usdt", m["currency"])
	assert.Equal(t, "tron", m["network"])
	assert.Equal(t, "cust-1", m["customerId"])
	assert.Equal(t, "203.0.113.7", m["customerIp"])
	assert.Equal(t, "order-1", m["orderId"])
	assert.Equal(t, true, m["platformFeeByUser"])
	addr := m["payAddress"].(string)
	assert.True(t, strings.HasPrefix(addr, "T"), addr)
	assert.Equal(t, "tron:"+addr+"?amount=10.1", m["payQrCodeUri"])

	created, err := time.Parse(time.RFC3339, m["createdAt"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(m["createdAt"].(string), "Z"), "UTC")
	// Ordered on the server's clock, with no allowance for a slow machine.
	assert.False(t, created.Before(start), "created on the server's clock, which started at start")
	assert.False(t, created.After(s.Now()), "created before now")
	expired, err := time.Parse(time.RFC3339, m["expiredAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, cryptopaytest.DefaultPaymentTTL, expired.Sub(created))
	assert.Equal(t, m["createdAt"], m["updatedAt"])
}

func TestCreatePaymentAmounts(t *testing.T) {
	s := newServer(t, cryptopaytest.WithFeePercent(dec("2.5")))
	tests := []struct {
		name, amount string
		feeByUser    bool
		payAmount    string
	}{
		{"small number", `0.1`, false, "0.1"},
		{"exponent", `1e-8`, false, "0.00000001"},
		{"thirty digits", `123456789012345678.901234567891`, false, "123456789012345678.901234567891"},
		{"string amount", `"12.5"`, false, "12.5"},
		{"fee on 0.1", `0.1`, true, "0.1025"},
		{"fee on big", `1000000000000.000000001`, true, "1025000000000.000000001025"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"amount":%s,"platformFeeByUser":%t,"currency":"eth","network":"eth",
				"customerId":"c","customerIp":"::1","orderId":"o"}`, tt.amount, tt.feeByUser)
			r := call(t, s, "POST", "/v1/payment", body)
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
			m := r.obj(t)
			assert.True(t, num(t, m, "payAmount").Equal(dec(tt.payAmount)), "payAmount %v", m["payAmount"])
			assert.NotContains(t, string(r.Body), `"payAmount":"`, "amounts are JSON numbers")
			assert.True(t, strings.HasPrefix(m["payAddress"].(string), "0x"))
			assert.Contains(t, m["payQrCodeUri"], "ethereum:")
		})
	}
}

func TestCreatePaymentOptionalFields(t *testing.T) {
	s := newServer(t)
	r := call(t, s, "POST", "/v1/payment", `{"amount":1,"platformFeeByUser":false,"currency":"btc","network":"bitcoin",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","additionalData":"note","webhookUrl":"http://127.0.0.1:1/hook",
		"someFutureField":{"x":1}}`)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	m := r.obj(t)
	assert.Equal(t, "note", m["additionalData"])
	assert.Equal(t, "http://127.0.0.1:1/hook", m["webhookUrl"])
	assert.True(t, strings.HasPrefix(m["payAddress"].(string), "bc1q"))
	assert.True(t, strings.HasPrefix(m["payQrCodeUri"].(string), "bitcoin:"))
}

func TestGetPaymentWire(t *testing.T) {
	statusKeys := sorted(append(creationPaymentKeys, "paidAmount", "merchantAmount", "paidAddress")...)
	zero := func(t *testing.T, m map[string]any) {
		assert.True(t, num(t, m, "paidAmount").IsZero())
		assert.True(t, num(t, m, "merchantAmount").IsZero())
		assert.Equal(t, "", m["paidAddress"])
	}
	tests := []struct {
		name     string
		opts     []cryptopaytest.ServerOption
		wantKeys []string
		check    func(t *testing.T, m map[string]any)
	}{
		{"default: zero, schema-valid", nil, statusKeys, zero},
		{"null", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidNull)}, statusKeys,
			func(t *testing.T, m map[string]any) {
				assert.Nil(t, m["paidAmount"])
				assert.Nil(t, m["merchantAmount"])
				assert.Nil(t, m["paidAddress"])
			}},
		{"omit", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidOmit)}, creationPaymentKeys,
			func(*testing.T, map[string]any) {}},
		{"zero", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidZero)}, statusKeys, zero},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts...)
			id := createPayment(t, s, paymentBody)
			r := call(t, s, "GET", "/v1/payment/"+id+"/status", "")
			require.Equal(t, http.StatusOK, r.Status)
			m := r.obj(t)
			assert.Equal(t, tt.wantKeys, keys(m))
			tt.check(t, m)

			require.NoError(t, s.Pay(id, dec("10.1")))
			m = call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
			assert.Equal(t, statusKeys, keys(m), "after payment the status-only fields are always there")
			assert.Equal(t, "paid", m["status"])
			assert.True(t, num(t, m, "paidAmount").Equal(dec("10.1")))
			assert.True(t, num(t, m, "merchantAmount").Equal(dec("10")))
			assert.NotEqual(t, m["payAddress"], m["paidAddress"], "paidAddress is the sender's address")
			assert.NotEmpty(t, m["paidAddress"])
		})
	}
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
	s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("100000")))
	for i := range cryptopaytest.MaxListLimit + 5 {
		createPayout(t, s, strings.Replace(payoutBody, `"po-1"`, fmt.Sprintf(`"po-%d"`, i), 1))
	}
	m := call(t, s, "GET", "/v1/payout/list?limit=500", "").obj(t)
	assert.Len(t, m["payout"].([]any), cryptopaytest.MaxListLimit)
	assert.Equal(t, fmt.Sprint(cryptopaytest.MaxListLimit+5), m["count"].(fmt.Stringer).String())
}

func TestEmptyListWire(t *testing.T) {
	s := newServer(t)
	r := call(t, s, "GET", "/v1/payout/list", "")
	assert.JSONEq(t, `{"payout":[],"count":0}`, string(r.Body))
}

func TestBalanceAndCurrenciesWire(t *testing.T) {
	s := newServer(t,
		cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"}, cryptopaytest.Currency{Currency: "btc", Network: "bitcoin"}),
		cryptopaytest.WithBalance("btc", "bitcoin", dec("0.00000001")))
	r := call(t, s, "GET", "/v1/balance", "")
	require.Equal(t, http.StatusOK, r.Status)
	assert.JSONEq(t, `[{"currency":"usdt","network":"tron","amount":1000},{"currency":"btc","network":"bitcoin","amount":0.00000001}]`, string(r.Body))
	assert.Contains(t, string(r.Body), `"amount":0.00000001`, "exact JSON number")

	r = call(t, s, "GET", "/v1/currencies", "")
	require.Equal(t, http.StatusOK, r.Status)
	assert.JSONEq(t, `[{"currency":"usdt","network":"tron"},{"currency":"btc","network":"bitcoin"}]`, string(r.Body))
}

func TestAuth(t *testing.T) {
	s := newServer(t, cryptopaytest.WithAPIKey("sk_test_right"))
	pid := createPayment(t, s, paymentBody)
	paths := []struct{ method, path, body string }{
		{"POST", "/v1/payment", paymentBody},
		{"GET", "/v1/payment/" + pid + "/status", ""},
		{"POST", "/v1/payout", payoutBody},
		{"GET", "/v1/payout/x/status", ""},
		{"GET", "/v1/payout/list", ""},
		{"GET", "/v1/balance", ""},
		{"GET", "/v1/currencies", ""},
	}
	for _, p := range paths {
		for _, key := range []string{"", "sk_test_wrong", "sk_test_righ", "SK_TEST_RIGHT"} {
			t.Run(p.method+p.path+"/"+key, func(t *testing.T) {
				hdr := []string{"x-api-key", key}
				r := call(t, s, p.method, p.path, p.body, hdr...)
				require.Equal(t, http.StatusUnauthorized, r.Status)
				m := r.obj(t)
				assert.Equal(t, "unauthorized", m["code"])
				assert.NotEmpty(t, m["message"])
				assert.NotContains(t, string(r.Body), "sk_test_right")
			})
		}
	}
	assert.Equal(t, 1, s.PaymentCount(), "nothing created without the key")
	assert.Equal(t, 0, s.PayoutCount())
}

func TestValidation(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name, path, body string
		code             string
		msg              string
	}{
		{"payment not an object", "/v1/payment", `[1]`, "invalid_request", "JSON object"},
		{"payment bad json", "/v1/payment", `{"amount":`, "invalid_request", "JSON object"},
		{"payment trailing data", "/v1/payment", paymentBody + `{}`, "invalid_request", "JSON object"},
		{"payment amount missing", "/v1/payment", strings.Replace(paymentBody, `"amount":10,`, ``, 1), "invalid_request", "amount is required"},
		{"payment amount zero", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":0`, 1), "invalid_request", "greater than 0"},
		{"payment amount negative", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":-1`, 1), "invalid_request", "greater than 0"},
		{"payment amount text", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":"ten"`, 1), "invalid_request", "decimal number"},
		{"payment amount bool", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":true`, 1), "invalid_request", "decimal number"},
		{"payment amount null", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":null`, 1), "invalid_request", "amount is required"},
		{"payment amount huge exponent", "/v1/payment", strings.Replace(paymentBody, `"amount":10`, `"amount":1e-999`, 1), "invalid_request", "out of range"},
		{"payment fee flag missing", "/v1/payment", strings.Replace(paymentBody, `"platformFeeByUser":true,`, ``, 1), "invalid_request", "platformFeeByUser is required"},
		{"payment fee flag text", "/v1/payment", strings.Replace(paymentBody, `"platformFeeByUser":true`, `"platformFeeByUser":"yes"`, 1), "invalid_request", "boolean"},
		{"payment currency empty", "/v1/payment", strings.Replace(paymentBody, `"currency":"usdt"`, `"currency":""`, 1), "invalid_request", "currency must not be empty"},
		{"payment customerId empty", "/v1/payment", strings.Replace(paymentBody, `"customerId":"cust-1"`, `"customerId":""`, 1), "invalid_request", "customerId must not be empty"},
		{"payment customerIp missing", "/v1/payment", strings.Replace(paymentBody, `"customerIp":"203.0.113.7",`, ``, 1), "invalid_request", "customerIp is required"},
		{"payment wrong-case key", "/v1/payment", strings.Replace(paymentBody, `"customerIp"`, `"CustomerIP"`, 1), "invalid_request", `found "CustomerIP"`},
		{"payment orderId missing", "/v1/payment", strings.Replace(paymentBody, `,"orderId":"order-1"`, ``, 1), "invalid_request", "orderId is required"},
		{"payment unsupported pair", "/v1/payment", strings.Replace(paymentBody, `"network":"tron"`, `"network":"bitcoin"`, 1), "unsupported_currency", "not supported"},
		{"payment case-sensitive currency", "/v1/payment", strings.Replace(paymentBody, `"currency":"usdt"`, `"currency":"USDT"`, 1), "unsupported_currency", "not supported"},
		{"payment bad webhook", "/v1/payment", strings.Replace(paymentBody, `"orderId":"order-1"`, `"orderId":"o","webhookUrl":"not a url"`, 1), "invalid_request", "webhookUrl"},
		{"payout wallet missing", "/v1/payout", strings.Replace(payoutBody, `"walletAddress":"TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G",`, ``, 1), "invalid_request", "walletAddress is required"},
		{"payout orderId empty", "/v1/payout", strings.Replace(payoutBody, `"orderId":"po-1"`, `"orderId":""`, 1), "invalid_request", "orderId must not be empty"},
		{"payout customerIp empty", "/v1/payout", strings.Replace(payoutBody, `"customerIp":"203.0.113.7"`, `"customerIp":""`, 1), "invalid_request", "customerIp must not be empty"},
		{"payout amount zero", "/v1/payout", strings.Replace(payoutBody, `"amount":25`, `"amount":0`, 1), "invalid_request", "greater than 0"},
		{"payout unsupported", "/v1/payout", strings.Replace(payoutBody, `"currency":"usdt"`, `"currency":"doge"`, 1), "unsupported_currency", "not supported"},
		{"payout insufficient", "/v1/payout", strings.Replace(payoutBody, `"amount":25`, `"amount":1000.01`, 1), "insufficient_funds", "balance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, s, "POST", tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
			m := r.obj(t)
			assert.Equal(t, tt.code, m["code"])
			assert.Contains(t, m["message"], tt.msg)
		})
	}
	assert.Equal(t, 0, s.PaymentCount())
	assert.Equal(t, 0, s.PayoutCount())
	assert.True(t, s.Balance("usdt", "tron").Equal(cryptopaytest.DefaultBalance()), "a refused payout takes nothing")
}

func TestTrailingDataRefused(t *testing.T) {
	// Guard for the table above: a second JSON value after the object is
	// not a valid body.
	s := newServer(t)
	r := call(t, s, "POST", "/v1/payment", paymentBody+` x`)
	assert.Equal(t, http.StatusBadRequest, r.Status)
}

func TestBodyLimitAndMediaType(t *testing.T) {
	s := newServer(t, cryptopaytest.WithMaxBodyBytes(256))
	big := strings.Replace(paymentBody, `"orderId":"order-1"`, `"orderId":"`+strings.Repeat("x", 300)+`"`, 1)
	r := call(t, s, "POST", "/v1/payment", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.Status)
	assert.Equal(t, "payload_too_large", r.obj(t)["code"])

	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		r = call(t, s, "POST", "/v1/payment", paymentBody, "Content-Type", ct)
		assert.Equal(t, http.StatusUnsupportedMediaType, r.Status, "Content-Type %q", ct)
		assert.Equal(t, "unsupported_media_type", r.obj(t)["code"])
	}
	r = call(t, s, "POST", "/v1/payment", paymentBody, "Content-Type", "application/json; charset=utf-8")
	assert.Equal(t, http.StatusCreated, r.Status)
}

func TestNotFoundAndMethods(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/payment/" + uuid.NewString() + "/status", 404, "not_found"},
		{"GET", "/v1/payout/nope/status", 404, "not_found"},
		{"GET", "/v1/nothing", 404, "not_found"},
		{"GET", "/v1/payment/", 404, "not_found"},
		{"GET", "/v1/payment/a/b/status", 404, "not_found"},
		{"GET", "/v1/payment", 405, "method_not_allowed"},
		{"DELETE", "/v1/payout/x/status", 405, "method_not_allowed"},
		{"POST", "/v1/balance", 405, "method_not_allowed"},
		{"PUT", "/v1/currencies", 405, "method_not_allowed"},
		{"POST", "/v1/payout/list", 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := call(t, s, tt.method, tt.path, "")
			require.Equal(t, tt.status, r.Status, "%s", r.Body)
			m := r.obj(t)
			assert.Equal(t, tt.code, m["code"])
			assert.NotEmpty(t, m["message"])
			assert.NotEmpty(t, r.Header.Get("X-Request-Id"))
			if tt.status == 405 {
				assert.NotEmpty(t, r.Header.Get("Allow"))
			}
		})
	}
}

func TestRequestIDsAndCounts(t *testing.T) {
	s := newServer(t)
	seen := map[string]bool{}
	for range 3 {
		r := call(t, s, "GET", "/v1/balance", "")
		id := r.Header.Get("X-Request-Id")
		assert.False(t, seen[id], "request ids are unique")
		seen[id] = true
	}
	call(t, s, "GET", "/v1/balance", "", "x-api-key", "")
	call(t, s, "GET", "/v1/currencies", "")
	assert.Equal(t, 4, s.Requests(cryptopaytest.RouteBalance), "refused requests count too")
	assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCurrencies))
	assert.Equal(t, 0, s.Requests(cryptopaytest.RouteCreatePayout))
	assert.Equal(t, 0, s.Requests("GET /nope"))
	assert.GreaterOrEqual(t, s.ConnectionsOpened(), int64(1))
	assert.Len(t, cryptopaytest.Routes(), 7)
}

func TestHandlerInProcess(t *testing.T) {
	s := newServer(t)
	h := s.Handler()
	req, _ := http.NewRequest("GET", "/v1/currencies", nil)
	req.Header.Set("x-api-key", s.APIKey)
	rec := newRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.code)
	assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCurrencies))
}

// recorder is a minimal ResponseWriter (httptest's is not needed here).
type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func newRecorder() *recorder                    { return &recorder{h: http.Header{}, code: 200} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(c int)           { r.code = c }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// TestAPIRefusesRebinding: the API refuses a request for a host name that
// is not loopback, as a DNS-rebinding page's would be, on s.URL and through
// Handler; the SDK's own requests (Host 127.0.0.1:port) and in-process
// requests without a host are served.
func TestAPIRefusesRebinding(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name, host string
		refused    bool
	}{
		{"rebinding name", "rebind.evil.example:" + s.URL[strings.LastIndex(s.URL, ":")+1:], true},
		{"rebinding name without port", "evil.example", true},
		{"numeric non-loopback", "192.0.2.1", true},
		{"loopback", "", false},
		{"localhost", "LOCALHOST:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", s.URL+"/v1/payment", strings.NewReader(paymentBody))
			require.NoError(t, err)
			if tt.host != "" {
				req.Host = tt.host
			}
			req.Header.Set("x-api-key", s.APIKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.refused, resp.StatusCode == http.StatusForbidden, resp.Status)

			in, err := http.NewRequest("GET", "/v1/balance", nil)
			require.NoError(t, err)
			in.Host = tt.host
			in.Header.Set("x-api-key", s.APIKey)
			rec := newRecorder()
			s.Handler().ServeHTTP(rec, in)
			assert.Equal(t, tt.refused, rec.code == http.StatusForbidden, "through Handler: %d", rec.code)
		})
	}
	assert.Equal(t, 2, s.PaymentCount(), "only the loopback requests created a payment")
}
