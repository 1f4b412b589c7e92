package cryptopay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/jarcoal/httpmock"
	"github.com/shopspring/decimal"
)

// Decoder fuzz targets for the payout, payout-list and balance shapes, the
// payout-list search and payout ids (FuzzPaymentJSON in fuzz_test.go covers
// payments, FuzzResponse the whole request path, FuzzDecodeAmount in
// internal/wire the bounded amount decoder). Seeds live in testdata/fuzz/<Name>/; run them all with
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
// GET /v1/payout/list and looks an orderId up through ReconcilePayout,
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
		item, found, err := findPayout(c, context.Background(), order)
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

// FuzzPayoutSearch serves three arbitrary 200 bodies as the pages of the
// payout list, in the order they are asked for (then an empty page), and
// runs both lookups. They must never panic, never return an untyped
// error, and never answer "not found" / PayoutNotCreated when a page they
// were served lists the orderId: that answer tells the caller resending is
// safe.
func FuzzPayoutSearch(f *testing.F) {
	item := func(order, at string) string {
		return `{"status":"paid","amount":1,"orderId":"` + order + `","createdAt":"` + at + `"}`
	}
	f.Add([]byte(`{"payout":[`+item("a", "2026-01-01T00:00:00Z")+`,`+item("b", "2026-01-01T00:00:01Z")+`],"count":4}`),
		[]byte(`{"payout":[`+item("c", "2026-01-01T00:00:02Z")+`,`+item("wd-1", "2026-01-01T00:00:03Z")+`],"count":4}`), []byte(`{"payout":[],"count":4}`))
	f.Add([]byte(`{"payout":[`+item("b", "2026-01-01T00:00:01Z")+`],"count":3}`),
		[]byte(`{"payout":[`+item("b", "2026-01-01T00:00:01Z")+`],"count":3}`), []byte(`{"payout":[],"count":3}`))
	f.Add([]byte(`{"payout":[`+item("x", "")+`],"count":1}`), []byte(`{"payout":[`+item("wd-1", "")+`],"count":1}`), []byte(`null`))
	f.Add([]byte(`{"payout":[`+item("x", "2026-01-01T00:00:05Z")+`,`+item("y", "2026-01-01T00:00:01Z")+`]}`),
		[]byte(`{"payout":[`+item("wd-1", "2026-01-01T00:00:00Z")+`]}`), []byte(`{"payout":[]}`))
	f.Add([]byte(`{"count":0}`), []byte(`{"payout":[`+item("wd-1", "2026-01-01T00:00:00Z")+`],"count":1}`), []byte(``))
	f.Fuzz(func(t *testing.T, p0, p1, p2 []byte) {
		const order = "wd-1"
		pages := [][]byte{p0, p1, p2}
		lists := func(n int) bool { // whether any of the first n pages served lists the order
			for _, p := range pages[:min(n, len(pages))] {
				var w wirePayoutPage
				if json.Unmarshal(p, &w) == nil {
					for _, it := range w.Payout {
						if it.OrderID == order {
							return true
						}
					}
				}
			}
			return false
		}
		var calls atomic.Int32
		mt := httpmock.NewMockTransport()
		mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) {
			if n := int(calls.Add(1)); n <= len(pages) {
				return httpmock.NewBytesResponse(200, pages[n-1]), nil
			}
			return httpmock.NewStringResponse(200, `{"payout":[]}`), nil
		})
		c, err := NewClient(testBase, testKey, WithHTTPClient(&http.Client{Transport: mt}), WithRetryPolicy(RetryPolicy{}))
		if err != nil {
			t.Fatal(err)
		}
		item, found, err := findPayout(c, context.Background(), order)
		switch {
		case err != nil:
			var respErr *ResponseError
			if !errors.As(err, &respErr) || found || item != nil {
				t.Fatalf("untyped error or an error with a result: %v %v", err, found)
			}
		case found && (item == nil || item.OrderID != order):
			t.Fatalf("found the wrong item %+v", item)
		case !found && lists(int(calls.Load())):
			t.Fatalf("not found after %d pages, but one lists %q", calls.Load(), order)
		}
		calls.Store(0)
		res, err := c.ReconcilePayout(context.Background(), ReconcileParams{OrderID: order, AttemptedAt: time.Now().Add(-time.Minute)})
		switch {
		case res == nil:
			t.Fatalf("no result: %v", err)
		case err != nil && res.Verdict != PayoutStillUnknown:
			t.Fatalf("an error with verdict %s", res.Verdict)
		case res.Verdict == PayoutNotCreated && lists(int(calls.Load())):
			t.Fatalf("not created after %d pages, but one lists %q", calls.Load(), order)
		case res.Requests != int(calls.Load()):
			t.Fatalf("counted %d requests, made %d", res.Requests, calls.Load())
		}
	})
}

// FuzzPayoutID: an id GetPayout accepts travels as exactly one path
// segment that unescapes to the id; one it refuses gets a ValidationError
// and is one of empty, ".", "..", over 256 bytes, or holds a control
// character.
func FuzzPayoutID(f *testing.F) {
	for _, id := range []string{"po_77", "consectetur culpa eu", "../balance", "..", ".", "", "a/b", "x?limit=1", "a#b", "%2e%2e", "a\nb", "po_ü+1", "\u0085", "a\x7fb", "\xff"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := validatePayoutID(id)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("untyped error %v", err)
			}
			if id != "" && id != "." && id != ".." && len(id) <= 256 && !strings.ContainsFunc(id, unicode.IsControl) {
				t.Fatalf("refused %q: %v", id, err)
			}
			return
		}
		seg := url.PathEscape(id)
		u, perr := url.Parse("https://api.test" + getPayout.path + seg + "/status")
		if perr != nil {
			t.Fatalf("%q does not make a URL: %v", id, perr)
		}
		parts := strings.Split(u.EscapedPath(), "/")
		if len(parts) != 5 || parts[3] != seg || parts[4] != "status" || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%q leaves its segment: %s", id, u.String())
		}
		if back, _ := url.PathUnescape(parts[3]); back != id {
			t.Fatalf("%q comes back as %q", id, back)
		}
	})
}
