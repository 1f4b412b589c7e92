package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

// FuzzWebhookHandler posts arbitrary methods, query strings and bodies to a
// handler without a Client (the callback then sees the body). It must never
// panic, answer only the documented codes, and call a callback only for a
// request whose single token is the HMAC of the orderId the callback gets.
func FuzzWebhookHandler(f *testing.F) {
	tok := func(order string) string {
		return "token=" + base64.RawURLEncoding.EncodeToString(webhookToken(whSecret, order))
	}
	payment := waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	payout := waitPayoutJSON(waitPayoutID, "paid", whOrder)
	seeds := []struct {
		method, query, body string
	}{
		{"POST", tok(whOrder), payment},
		{"POST", tok(whOrder), payout},
		{"POST", tok(whOrder) + "&" + tok(whOrder), payment},
		{"POST", tok("order-2"), payment},
		{"POST", "", payment},
		{"GET", tok(whOrder), ""},
		{"POST", tok(whOrder), `{"paymentId":"` + waitPaymentID + `","PAYMENTID":"` + paymentID + `","orderId":"order-1","status":"paid"}`},
		{"POST", tok(whOrder), `{"paymentId":"` + waitPaymentID + `","orderId":"order-1","orderid":"order-2","status":"paid"}`},
		{"POST", tok(whOrder), `{"paymentId":"` + waitPaymentID + `","orderId":"order-1","ſtatus":"paid","status":"waiting"}`},
		{"POST", tok(whOrder), `{"payoutId":"x","paymentId":null,"orderId":"order-1","status":"paid"}`},
		{"POST", tok(""), `{"payoutId":"x","orderId":"","status":"paid"}`},
		{"POST", tok(whOrder), `{"payoutId":"x","orderId":"order-1","status":"paid","amount":1e999999}`},
		{"POST", tok(whOrder), "\xef\xbb\xbf" + payment},
		{"POST", "token=%zz", payment},
	}
	for _, s := range seeds {
		f.Add(s.method, s.query, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, query string, body []byte) {
		if !validMethod(method) {
			method = http.MethodPost
		}
		var called []string // orderIds the callbacks saw
		h, err := NewHandler(Config{
			Secret: whSecret,
			OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
				called = append(called, p.OrderID)
				return nil
			},
			OnPayout: func(_ context.Context, p *cryptopay.Payout) error {
				called = append(called, p.OrderID)
				return nil
			},
			MaxBodyBytes: 4 << 10,
			Logger:       slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(method, "/hook", bytes.NewReader(body))
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		switch w.Code {
		case 200, 400, 401, 405, 413, 503:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
		if len(called) == 0 {
			return
		}
		if len(called) > 1 || w.Code != 200 {
			t.Fatalf("callback called %d times with status %d", len(called), w.Code)
		}
		tokens := r.URL.Query()["token"]
		if method != http.MethodPost || len(tokens) != 1 || called[0] == "" {
			t.Fatalf("callback called for an unauthenticated request: method %q, %d tokens, orderId %q", method, len(tokens), called[0])
		}
		got, err := base64.RawURLEncoding.DecodeString(tokens[0])
		if err != nil || !hmac.Equal(got, webhookToken(whSecret, called[0])) {
			t.Fatalf("callback got orderId %q, which the token does not sign", called[0])
		}
	})
}

func validMethod(m string) bool {
	if m == "" || len(m) > 16 {
		return false
	}
	return !strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' })
}

// FuzzScanEvent checks the handler's first pass against encoding/json: it
// accepts exactly the JSON objects encoding/json accepts (up to its depth
// limit), and the orderId, id and status it finds in an unambiguous body are
// the ones encoding/json decodes, so the token is checked against what the
// callback later sees.
func FuzzScanEvent(f *testing.F) {
	for _, s := range []string{
		waitPaymentJSON(waitPaymentID, "paid", whOrder, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		waitPayoutJSON(waitPayoutID, "paid", whOrder),
		`{"orderId":"a","ORDERID":"b"}`,
		`{"order\u0049d":"x","ſtatus":"s","paymentId":null}`,
		`{"orderId":"\ud800\u00e9","a":[{"b":-0.0e+1}],"c":true}`,
		"{\"orderId\":\"\xff\"}",
		`{"orderId":1}`,
		`[{"orderId":"x"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, err := scanEvent(body)
		valid := json.Valid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		if err == nil && !valid {
			t.Fatalf("scanEvent accepts what encoding/json refuses: %q", body)
		}
		if err != nil {
			if valid && bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) <= maxEventDepth {
				t.Fatalf("scanEvent refuses a valid object: %q", body)
			}
			return
		}
		if fields.ambiguous {
			return
		}
		var decoded struct {
			PaymentID any `json:"paymentId"`
			PayoutID  any `json:"payoutId"`
			OrderID   any `json:"orderId"`
			Status    any `json:"status"`
		}
		if err := json.Unmarshal(body, &decoded); err != nil {
			t.Fatalf("encoding/json refuses a body it validated: %v", err)
		}
		for _, m := range []struct {
			name string
			raw  []byte
			got  any
		}{{"paymentId", fields.paymentID, decoded.PaymentID}, {"payoutId", fields.payoutID, decoded.PayoutID},
			{"orderId", fields.orderID, decoded.OrderID}, {"status", fields.status, decoded.Status}} {
			s, isString := jsonString(m.raw)
			want, wantString := m.got.(string)
			if isString != wantString || s != want {
				t.Fatalf("%s: scan found %q (string %v), encoding/json decoded %#v", m.name, s, isString, m.got)
			}
		}
	})
}
