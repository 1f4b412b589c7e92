package cryptopay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/shopspring/decimal"
)

// Decoder fuzz targets for the payout, payout-list and balance shapes
// (FuzzPaymentJSON in fuzz_test.go covers payments, FuzzResponse the whole
// request path). Seeds live in testdata/fuzz/<Name>/; run them all with
// scripts/fuzz.sh.

// FuzzPayoutJSON: a payout body never panics the decoder, and what decodes
// survives a round trip through its own JSON with the same identity and
// exact amounts.
func FuzzPayoutJSON(f *testing.F) {
	f.Add([]byte(payoutBody))
	f.Add([]byte(`{"payoutId":"po_1","status":"paid","amount":"0.1","paidAmount":0.0995,"merchantAmount":null}`))
	f.Add([]byte(`{"payoutId":"po_1","status":"created","amount":1e-8,"paidAmount":"","createdAt":"2026-01-02 03:04:05"}`))
	f.Add([]byte(`{"amount":123456789012345678901234567890.123456789}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Payout
		if json.Unmarshal(data, &p) != nil {
			return
		}
		_ = p.check()
		out, err := json.Marshal(p)
		if err != nil {
			return // a timestamp Go cannot write (year > 9999): not the SDK's wire
		}
		var q Payout
		if err := json.Unmarshal(out, &q); err != nil {
			t.Fatalf("decode own output %s: %v", out, err)
		}
		if p.ID != q.ID || p.Status != q.Status || p.OrderID != q.OrderID {
			t.Fatalf("identity changed in round trip: %+v -> %+v", p, q)
		}
		if !p.Amount.Equal(q.Amount) ||
			p.PaidAmount.Valid != q.PaidAmount.Valid || !p.PaidAmount.Decimal.Equal(q.PaidAmount.Decimal) ||
			p.MerchantAmount.Valid != q.MerchantAmount.Valid || !p.MerchantAmount.Decimal.Equal(q.MerchantAmount.Decimal) {
			t.Fatalf("amount changed in round trip: %+v -> %+v", p, q)
		}
	})
}

// FuzzPayoutListJSON serves an arbitrary 200 body as the first page of
// GET /v1/payout/list and looks an orderId up through FindPayoutByOrderID,
// the way out of ErrOutcomeUnknown. It must never panic, never return an
// untyped error, and never say "not found" for a body that lists the
// orderId: that answer tells the caller resending is safe.
func FuzzPayoutListJSON(f *testing.F) {
	f.Add([]byte(`{"payout":[{"status":"paid","amount":1,"orderId":"wd-1","payCurrency":{"name":"usdt"}}],"count":1}`))
	f.Add([]byte(`{"payout":[{"orderId":"other"},{"orderId":"wd-1","amount":"1e-8"}],"count":"2"}`))
	f.Add([]byte(`{"payout":[],"count":0}`))
	f.Add([]byte(`{"count":0}`))
	f.Add([]byte(`{"payout":null,"count":7}`))
	f.Add([]byte(`{"unexpected":"shape"}`))
	f.Add([]byte(`{"payout":[{"orderId":"wd-1"}],"count":-5}`))
	f.Add([]byte(`{"payout":[{"orderId":"wd-1"}],"count":1e30}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		const order = "wd-1"
		var calls atomic.Int32
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				return httpmock.NewBytesResponse(200, body), nil
			}
			return httpmock.NewStringResponse(200, `{"payout":[],"count":0}`), nil
		})
		c, err := NewClient(testBase, testKey, WithHTTPClient(&http.Client{Transport: mt}), WithRetryPolicy(RetryPolicy{}))
		if err != nil {
			t.Fatal(err)
		}
		item, found, err := c.FindPayoutByOrderID(context.Background(), order)
		if err != nil {
			var respErr *ResponseError
			if !errors.As(err, &respErr) {
				t.Fatalf("untyped error: %v", err)
			}
			if found || item != nil {
				t.Fatal("an error with a result")
			}
			return
		}
		if found {
			if item == nil || item.OrderID != order {
				t.Fatalf("found the wrong item %+v", item)
			}
			return
		}
		// Not found: the first page must really not list the order.
		var w wirePayoutPage
		if json.Unmarshal(body, &w) == nil {
			for _, it := range w.Payout {
				if it.OrderID == order {
					t.Fatalf("reported not found, but the page lists %q: %s", order, body)
				}
			}
		}
		page, err := c.ListPayouts(context.Background(), ListPayoutsParams{})
		if err == nil && page.Payouts == nil {
			t.Fatal("nil page slice")
		}
	})
}

// FuzzBalanceJSON: a balance list never panics the decoder, and every
// amount that decodes is exact: it prints and parses back to itself.
func FuzzBalanceJSON(f *testing.F) {
	f.Add([]byte(`[{"currency":"usdt","network":"tron","amount":1000.5}]`))
	f.Add([]byte(`[{"currency":"btc","network":"bitcoin","amount":"0.00000001"},{"currency":"eth","network":"eth","amount":123456789.123456789012}]`))
	f.Add([]byte(`[{"amount":""},{"amount":null},{}]`))
	f.Add([]byte(`[{"amount":"NaN"}]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"currency":"usdt"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var bs []Balance
		if json.Unmarshal(data, &bs) != nil {
			return
		}
		for _, b := range bs {
			s := b.Amount.String()
			d, err := decimal.NewFromString(s)
			if err != nil || !d.Equal(b.Amount) {
				t.Fatalf("amount %s does not parse back: %v", s, err)
			}
			if strings.ContainsAny(s, "eE") {
				t.Fatalf("amount printed in exponent form: %s", s)
			}
		}
	})
}
