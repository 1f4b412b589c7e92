package cryptopay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

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

// serveJSON answers status with body, records the request in seen (if not
// nil) and counts it in hits (if not nil).
func serveJSON(status int, body string, seen *capturedRequest, hits *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen.capture(r)
		}
		if hits != nil {
			hits.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func validPaymentParams() CreatePaymentParams {
	return CreatePaymentParams{Amount: decimal.NewFromInt(10), Currency: "usdt", Network: "tron",
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "order-1"}
}

func TestCreatePaymentRequestAndDecode(t *testing.T) {
	c, mux := setup(t, WithHeader("User-Agent", "shop/1.2"))
	var seen capturedRequest
	mux.HandleFunc("POST /v1/payment", serveJSON(201, paymentCreated, &seen, nil))

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
	c, mux := setup(t)
	var seen capturedRequest
	mux.HandleFunc("POST /v1/payment", serveJSON(201, paymentCreated, &seen, nil))
	_, err := c.CreatePayment(context.Background(), CreatePaymentParams{
		Amount: decimal.NewFromInt(1), Currency: "btc", CustomerID: "c", CustomerIP: "i", OrderID: "order-1",
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
	c, mux := setup(t)
	var seen capturedRequest
	mux.HandleFunc("GET /v1/payment/{id}/status", serveJSON(200, paymentStatus, &seen, nil))
	p, err := c.GetPayment(context.Background(), paymentID)
	require.NoError(t, err)
	assert.Equal(t, http.MethodGet, seen.Method)
	assert.Equal(t, "/v1/payment/"+paymentID+"/status", seen.Path)
	assert.Empty(t, seen.Header.Get("Content-Type"), "a GET has no body")
	assert.Equal(t, PaymentPaid, p.Status)
	require.True(t, p.PaidAmount.Valid)
	assert.Equal(t, "101.505", p.PaidAmount.Decimal.String())
	require.True(t, p.MerchantAmount.Valid, "a zero merchantAmount is present, not absent")
	assert.True(t, p.MerchantAmount.Decimal.IsZero())
	assert.Equal(t, "0xfeed", p.PaidAddress)
}

// TestPaymentDecodeEveryField: every field of the wire form reaches the
// Payment, through the embedded alias and through the shadowing decoders.
func TestPaymentDecodeEveryField(t *testing.T) {
	var p Payment
	require.NoError(t, json.Unmarshal([]byte(paymentCreated), &p))
	want := Payment{ID: paymentID, Status: PaymentWaiting, PayAddress: "0xabc", PayQRCodeURI: "ethereum:0xabc?value=101.505",
		Currency: "usdt", Network: "erc20", CustomerID: "cus_1", CustomerIP: "203.0.113.7", OrderID: "order-1",
		AdditionalData: "note", PlatformFeeByUser: true, WebhookURL: "https://shop.test/hook?token=x"}
	got := p
	got.PayAmount, got.CreatedAt, got.UpdatedAt, got.ExpiredAt = decimal.Decimal{}, want.CreatedAt, want.UpdatedAt, want.ExpiredAt
	assert.Equal(t, want, got)
	assert.Equal(t, "101.505", p.PayAmount.String())
	assert.Equal(t, "2026-11-22T10:00:00Z", p.CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
}

func TestPaymentParamsValidate(t *testing.T) {
	bad := "wd-\xff\xfe-42"
	tests := []struct {
		name   string
		mutate func(*CreatePaymentParams)
		field  string
	}{
		{"zero amount", func(p *CreatePaymentParams) { p.Amount = decimal.Zero }, "Amount"},
		{"negative amount", func(p *CreatePaymentParams) { p.Amount = decimal.NewFromInt(-1) }, "Amount"},
		{"no currency", func(p *CreatePaymentParams) { p.Currency = "" }, "Currency"},
		{"no customer id", func(p *CreatePaymentParams) { p.CustomerID = "" }, "CustomerID"},
		{"no customer ip", func(p *CreatePaymentParams) { p.CustomerIP = "" }, "CustomerIP"},
		{"no order id", func(p *CreatePaymentParams) { p.OrderID = "" }, "OrderID"},
		{"orderId not UTF-8", func(p *CreatePaymentParams) { p.OrderID = bad }, "OrderID"},
		{"currency not UTF-8", func(p *CreatePaymentParams) { p.Currency = bad }, "Currency"},
		{"network not UTF-8", func(p *CreatePaymentParams) { p.Network = bad }, "Network"},
		{"customer id not UTF-8", func(p *CreatePaymentParams) { p.CustomerID = bad }, "CustomerID"},
		{"customer ip not UTF-8", func(p *CreatePaymentParams) { p.CustomerIP = bad }, "CustomerIP"},
		{"additional data not UTF-8", func(p *CreatePaymentParams) { p.AdditionalData = bad }, "AdditionalData"},
		{"webhook url not UTF-8", func(p *CreatePaymentParams) { p.WebhookURL = "https://shop.test/h?o=" + bad }, "WebhookURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var hits atomic.Int32
			mux.HandleFunc("/", serveJSON(201, paymentCreated, nil, &hits))
			p := validPaymentParams()
			tt.mutate(&p)
			_, err := c.CreatePayment(context.Background(), p)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Equal(t, tt.field, ve.Field)
			assert.Zero(t, hits.Load(), "nothing may be sent")
		})
	}
	t.Run("valid text passes", func(t *testing.T) {
		p := validPaymentParams()
		p.OrderID, p.AdditionalData = "заказ-42 ✓", "\ufffd is a valid rune"
		assert.NoError(t, p.Validate())
	})
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
		{`{"paidAmount":` + strings.Repeat("9", 128) + `}`, true, strings.Repeat("9", 128), false},
		{`{"paidAmount":` + strings.Repeat("9", 129) + `}`, false, "0", true},
		{`{"paidAmount":"1e9999"}`, false, "0", true},
		{`{"paidAmount":1e-999999999}`, false, "0", true},
		{`{"paidAmount":1e128}`, true, "1e128", false},
	}
	for _, tt := range tests {
		t.Run(tt.json[:min(len(tt.json), 40)], func(t *testing.T) {
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
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payment/{id}/status", serveJSON(200, `{"paymentId":"`+paymentID+`","status":"refunded","payAmount":1}`, nil, nil))
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
		{"million-digit amount", `{"paymentId":"` + paymentID + `","status":"paid","payAmount":1` + strings.Repeat("0", 1_000_000) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t, WithMaxResponseBytes(2<<20))
			var hits atomic.Int32
			mux.HandleFunc("GET /v1/payment/{id}/status", serveJSON(200, tt.body, nil, &hits))
			mux.HandleFunc("POST /v1/payment", serveJSON(201, tt.body, nil, nil))
			_, err := c.GetPayment(context.Background(), paymentID)
			var re *ResponseError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Equal(t, 200, re.StatusCode)
			assert.Equal(t, int32(1), hits.Load(), "a well-delivered wrong shape is not retried")

			// The same body after a create means the server said yes: outcome unknown.
			_, err = c.CreatePayment(context.Background(), validPaymentParams())
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Contains(t, err.Error(), `"order-1"`)
		})
	}
}

// TestPaymentIDs: a payment id must be a UUID (the API issues only
// those); anything else is refused before sending.
func TestPaymentIDs(t *testing.T) {
	c, mux := setup(t)
	var hits atomic.Int32
	mux.HandleFunc("/", serveJSON(200, paymentStatus, nil, &hits))
	for _, id := range []string{"", "12345", strings.ReplaceAll(paymentID, "-", ""), "../../v1/payout/list?x=3f1c2b8a-6d4e", "consectetur culpa eu", paymentID + " "} {
		_, err := c.GetPayment(context.Background(), id)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%q", id)
		assert.Equal(t, "id", ve.Field)
	}
	assert.Zero(t, hits.Load())
}

// TestWirePaymentHasPaymentsFields: wirePayment declares Payment's fields
// flat (see its comment), and a response with every field set reaches
// every field of the Payment.
func TestWirePaymentHasPaymentsFields(t *testing.T) {
	assertWireMirrors[Payment, wirePayment](t, `{"paymentId":"6f1c2a4e-8b9d-4e3f-a1b2-c3d4e5f60718","status":"paid","payAmount":"1.5",`+
		`"payAddress":"a","payQrCodeUri":"q","currency":"usdt","network":"tron","customerId":"c","customerIp":"i","orderId":"o",`+
		`"additionalData":"d","platformFeeByUser":true,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:06Z",`+
		`"expiredAt":"2026-01-02T03:04:07Z","webhookUrl":"w","paidAmount":1,"merchantAmount":2,"paidAddress":"p"}`)
}
