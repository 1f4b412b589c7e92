package cryptopay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specField is one request field as the interface document gives it.
type specField struct {
	typ      string // "string", "number", "boolean"
	required bool
	minLen   int
}

// The request bodies of the spec, transcribed from interface.md (not from
// the SDK's structs).
var specRequests = map[string]map[string]specField{
	"POST /v1/payment": {
		"amount": {"number", true, 0}, "platformFeeByUser": {"boolean", true, 0}, "currency": {"string", true, 1},
		"network": {"string", true, 0}, "customerId": {"string", true, 1}, "customerIp": {"string", true, 1},
		"orderId": {"string", true, 0}, "additionalData": {"string", false, 0}, "webhookUrl": {"string", false, 0},
	},
	"POST /v1/payout": {
		"walletAddress": {"string", false, 0}, "networkFeeByUser": {"boolean", false, 0}, "amount": {"number", false, 0},
		"currency": {"string", false, 0}, "network": {"string", false, 0}, "customerId": {"string", false, 1},
		"customerIp": {"string", false, 1}, "orderId": {"string", false, 1}, "additionalData": {"string", false, 0},
		"webhookUrl": {"string", false, 0},
	},
}

// checkAgainstSpec is the independent mock's request check.
func checkAgainstSpec(route string, body []byte) error {
	fields, ok := specRequests[route]
	if !ok {
		if len(body) != 0 {
			return fmt.Errorf("%s takes no body", route)
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	for k, v := range m {
		f, ok := fields[k]
		if !ok {
			return fmt.Errorf("field %q is not in the spec", k)
		}
		switch v := v.(type) {
		case string:
			if f.typ != "string" {
				return fmt.Errorf("%s: string, spec says %s", k, f.typ)
			}
			if len(v) < f.minLen {
				return fmt.Errorf("%s: shorter than %d", k, f.minLen)
			}
		case json.Number:
			if f.typ != "number" {
				return fmt.Errorf("%s: number, spec says %s", k, f.typ)
			}
			if k == "amount" && !decimal.RequireFromString(v.String()).IsPositive() {
				return fmt.Errorf("amount must be > 0")
			}
		case bool:
			if f.typ != "boolean" {
				return fmt.Errorf("%s: boolean, spec says %s", k, f.typ)
			}
		default:
			return fmt.Errorf("%s: unexpected JSON type %T", k, v)
		}
	}
	for k, f := range fields {
		if _, ok := m[k]; f.required && !ok {
			return fmt.Errorf("required field %q missing", k)
		}
	}
	return nil
}

func TestRequestsConformToSpec(t *testing.T) {
	c, mt := setupMock(t)
	var violations []string
	routeOf := func(r *http.Request) string {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/v1/payment/") && strings.HasSuffix(p, "/status"):
			p = "/v1/payment/{id}/status"
		case strings.HasPrefix(p, "/v1/payout/") && strings.HasSuffix(p, "/status"):
			p = "/v1/payout/{id}/status"
		}
		return r.Method + " " + p
	}
	responses := map[string]string{
		"POST /v1/payment": paymentCreated, "GET /v1/payment/{id}/status": paymentStatus,
		"POST /v1/payout": payoutBody, "GET /v1/payout/{id}/status": payoutBody,
		"GET /v1/payout/list": `{"payout":[],"count":0}`, "GET /v1/balance": `[]`, "GET /v1/currencies": `[]`,
	}
	mt.RegisterNoResponder(func(r *http.Request) (*http.Response, error) {
		route := routeOf(r)
		var body []byte
		if r.Body != nil {
			body, _ = readAll(r)
		}
		if r.Header.Get("X-Api-Key") == "" {
			violations = append(violations, route+": no x-api-key")
		}
		if len(body) > 0 && r.Header.Get("Content-Type") != "application/json" {
			violations = append(violations, route+": body without Content-Type application/json")
		}
		if err := checkAgainstSpec(route, body); err != nil {
			violations = append(violations, route+": "+err.Error())
		}
		resp, ok := responses[route]
		if !ok {
			violations = append(violations, "unknown route "+route)
			return httpmock.NewStringResponse(404, ``), nil
		}
		return httpmock.NewStringResponse(200, resp), nil
	})
	ctx := context.Background()
	amounts := []string{"0.1", "0.00000001", "1", "123456789.123456789", "123456789012345678901234567890"}
	for i, a := range amounts {
		// eth on eth has 18 decimal places: room for every amount here.
		pp := validPaymentParams()
		pp.Amount, pp.Currency, pp.Network = decimal.RequireFromString(a), "eth", "eth"
		pp.PlatformFeeByUser = i%2 == 0
		if i%2 == 1 {
			pp.AdditionalData, pp.WebhookURL = "x", "https://shop.test/h"
		}
		_, err := c.CreatePayment(ctx, pp)
		require.NoError(t, err)
		po := validPayoutParams()
		po.Amount, po.Currency, po.Network = pp.Amount, "eth", "eth"
		po.WalletAddress = "0xde709f2102306220921060314715629080e2fb77"
		po.AdditionalData = pp.AdditionalData
		_, err = c.CreatePayout(ctx, po)
		require.NoError(t, err)
	}
	_, err := c.GetPayment(ctx, paymentID)
	require.NoError(t, err)
	_, err = c.GetPayout(ctx, "po_77")
	require.NoError(t, err)
	_, err = c.ListPayouts(ctx, ListPayoutsParams{Limit: 5, Offset: 5})
	require.NoError(t, err)
	_, err = c.GetBalances(ctx)
	require.NoError(t, err)
	_, err = c.ListCurrencies(ctx)
	require.NoError(t, err)
	assert.Empty(t, violations)
}

// TestSchemaValidResponsesDecode generates responses that the spec allows
// (numbers in every JSON form, optional and status-only fields present or
// absent, unknown extra fields) and checks each decodes to the same values.
func TestSchemaValidResponsesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	numberForms := func(d decimal.Decimal) []string {
		s := d.String()
		return []string{s, `"` + s + `"`, d.Coefficient().String() + "e" + fmt.Sprint(d.Exponent())}
	}
	for i := range 300 {
		amount := decimal.New(rng.Int64N(1_000_000_000_000)+1, -int32(rng.IntN(19)))
		forms := numberForms(amount)
		form := forms[i%len(forms)]
		fields := map[string]string{
			"paymentId": `"` + paymentID + `"`, "status": `"waiting"`, "payAmount": form, "payAddress": `"0xabc"`,
			"payQrCodeUri": `"ethereum:0xabc"`, "currency": `"usdt"`, "network": `"erc20"`, "customerId": `"c"`,
			"customerIp": `"i"`, "orderId": `"o"`, "platformFeeByUser": `false`, "createdAt": `"2026-11-22T10:00:00Z"`,
			"updatedAt": `"2026-11-22T10:00:00Z"`, "expiredAt": `"2026-11-22T10:30:00Z"`, "webhookUrl": `"https://x.test/h"`,
		}
		if rng.IntN(2) == 0 {
			fields["additionalData"] = `"extra"`
		}
		withPaid := rng.IntN(2) == 0
		if withPaid {
			fields["paidAmount"], fields["merchantAmount"], fields["paidAddress"] = form, form, `"0xfeed"`
		}
		fields["someFutureField"] = `{"nested":[1,2,3]}`
		var parts []string
		for k, v := range fields {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
		doc := "{" + strings.Join(parts, ",") + "}"
		var p Payment
		require.NoError(t, json.Unmarshal([]byte(doc), &p), doc)
		require.Empty(t, p.check())
		require.True(t, p.PayAmount.Equal(amount), "%s from %s", p.PayAmount, form)
		require.Equal(t, withPaid, p.PaidAmount.Valid)
		if withPaid {
			require.True(t, p.MerchantAmount.Decimal.Equal(amount))
		}
	}
}
