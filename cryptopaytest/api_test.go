package cryptopaytest_test

import (
	"net/http"
	"strings"
	"testing"

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
