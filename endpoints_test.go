package cryptopay

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const paymentID = "3f1c2b8a-6d4e-4f7a-9b2c-1e5d8a7f6c30"

// paymentCreated is a creation response with every required field.
const paymentCreated = `{
 "paymentId": "3f1c2b8a-6d4e-4f7a-9b2c-1e5d8a7f6c30", "status": "waiting",
 "payAmount": 101.505, "payAddress": "0xabc", "payQrCodeUri": "ethereum:0xabc?value=101.505",
 "currency": "usdt", "network": "erc20", "customerId": "cus_1", "customerIp": "203.0.113.7",
 "orderId": "order-1", "additionalData": "note", "platformFeeByUser": true,
 "createdAt": "2026-11-22T10:00:00Z", "updatedAt": "2026-11-22T10:00:00.123Z",
 "expiredAt": "2026-11-22T10:30:00+00:00", "webhookUrl": "https://shop.test/hook?token=x"}`

// paymentStatus is a status response with status-only fields, amounts as strings.
const paymentStatus = `{
 "paymentId": "3f1c2b8a-6d4e-4f7a-9b2c-1e5d8a7f6c30", "status": "paid",
 "payAmount": "101.505", "payAddress": "0xabc", "payQrCodeUri": "ethereum:0xabc?value=101.505",
 "currency": "usdt", "network": "erc20", "customerId": "cus_1", "customerIp": "203.0.113.7",
 "orderId": "order-1", "platformFeeByUser": true,
 "createdAt": "2026-11-22T10:00:00Z", "updatedAt": "2026-11-22T10:05:00Z",
 "expiredAt": "2026-11-22T10:30:00Z", "webhookUrl": "",
 "paidAmount": "101.505", "merchantAmount": 0, "paidAddress": "0xfeed"}`

const payoutBody = `{
 "payoutId": "po_77", "status": "created", "amount": 0.00000001, "walletAddress": "TXyz",
 "networkFeeByUser": false, "currency": "usdt", "network": "tron", "customerId": "cus_9",
 "customerIp": "198.51.100.4", "orderId": "wd-1", "createdAt": "2026-11-22T10:00:00Z",
 "updatedAt": "2026-11-22T10:00:00Z", "webhookUrl": "https://shop.test/po"}`

func TestCreatePaymentRequestAndDecode(t *testing.T) {
	c, mt := setupMock(t, WithUserAgent("shop/1.2"))
	var seen capturedRequest
	mt.RegisterResponder(http.MethodPost, testBase+"/v1/payment", jsonResponder(201, paymentCreated, &seen))

	p, err := c.CreatePayment(context.Background(), CreatePaymentParams{
		Amount: decimal.RequireFromString("100.5"), PlatformFeeByUser: true, Currency: "usdt", Network: "erc20",
		CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-1", AdditionalData: "note",
		WebhookURL: "https://shop.test/hook?token=x",
	})
	require.NoError(t, err)

	assert.Equal(t, "/v1/payment", seen.Path)
	assert.Equal(t, testKey, seen.Header.Get("X-Api-Key"))
	assert.Equal(t, "application/json", seen.Header.Get("Content-Type"))
	assert.Equal(t, "application/json", seen.Header.Get("Accept"))
	assert.Regexp(t, `^shop/1\.2 cryptopay-go/`+Version+` \(go`, seen.Header.Get("User-Agent"))
	assert.JSONEq(t, `{"amount":100.5,"platformFeeByUser":true,"currency":"usdt","network":"erc20",
		"customerId":"cus_1","customerIp":"203.0.113.7","orderId":"order-1","additionalData":"note",
		"webhookUrl":"https://shop.test/hook?token=x"}`, string(seen.Body))
	assert.Contains(t, string(seen.Body), `"amount":100.5,`, "amount must be a bare JSON number")

	assert.Equal(t, paymentID, p.ID)
	assert.Equal(t, PaymentWaiting, p.Status)
	assert.True(t, p.PayAmount.Equal(decimal.RequireFromString("101.505")))
	assert.Equal(t, "ethereum:0xabc?value=101.505", p.PayQRCodeURI)
	assert.Equal(t, "203.0.113.7", p.CustomerIP)
	assert.Equal(t, "note", p.AdditionalData)
	assert.Equal(t, 123_000_000, p.UpdatedAt.Nanosecond())
	assert.Equal(t, 30, p.ExpiredAt.Minute())
	assert.False(t, p.PaidAmount.Valid, "creation response has no paidAmount: absent, not zero")
	assert.False(t, p.MerchantAmount.Valid)
}

func TestOptionalFieldsOmitted(t *testing.T) {
	c, mt := setupMock(t)
	var seen capturedRequest
	mt.RegisterResponder(http.MethodPost, testBase+"/v1/payment", jsonResponder(201, paymentCreated, &seen))
	_, err := c.CreatePayment(context.Background(), CreatePaymentParams{
		Amount: decimal.NewFromInt(1), Currency: "btc", CustomerID: "c", CustomerIP: "i",
	})
	require.NoError(t, err)
	m := seen.bodyMap(t)
	assert.NotContains(t, m, "additionalData")
	assert.NotContains(t, m, "webhookUrl")
	for _, k := range []string{"amount", "platformFeeByUser", "currency", "network", "customerId", "customerIp", "orderId"} {
		assert.Contains(t, m, k, "required field %s must always be sent", k)
	}
}

func TestGetPaymentStatusFields(t *testing.T) {
	c, mt := setupMock(t)
	var seen capturedRequest
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/payment/"+paymentID+"/status", jsonResponder(200, paymentStatus, &seen))
	p, err := c.GetPayment(context.Background(), paymentID)
	require.NoError(t, err)
	assert.Equal(t, http.MethodGet, seen.Method)
	assert.Empty(t, seen.Header.Get("Content-Type"), "a GET has no body")
	assert.Equal(t, PaymentPaid, p.Status)
	require.True(t, p.PaidAmount.Valid)
	assert.Equal(t, "101.505", p.PaidAmount.Decimal.String())
	require.True(t, p.MerchantAmount.Valid, "a zero merchantAmount is present, not absent")
	assert.True(t, p.MerchantAmount.Decimal.IsZero())
	assert.Equal(t, "0xfeed", p.PaidAddress)
}

func TestCreatePayoutRequestAndDecode(t *testing.T) {
	c, mt := setupMock(t)
	var seen capturedRequest
	mt.RegisterResponder(http.MethodPost, testBase+"/v1/payout", jsonResponder(200, payoutBody, &seen))
	p, err := c.CreatePayout(context.Background(), CreatePayoutParams{
		WalletAddress: "TXyz", Amount: decimal.RequireFromString("1e-8"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_9", CustomerIP: "198.51.100.4", OrderID: "wd-1", WebhookURL: "https://shop.test/po",
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{"walletAddress":"TXyz","networkFeeByUser":false,"amount":0.00000001,"currency":"usdt",
		"network":"tron","customerId":"cus_9","customerIp":"198.51.100.4","orderId":"wd-1",
		"webhookUrl":"https://shop.test/po"}`, string(seen.Body))
	assert.Equal(t, "po_77", p.ID)
	assert.Equal(t, PayoutCreated, p.Status)
	assert.Equal(t, "0.00000001", p.Amount.String())
	assert.False(t, p.PaidAmount.Valid)
}

func TestGetPayoutEscapesID(t *testing.T) {
	c, mt := setupMock(t)
	var seen capturedRequest
	mt.RegisterResponder(http.MethodGet, `=~^`+testBase+`/v1/payout/`, jsonResponder(200,
		`{"payoutId":"po_ü+1","status":"paid","amount":"5","paidAmount":5,"merchantAmount":"5.1"}`, &seen))
	p, err := c.GetPayout(context.Background(), "po_ü+1")
	require.NoError(t, err)
	assert.Equal(t, "/v1/payout/po_%C3%BC+1/status", seen.Path)
	assert.Equal(t, PayoutPaid, p.Status)
	assert.Equal(t, "5.1", p.MerchantAmount.Decimal.String())
}

func TestListPayoutsQueryAndDecode(t *testing.T) {
	item := `{"status":"paid","amount":"12.5","merchantAmount":12.6,"paidAddress":"T1","orderId":"o1",
		"customerId":"c1","payCurrency":{"name":"usdt"},"payNetwork":{"name":"tron"},
		"createdAt":"2026-11-22T10:00:00Z","payoutWallet":{"label":"main","address":"T9"}}`
	tests := []struct {
		name   string
		params ListPayoutsParams
		query  string
	}{
		{"zero values not sent", ListPayoutsParams{}, ""},
		{"limit only", ListPayoutsParams{Limit: 10}, "limit=10"},
		{"both", ListPayoutsParams{Limit: 10, Offset: 30}, "limit=10&offset=30"},
		{"offset only", ListPayoutsParams{Offset: 5}, "offset=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setupMock(t)
			var seen capturedRequest
			mt.RegisterResponder(http.MethodGet, `=~^`+testBase+`/v1/payout/list`, jsonResponder(200, `{"payout":[`+item+`],"count":41}`, &seen))
			page, err := c.ListPayouts(context.Background(), tt.params)
			require.NoError(t, err)
			assert.Equal(t, "/v1/payout/list", seen.Path)
			assert.Equal(t, tt.query, seen.RawQuery)
			assert.Equal(t, 41, page.Count)
			require.Len(t, page.Payouts, 1)
			it := page.Payouts[0]
			assert.Equal(t, PayoutPaid, it.Status)
			assert.Equal(t, "12.5", it.Amount.String())
			assert.Equal(t, "12.6", it.MerchantAmount.Decimal.String())
			assert.Equal(t, "usdt", it.Currency)
			assert.Equal(t, "tron", it.Network)
			assert.Equal(t, "main", it.WalletLabel)
			assert.Equal(t, "T9", it.WalletAddress)
			assert.Equal(t, "T1", it.PaidAddress)
			assert.Equal(t, "o1", it.OrderID)
			assert.Equal(t, "c1", it.CustomerID)
			assert.Equal(t, 2026, it.CreatedAt.Year())
		})
	}
}

func TestBalancesAndCurrencies(t *testing.T) {
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", jsonResponder(200,
		`[{"currency":"usdt","network":"tron","amount":123456789.123456789012},{"currency":"btc","network":"bitcoin","amount":"0.1"}]`, nil))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/currencies", jsonResponder(200,
		`[{"currency":"usdt","network":"tron"},{"currency":"eth","network":"eth"}]`, nil))
	bal, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	require.Len(t, bal, 2)
	assert.Equal(t, "123456789.123456789012", bal[0].Amount.String())
	assert.Equal(t, Balance{Currency: "btc", Network: "bitcoin", Amount: decimal.RequireFromString("0.1")}.Amount.String(), bal[1].Amount.String())
	cur, err := c.ListCurrencies(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []Currency{{"usdt", "tron"}, {"eth", "eth"}}, cur)
}

func TestEmptyArraysAreNotNil(t *testing.T) {
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/balance", jsonResponder(200, `null`, nil))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/currencies", jsonResponder(200, `[]`, nil))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/payout/list", jsonResponder(200, `{"count":0}`, nil))
	bal, err := c.GetBalances(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, bal)
	cur, err := c.ListCurrencies(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, cur)
	page, err := c.ListPayouts(context.Background(), ListPayoutsParams{})
	require.NoError(t, err)
	assert.NotNil(t, page.Payouts)
}

// TestMoneyRoundTrip checks amounts survive encode (as JSON numbers) and
// decode (from numbers and strings) exactly.
func TestMoneyRoundTrip(t *testing.T) {
	for _, s := range []string{"0.1", "0.00000001", "123456789.123456789", "123456789012345678901234567890", "12345678901234567890.1234567890", "1"} {
		t.Run(s, func(t *testing.T) {
			d := decimal.RequireFromString(s)
			body, err := CreatePaymentParams{Amount: d}.MarshalJSON()
			require.NoError(t, err)
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &raw))
			assert.Equal(t, d.String(), string(raw["amount"]), "bare number, no quotes, no exponent")

			for _, wireForm := range []string{string(raw["amount"]), `"` + string(raw["amount"]) + `"`} {
				var p Payment
				require.NoError(t, json.Unmarshal([]byte(`{"payAmount":`+wireForm+`,"paidAmount":`+wireForm+`}`), &p))
				assert.True(t, p.PayAmount.Equal(d), "%s decoded as %s", wireForm, p.PayAmount)
				assert.True(t, p.PaidAmount.Valid && p.PaidAmount.Decimal.Equal(d))
			}
		})
	}
	t.Run("exponent on the wire", func(t *testing.T) {
		var p Payout
		require.NoError(t, json.Unmarshal([]byte(`{"amount":1e-8}`), &p))
		assert.Equal(t, "0.00000001", p.Amount.String())
	})
	t.Run("decimal global untouched", func(t *testing.T) {
		assert.False(t, decimal.MarshalJSONWithoutQuotes)
	})
}

func TestAmountDecodingEdgeCases(t *testing.T) {
	tests := []struct {
		json    string
		valid   bool
		value   string
		wantErr bool
	}{
		{`{}`, false, "0", false},
		{`{"paidAmount":null}`, false, "0", false},
		{`{"paidAmount":""}`, false, "0", false},
		{`{"paidAmount":0}`, true, "0", false},
		{`{"paidAmount":"0.0"}`, true, "0", false},
		{`{"paidAmount":" 7.25 "}`, true, "7.25", false},
		{`{"paidAmount":"abc"}`, false, "0", true},
		{`{"paidAmount":true}`, false, "0", true},
		{`{"paidAmount":{}}`, false, "0", true},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var p Payment
			err := json.Unmarshal([]byte(tt.json), &p)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.valid, p.PaidAmount.Valid)
			assert.True(t, p.PaidAmount.Decimal.Equal(decimal.RequireFromString(tt.value)))
		})
	}
}

func TestLenientTimestamps(t *testing.T) {
	for in, want := range map[string]string{
		`"2026-11-22T10:00:00Z"`:        "2026-11-22T10:00:00Z",
		`"2026-11-22T10:00:00.5+02:00"`: "2026-11-22T08:00:00.5Z",
		`"2026-11-22T10:00:00"`:         "2026-11-22T10:00:00Z",
		`"2026-11-22 10:00:00"`:         "2026-11-22T10:00:00Z",
		`""`:                            "0001-01-01T00:00:00Z",
		`null`:                          "0001-01-01T00:00:00Z",
		`"yesterday"`:                   "0001-01-01T00:00:00Z",
		`12345`:                         "0001-01-01T00:00:00Z",
	} {
		var p Payment
		require.NoError(t, json.Unmarshal([]byte(`{"createdAt":`+in+`}`), &p), in)
		assert.Equal(t, want, p.CreatedAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"), in)
	}
}

func TestUnknownStatusKept(t *testing.T) {
	c, mt := setupMock(t)
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/payment/"+paymentID+"/status",
		jsonResponder(200, `{"paymentId":"`+paymentID+`","status":"refunded","payAmount":1}`, nil))
	p, err := c.GetPayment(context.Background(), paymentID)
	require.NoError(t, err)
	assert.Equal(t, PaymentStatus("refunded"), p.Status)
	assert.False(t, p.Status.IsTerminal())
	assert.False(t, p.Status.IsSuccess())
	assert.False(t, PayoutStatus("on_hold").IsTerminal())
}

func TestStatusClassification(t *testing.T) {
	payments := []struct {
		s                            PaymentStatus
		terminal, success, attention bool
	}{
		{PaymentWaiting, false, false, false},
		{PaymentConfirming, false, false, false},
		{PaymentLocked, false, false, true},
		{PaymentFailed, true, false, false},
		{PaymentRejected, true, false, false},
		{PaymentExpired, true, false, false},
		{PaymentPaid, true, true, false},
		{PaymentPaidOver, true, true, true},
		{PaymentPaidPartial, true, false, true},
	}
	for _, tt := range payments {
		assert.Equal(t, tt.terminal, tt.s.IsTerminal(), "%s terminal", tt.s)
		assert.Equal(t, tt.success, tt.s.IsSuccess(), "%s success", tt.s)
		assert.Equal(t, tt.attention, tt.s.NeedsAction(), "%s needs action", tt.s)
		assert.Equal(t, string(tt.s), tt.s.String())
	}
	payouts := []struct {
		s                            PayoutStatus
		terminal, success, attention bool
	}{
		{PayoutCreated, false, false, false},
		{PayoutReview, false, false, true},
		{PayoutProcessing, false, false, false},
		{PayoutConfirming, false, false, false},
		{PayoutPaid, true, true, false},
		{PayoutFailed, true, false, false},
		{PayoutCancelled, true, false, false},
	}
	for _, tt := range payouts {
		assert.Equal(t, tt.terminal, tt.s.IsTerminal(), "%s terminal", tt.s)
		assert.Equal(t, tt.success, tt.s.IsSuccess(), "%s success", tt.s)
		assert.Equal(t, tt.attention, tt.s.NeedsAction(), "%s needs action", tt.s)
	}
}

func TestWrongShapeResponses(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"empty body", ``},
		{"not json", `<html>ok</html>`},
		{"array for object", `[]`},
		{"missing id", `{"status":"waiting"}`},
		{"missing status", `{"paymentId":"` + paymentID + `"}`},
		{"truncated", `{"paymentId":"` + paymentID + `","sta`},
		{"bad amount", `{"paymentId":"` + paymentID + `","status":"paid","payAmount":"lots"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setupMock(t)
			mt.RegisterResponder(http.MethodGet, testBase+"/v1/payment/"+paymentID+"/status", jsonResponder(200, tt.body, nil))
			mt.RegisterResponder(http.MethodPost, testBase+"/v1/payment", jsonResponder(201, tt.body, nil))
			_, err := c.GetPayment(context.Background(), paymentID)
			var re *ResponseError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Equal(t, 200, re.StatusCode)
			assert.Equal(t, 1, mt.GetTotalCallCount(), "a well-delivered wrong shape is not retried")

			// The same body after a create means the server said yes: outcome unknown.
			_, err = c.CreatePayment(context.Background(), validPaymentParams())
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Contains(t, err.Error(), `"order-1"`)
		})
	}
}

func TestResponseTooLarge(t *testing.T) {
	c, mt := setupMock(t, WithMaxResponseBytes(64))
	mt.RegisterResponder(http.MethodGet, testBase+"/v1/currencies", jsonResponder(200,
		`[`+repeat(`{"currency":"usdt","network":"tron"},`, 10)+`{}]`, nil))
	_, err := c.ListCurrencies(context.Background())
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.Contains(t, err.Error(), "larger than 64 bytes")
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func validPaymentParams() CreatePaymentParams {
	return CreatePaymentParams{Amount: decimal.NewFromInt(10), Currency: "usdt", Network: "tron",
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "order-1"}
}

func validPayoutParams() CreatePayoutParams {
	return CreatePayoutParams{WalletAddress: "TXyz", Amount: decimal.NewFromInt(10), Currency: "usdt", Network: "tron",
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "wd-1"}
}

var _ = httpmock.NewMockTransport
