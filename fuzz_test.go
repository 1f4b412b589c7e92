package cryptopay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jarcoal/httpmock"
)

// FuzzResponse drives every endpoint's decoder through the full request path
// with an arbitrary status and body: no panic, and every failure is one of
// the SDK's typed errors.
func FuzzResponse(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
	}{
		{200, paymentStatus}, {201, paymentCreated}, {200, payoutBody},
		{200, `{"payout":[{"status":"paid","amount":"1","payCurrency":{"name":"usdt"}}],"count":1}`},
		{200, `[{"currency":"usdt","network":"tron","amount":"1e-8"}]`},
		{200, `{"paymentId":"x","status":"paid","payAmount":1e400}`},
		{200, `{"paymentId":"x","status":"paid","payAmount":"NaN"}`},
		{200, `{"paymentId":"x","status":"paid","createdAt":"9999-99-99"}`},
		{200, ``}, {200, `null`}, {200, `[]`}, {200, `{`}, {500, `<html>oops</html>`},
		{400, `{"code":{"a":1},"message":["x"]}`}, {429, `{"error":{"code":7}}`}, {404, "\xff\xfe"},
	} {
		f.Add(seed.status, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			status = 200 + (status%100+100)%100
		}
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
			return httpmock.NewBytesResponse(status, body), nil
		})
		c, err := NewClient(testBase, testKey, WithHTTPClient(&http.Client{Transport: mt}), WithRetryPolicy(RetryPolicy{}))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		check := func(err error) {
			if err == nil {
				return
			}
			var apiErr *APIError
			var respErr *ResponseError
			var unknown *OutcomeUnknownError
			if !errors.As(err, &apiErr) && !errors.As(err, &respErr) && !errors.As(err, &unknown) {
				t.Fatalf("untyped error for status %d: %v", status, err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatal("key in error")
			}
		}
		_, err = c.GetPayment(ctx, paymentID)
		check(err)
		_, err = c.GetPayout(ctx, "po_1")
		check(err)
		_, err = c.CreatePayment(ctx, validPaymentParams())
		check(err)
		_, err = c.CreatePayout(ctx, validPayoutParams())
		check(err)
		_, err = c.ListPayouts(ctx, ListPayoutsParams{})
		check(err)
		_, err = c.GetBalances(ctx)
		check(err)
		_, err = c.ListCurrencies(ctx)
		check(err)
	})
}

// FuzzErrorBody: any error body yields a one-line, bounded, valid UTF-8
// message.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"code":"c","message":"m"}`, `{"title":"T","detail":"D"}`, `{"error":"e"}`, `{"error":{"code":1,"message":"m"}}`,
		`<html><body><h1>502 Bad Gateway</h1></body></html>`, ``, `   `, "a\r\nb\x00c", `{"message":"` + strings.Repeat("é", 600) + `"}`,
		`<<<>>>`, `{"code":null,"message":null}`, "\xc3",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e := newAPIError(newScrubber(testKey), "GET", "/v1/balance", 502, http.Header{}, body)
		msg := e.Error()
		if strings.ContainsAny(e.Message, "\r\n") {
			t.Fatalf("multi-line message %q", e.Message)
		}
		if len(e.Message) > 600 || len(e.Code) > 140 {
			t.Fatalf("unbounded message (%d) or code (%d)", len(e.Message), len(e.Code))
		}
		if utf8.ValidString(string(body)) && !utf8.ValidString(msg) {
			t.Fatalf("invalid UTF-8 from valid input: %q", msg)
		}
		if e.Message == "" && e.Code == "" {
			t.Fatal("no message at all")
		}
	})
}

// FuzzPaymentJSON: decoding never panics and what decodes re-encodes and
// decodes to the same amounts.
func FuzzPaymentJSON(f *testing.F) {
	f.Add([]byte(paymentStatus))
	f.Add([]byte(paymentCreated))
	f.Add([]byte(`{"payAmount":"0.1","paidAmount":null,"merchantAmount":""}`))
	f.Add([]byte(`{"payAmount":123456789012345678901234567890.123}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Payment
		if json.Unmarshal(data, &p) != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var q Payment
		if err := json.Unmarshal(out, &q); err != nil {
			t.Fatalf("decode own output %s: %v", out, err)
		}
		if !p.PayAmount.Equal(q.PayAmount) || p.PaidAmount.Valid != q.PaidAmount.Valid || !p.PaidAmount.Decimal.Equal(q.PaidAmount.Decimal) {
			t.Fatalf("amount changed in round trip: %s -> %s", p.PayAmount, q.PayAmount)
		}
	})
}
