package dashboard_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cmd/internal/dashboard"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// fixture is a fake with a dashboard served on its own loopback server.
type fixture struct {
	srv    *cryptopaytest.Server
	client *cryptopay.Client
	web    *httptest.Server // the dashboard
}

func setup(t *testing.T) *fixture {
	t.Helper()
	srv := cryptopaytest.NewServer(cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"}),
		cryptopaytest.WithBalance("usdt", "tron", decimal.RequireFromString("500")))
	t.Cleanup(srv.Close)
	web := httptest.NewServer(dashboard.Handler(srv))
	t.Cleanup(web.Close)
	return &fixture{srv: srv, client: srv.Client(), web: web}
}

func (f *fixture) payment(t *testing.T, amount, orderID string) *cryptopay.Payment {
	t.Helper()
	p, err := f.client.CreatePayment(context.Background(), cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString(amount), PlatformFeeByUser: true, Currency: "usdt", Network: "tron",
		CustomerID: "cust-1", CustomerIP: "192.0.2.10", OrderID: orderID})
	require.NoError(t, err)
	return p
}

func (f *fixture) payout(t *testing.T, amount, orderID string) *cryptopay.Payout {
	t.Helper()
	p, err := f.client.CreatePayout(context.Background(), cryptopay.CreatePayoutParams{
		WalletAddress: "TW5B1QoMDS7JVGQfWqpDyUd9jAEenek5NM", Amount: decimal.RequireFromString(amount),
		Currency: "usdt", Network: "tron", CustomerID: "cust-2", CustomerIP: "192.0.2.11", OrderID: orderID})
	require.NoError(t, err)
	return p
}

type answer struct {
	status int
	header http.Header
	body   string
}

// do sends a request to the dashboard; hdr is name, value pairs ("Host"
// sets the Host header).
func (f *fixture) do(t *testing.T, method, path, body string, hdr ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.web.URL+path, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.web.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// action posts body to an action path the way the dashboard page does.
func (f *fixture) action(t *testing.T, path, body string) answer {
	t.Helper()
	return f.do(t, http.MethodPost, path, body, "Origin", f.web.URL, "Content-Type", "application/json")
}

func TestPageShowsState(t *testing.T) {
	f := setup(t)
	p := f.payment(t, "0.1", "order-page-1")
	paid := f.payment(t, "20", "order-page-2")
	require.NoError(t, f.srv.Pay(paid.ID, decimal.RequireFromString("5.05")))
	po := f.payout(t, "12.5", "order-page-3")

	for _, path := range []string{"/", "/dashboard/panel"} {
		a := f.do(t, http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, a.status, path)
		assert.Equal(t, "text/html; charset=utf-8", a.header.Get("Content-Type"))
		assert.Contains(t, a.header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		assert.Equal(t, "DENY", a.header.Get("X-Frame-Options"))
		assert.Contains(t, a.body, `id="payment-`+p.ID+`"`)
		assert.Contains(t, a.body, "0.101", "payAmount 0.1 plus the 1% fee, exactly")
		assert.Contains(t, a.body, `src="dashboard/qr/`+p.ID+`"`)
		assert.Contains(t, a.body, "order-page-2")
		assert.Contains(t, a.body, `data-status="paid_partial"`)
		assert.Contains(t, a.body, "5.05")
		assert.Contains(t, a.body, `id="payout-`+po.ID+`"`)
		assert.Contains(t, a.body, "12.5")
		assert.Contains(t, a.body, "492.2875", "500 + 4.85 to the merchant - 12.5625 for the payout and its 0.5% network fee")
		assert.NotContains(t, a.body, "#ZgotmplZ", "no value was refused by the template escaper")
	}
	page := f.do(t, http.MethodGet, "/", "")
	assert.Contains(t, page.body, `<script src="dashboard/static/app.js" defer></script>`)
	assert.NotContains(t, page.body, "<script>", "no inline script: the CSP forbids it")
}

func TestStaticAndNotFound(t *testing.T) {
	f := setup(t)
	tests := []struct {
		path, ctype string
		status      int
	}{
		{"/dashboard/static/app.js", "text/javascript; charset=utf-8", 200},
		{"/dashboard/static/style.css", "text/css; charset=utf-8", 200},
		{"/dashboard/static/page.html", "", 404},
		{"/dashboard/static/..%2ftemplates%2fpage.html", "", 404},
		{"/dashboard/qr/no-such-payment", "", 404},
		{"/nothing/here", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			a := f.do(t, http.MethodGet, tt.path, "")
			assert.Equal(t, tt.status, a.status)
			if tt.ctype != "" {
				assert.Equal(t, tt.ctype, a.header.Get("Content-Type"))
			}
		})
	}
}

// decodeQR reads the text of the QR code in a PNG.
func decodeQR(t *testing.T, pngBytes []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pngBytes))
	require.NoError(t, err)
	return decodeQRImage(t, img)
}

func decodeQRImage(t *testing.T, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	require.NoError(t, err)
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	require.NoError(t, err)
	return res.GetText()
}

func TestQRCodeIsThePaymentURI(t *testing.T) {
	f := setup(t)
	p := f.payment(t, "123456789.123456", "order-qr")
	a := f.do(t, http.MethodGet, "/dashboard/qr/"+p.ID, "")
	require.Equal(t, http.StatusOK, a.status)
	assert.Equal(t, "image/png", a.header.Get("Content-Type"))
	assert.Equal(t, p.PayQRCodeURI, decodeQR(t, []byte(a.body)))
	assert.Contains(t, p.PayQRCodeURI, "?amount="+p.PayAmount.String(), "the exact amount with the fee")
	assert.Equal(t, "124691357.01469056", p.PayAmount.String())
}

func TestActions(t *testing.T) {
	tests := []struct {
		name   string
		path   func(pay, out string) string
		body   string
		status int
		check  func(t *testing.T, f *fixture, pay, out string)
	}{
		{"pay in full", payPath, `{"how":"full"}`, 200, paymentIs(cryptopay.PaymentPaid, "10.1")},
		{"pay part", payPath, `{"how":"part"}`, 200, paymentIs(cryptopay.PaymentPaidPartial, "5.05")},
		{"overpay", payPath, `{"how":"over"}`, 200, paymentIs(cryptopay.PaymentPaidOver, "11.11")},
		{"pay how unknown", payPath, `{"how":"twice"}`, 400, paymentIs(cryptopay.PaymentWaiting, "")},
		{"pay unknown payment", func(string, string) string { return "/dashboard/payments/nope/pay" }, `{"how":"full"}`, 404, nil},
		{"pay unknown key", payPath, `{"how":"full","amount":"1"}`, 400, paymentIs(cryptopay.PaymentWaiting, "")},
		{"pay two objects", payPath, `{"how":"full"}{"how":"full"}`, 400, paymentIs(cryptopay.PaymentWaiting, "")},
		{"pay huge body", payPath, `{"how":"` + strings.Repeat("x", 5000) + `"}`, 413, paymentIs(cryptopay.PaymentWaiting, "")},
		{"expire", func(p, _ string) string { return "/dashboard/payments/" + p + "/expire" }, ``, 200, paymentIs(cryptopay.PaymentExpired, "")},
		{"payout processing", payoutPath, `{"status":"processing"}`, 200, payoutIs(cryptopay.PayoutProcessing)},
		{"payout move not allowed", payoutPath, `{"status":"confirming"}`, 409, payoutIs(cryptopay.PayoutCreated)},
		{"payout bad status", payoutPath, `{"status":"sent"}`, 400, payoutIs(cryptopay.PayoutCreated)},
		{"advance", fixed("/dashboard/clock/advance"), `{"duration":"2h"}`, 200, func(t *testing.T, f *fixture, _, _ string) {
			// The server's clock is real time plus what was advanced: read
			// after time.Now, it is two hours on, however slow the machine
			// (1 ms covers the two readings the fake took at its start).
			realNow := time.Now()
			assert.False(t, f.srv.Now().Before(realNow.Add(2*time.Hour-time.Millisecond)), "two hours on")
		}},
		{"advance zero", fixed("/dashboard/clock/advance"), `{"duration":"0s"}`, 400, nil},
		{"advance garbage", fixed("/dashboard/clock/advance"), `{"duration":"soon"}`, 400, nil},
		{"fault", fixed("/dashboard/faults"), `{"route":"POST /v1/payout","preset":"processed-drop","times":2}`, 200,
			func(t *testing.T, f *fixture, _, _ string) {
				assert.Equal(t, 2, f.srv.PendingFaults(cryptopaytest.RouteCreatePayout))
			}},
		{"fault unknown route", fixed("/dashboard/faults"), `{"route":"GET /v1/nothing","preset":"500","times":1}`, 400, nil},
		{"fault unknown preset", fixed("/dashboard/faults"), `{"route":"GET /v1/balance","preset":"fire","times":1}`, 400, nil},
		{"fault times 0", fixed("/dashboard/faults"), `{"route":"GET /v1/balance","preset":"500","times":0}`, 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			pay := f.payment(t, "10", "order-act-1")
			out := f.payout(t, "10", "order-act-2")
			a := f.action(t, tt.path(pay.ID, out.ID), tt.body)
			assert.Equal(t, tt.status, a.status, a.body)
			assert.Equal(t, "application/json", a.header.Get("Content-Type"))
			if tt.status == 200 {
				assert.Contains(t, a.body, `"message"`)
			} else {
				assert.Contains(t, a.body, `"error"`)
			}
			if tt.check != nil {
				tt.check(t, f, pay.ID, out.ID)
			}
		})
	}
}

func payPath(pay, _ string) string    { return "/dashboard/payments/" + pay + "/pay" }
func payoutPath(_, out string) string { return "/dashboard/payouts/" + out + "/status" }
func fixed(p string) func(string, string) string {
	return func(string, string) string { return p }
}

func paymentIs(st cryptopay.PaymentStatus, paid string) func(*testing.T, *fixture, string, string) {
	return func(t *testing.T, f *fixture, pay, _ string) {
		p, err := f.client.GetPayment(context.Background(), pay)
		require.NoError(t, err)
		assert.Equal(t, st, p.Status)
		if paid == "" {
			assert.False(t, p.PaidAmount.Valid && p.PaidAmount.Decimal.IsPositive(), "nothing paid")
			return
		}
		assert.Equal(t, paid, p.PaidAmount.Decimal.String())
	}
}

func payoutIs(st cryptopay.PayoutStatus) func(*testing.T, *fixture, string, string) {
	return func(t *testing.T, f *fixture, _, out string) {
		p, err := f.client.GetPayout(context.Background(), out)
		require.NoError(t, err)
		assert.Equal(t, st, p.Status)
	}
}

func TestActionsSequence(t *testing.T) {
	f := setup(t)
	pay := f.payment(t, "10", "order-seq")
	require.Equal(t, 200, f.action(t, payPath(pay.ID, ""), `{"how":"part"}`).status)
	require.Equal(t, 200, f.action(t, payPath(pay.ID, ""), `{"how":"full"}`).status, "pays the rest")
	paymentIs(cryptopay.PaymentPaid, "10.1")(t, f, pay.ID, "")
	a := f.action(t, payPath(pay.ID, ""), `{"how":"full"}`)
	assert.Equal(t, http.StatusConflict, a.status, "already paid in full")
	assert.Equal(t, http.StatusConflict, f.action(t, "/dashboard/payments/"+pay.ID+"/expire", "").status)

	f.srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Times: 3})
	require.Equal(t, 200, f.action(t, "/dashboard/faults/clear", `{}`).status)
	assert.Zero(t, f.srv.PendingFaults(cryptopaytest.RouteBalance))
}

// TestPayInFullTwiceAtOnce: two quick clicks must not pay twice.
func TestPayInFullTwiceAtOnce(t *testing.T) {
	f := setup(t)
	pay := f.payment(t, "10", "order-race")
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for range 8 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, f.web.URL+payPath(pay.ID, ""), strings.NewReader(`{"how":"full"}`))
			req.Header.Set("Origin", f.web.URL)
			req.Header.Set("Content-Type", "application/json")
			resp, err := f.web.Client().Do(req)
			if err != nil {
				codes <- 0
				return
			}
			_ = resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		if c == http.StatusOK {
			ok++
		} else {
			assert.Equal(t, http.StatusConflict, c)
		}
	}
	assert.Equal(t, 1, ok)
	paymentIs(cryptopay.PaymentPaid, "10.1")(t, f, pay.ID, "")
}

// TestForeignRequestsRefused: a web page the developer visits, a DNS
// rebinding attack or a script without the dashboard's Origin cannot drive
// the dashboard, and a foreign Host cannot even read it.
func TestForeignRequestsRefused(t *testing.T) {
	f := setup(t)
	pay := f.payment(t, "10", "order-foreign")
	own := f.web.URL
	_, port, _ := strings.Cut(strings.TrimPrefix(own, "http://"), ":")
	tests := []struct {
		name   string
		method string
		hdr    []string
		status int
	}{
		{"no Origin", "POST", []string{"Content-Type", "application/json"}, 403},
		{"foreign Origin", "POST", []string{"Origin", "http://evil.example", "Content-Type", "application/json"}, 403},
		{"other loopback port", "POST", []string{"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"}, 403},
		{"https look-alike", "POST", []string{"Origin", "https://127.0.0.1:" + port, "Content-Type", "application/json"}, 403},
		{"null Origin", "POST", []string{"Origin", "null", "Content-Type", "application/json"}, 403},
		{"DNS rebinding", "POST", []string{"Host", "evil.example:" + port, "Origin", "http://evil.example:" + port, "Content-Type", "application/json"}, 403},
		{"cross-site fetch", "POST", []string{"Origin", own, "Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}, 403},
		{"form post", "POST", []string{"Origin", own, "Content-Type", "text/plain"}, 415},
		{"read with foreign Host", "GET", []string{"Host", "evil.example"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := payPath(pay.ID, "")
			if tt.method == "GET" {
				path = "/"
			}
			a := f.do(t, tt.method, path, `{"how":"full"}`, tt.hdr...)
			assert.Equal(t, tt.status, a.status, a.body)
			assert.NotContains(t, a.body, pay.ID, "nothing of the state leaks")
		})
	}
	paymentIs(cryptopay.PaymentWaiting, "")(t, f, pay.ID, "")
	assert.Empty(t, f.srv.Webhooks())

	a := f.action(t, payPath(pay.ID, ""), `{"how":"full"}`)
	assert.Equal(t, http.StatusOK, a.status, "the dashboard's own origin is accepted: %s", a.body)
	a = f.do(t, "POST", payPath(pay.ID, ""), `{"how":"over"}`, "Host", "localhost:"+port, "Origin", "http://localhost:"+port,
		"Content-Type", "application/json; charset=utf-8", "Sec-Fetch-Site", "same-origin")
	assert.Equal(t, http.StatusOK, a.status, "localhost works as well: %s", a.body)
}
