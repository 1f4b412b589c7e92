package cryptopaytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

var whrSecret = []byte("0123456789abcdef0123456789abcdef")

const whrBase = "https://shop.example/webhooks?shop=1"

func whrPayment() *cryptopay.Payment {
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 890e6, time.UTC)
	return &cryptopay.Payment{
		ID: "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e", Status: cryptopay.PaymentWaiting,
		PayAmount: decimal.RequireFromString("10.100000000000000000000000000001"), PayAddress: "TAddr", PayQRCodeURI: "tron:TAddr?amount=10.1",
		Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: "order-42",
		PlatformFeeByUser: true, CreatedAt: t0, UpdatedAt: t0, ExpiredAt: t0.Add(time.Hour), WebhookURL: whrBase,
	}
}

func whrPayout() *cryptopay.Payout {
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	return &cryptopay.Payout{
		ID: "po_1", Status: cryptopay.PayoutCreated, Amount: decimal.RequireFromString("0.00000001"), WalletAddress: "TCzU9T74J9S6mg4YJbhSnP4iaw1ArWR8qb",
		Currency: "usdt", Network: "tron", CustomerID: "cust-1", CustomerIP: "203.0.113.7", OrderID: "payout-order-7",
		CreatedAt: t0, UpdatedAt: t0, AdditionalData: "note",
		PaidAmount: decimal.NewNullDecimal(decimal.RequireFromString("0.00000001")),
	}
}

// whrHandler is a merchant's handler without a Client: it records what its
// callbacks received.
func whrHandler(t *testing.T, secret []byte) (*webhook.Handler, *[]string) {
	t.Helper()
	var got []string
	h, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error {
			got = append(got, "payment "+p.ID+" "+string(p.Status)+" "+p.PayAmount.String()+" "+p.OrderID)
			return nil
		},
		OnPayout: func(_ context.Context, p *cryptopay.Payout) error {
			got = append(got, "payout "+p.ID+" "+string(p.Status)+" "+p.Amount.String()+" "+p.PaidAmount.Decimal.String())
			return nil
		},
	})
	require.NoError(t, err)
	return h, &got
}

func TestNewWebhookRequestAcceptedByHandler(t *testing.T) {
	payment, payout := whrPayment(), whrPayout()
	tests := []struct {
		name     string
		build    func(secret []byte) (*http.Request, error)
		secret   []byte
		wantCode int
		wantGot  []string
	}{
		{"payment paid", func(s []byte) (*http.Request, error) {
			return cryptopaytest.NewWebhookRequest(whrBase, s, payment, cryptopay.PaymentPaid)
		}, whrSecret, 200, []string{"payment " + payment.ID + " paid 10.100000000000000000000000000001 order-42"}},
		{"payout paid", func(s []byte) (*http.Request, error) {
			return cryptopaytest.NewWebhookRequest(whrBase, s, payout, cryptopay.PayoutPaid)
		}, whrSecret, 200, []string{"payout po_1 paid 0.00000001 0.00000001"}},
		{"payment, wrong secret", func([]byte) (*http.Request, error) {
			return cryptopaytest.NewWebhookRequest(whrBase, []byte("another-secret-of-32-bytes-00000"), payment, cryptopay.PaymentPaid)
		}, whrSecret, 401, nil},
		{"payout, wrong secret", func([]byte) (*http.Request, error) {
			return cryptopaytest.NewWebhookRequest(whrBase, []byte("another-secret-of-32-bytes-00000"), payout, cryptopay.PayoutFailed)
		}, whrSecret, 401, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, got := whrHandler(t, tt.secret)
			req, err := tt.build(tt.secret)
			require.NoError(t, err)
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
			assert.Equal(t, "1", req.URL.Query().Get("shop"), "the base's own query is kept")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			assert.Equal(t, tt.wantGot, *got)
		})
	}
}

func TestNewWebhookRequestTamperedBodyRefused(t *testing.T) {
	h, got := whrHandler(t, whrSecret)
	u, body, err := cryptopaytest.NewWebhookPayload(whrBase, whrSecret, whrPayment(), cryptopay.PaymentPaid)
	require.NoError(t, err)
	forged := strings.Replace(string(body), `"orderId":"order-42"`, `"orderId":"order-43"`, 1)
	require.NotEqual(t, string(body), forged)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, u, strings.NewReader(forged)))
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "the token signs the orderId")
	assert.Empty(t, *got)
}

func TestNewWebhookPayloadWire(t *testing.T) {
	u, body, err := cryptopaytest.NewWebhookPayload("http://127.0.0.1:9/hook", whrSecret, whrPayment(), cryptopay.PaymentPaidOver)
	require.NoError(t, err)
	want, err := webhook.URL("http://127.0.0.1:9/hook", whrSecret, "order-42")
	require.NoError(t, err)
	assert.Equal(t, want, u)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, `"paid_over"`, string(m["status"]), "the status given replaces the object's")
	assert.Equal(t, `10.100000000000000000000000000001`, string(m["payAmount"]), "an exact JSON number")
	assert.Equal(t, `"2025-03-04T05:06:07.890Z"`, string(m["createdAt"]))
	assert.Equal(t, "null", string(m["paidAmount"]), "an unset amount is null, as the fake writes it")
	assert.Equal(t, "null", string(m["paidAddress"]))
	assert.NotContains(t, m, "additionalData")

	_, body, err = cryptopaytest.NewWebhookPayload("http://127.0.0.1:9/hook", whrSecret, whrPayout(), cryptopay.PayoutProcessing)
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, `"processing"`, string(m["status"]))
	assert.Equal(t, `0.00000001`, string(m["amount"]))
	assert.Equal(t, `"note"`, string(m["additionalData"]))
	assert.Equal(t, "null", string(m["merchantAmount"]))

	hand := &cryptopay.Payment{ID: "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e", OrderID: "o"}
	before := time.Now().Truncate(time.Millisecond) // the wire keeps milliseconds
	_, body, err = cryptopaytest.NewWebhookPayload("http://127.0.0.1:9/hook", whrSecret, hand, cryptopay.PaymentExpired)
	after := time.Now()
	require.NoError(t, err)
	var p cryptopay.Payment
	require.NoError(t, json.Unmarshal(body, &p))
	// A zero time is written as now, not year 1: between the readings of
	// the clock before and after the call, with no allowance for a slow
	// machine.
	assert.False(t, p.CreatedAt.Before(before), "a zero time is written as now, not year 1")
	assert.False(t, p.CreatedAt.After(after), "a zero time is written as now")
}

// TestNewWebhookPayloadMatchesFakeDelivery compares the payload with the
// body the fake itself delivers for the same payment and status.
func TestNewWebhookPayloadMatchesFakeDelivery(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer receiver.Close()
	srv := cryptopaytest.NewServer(cryptopaytest.WithWebhookRetry(1, 0))
	defer srv.Close()
	c := srv.Client()
	ctx := t.Context()

	for _, unpaid := range []bool{true, false} {
		p, err := c.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString("12.5"), Currency: "usdt", Network: "tron",
			CustomerID: "c", CustomerIP: "203.0.113.1", OrderID: "o-fake", AdditionalData: "x", WebhookURL: receiver.URL + "/hook"})
		require.NoError(t, err)
		status := cryptopay.PaymentExpired
		if unpaid {
			require.NoError(t, srv.SetPaymentStatus(p.ID, status))
		} else {
			require.NoError(t, srv.Pay(p.ID, decimal.RequireFromString("3.25")))
			status = cryptopay.PaymentPaidPartial
		}
		var delivered []byte
		require.Eventually(t, func() bool {
			for _, d := range srv.Webhooks() {
				if d.ObjectID == p.ID && d.Status == string(status) {
					delivered = d.Body
				}
			}
			return delivered != nil
		}, 30*time.Second, 5*time.Millisecond)
		now, err := c.GetPayment(ctx, p.ID)
		require.NoError(t, err)
		_, body, err := cryptopaytest.NewWebhookPayload(receiver.URL+"/hook", whrSecret, now, status)
		require.NoError(t, err)
		assert.JSONEq(t, string(delivered), string(body), "unpaid=%v", unpaid)
	}
}

func TestNewWebhookRequestWithClientRereads(t *testing.T) {
	srv := cryptopaytest.NewServer()
	defer srv.Close()
	c := srv.Client()
	p, err := c.CreatePayment(t.Context(), cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(5), Currency: "usdt", Network: "tron",
		CustomerID: "c", CustomerIP: "203.0.113.1", OrderID: "o-reread"})
	require.NoError(t, err)
	require.NoError(t, srv.Pay(p.ID, p.PayAmount))
	var seen []cryptopay.PaymentStatus
	h, err := webhook.NewHandler(webhook.Config{Secret: whrSecret, Client: c,
		OnPayment: func(_ context.Context, p *cryptopay.Payment) error { seen = append(seen, p.Status); return nil }})
	require.NoError(t, err)

	req, err := cryptopaytest.NewWebhookRequest("http://127.0.0.1/hook", whrSecret, p, cryptopay.PaymentPaid)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Equal(t, []cryptopay.PaymentStatus{cryptopay.PaymentPaid}, seen, "the callback gets the API's version")
}

func TestNewWebhookRequestRefusesBadInput(t *testing.T) {
	noID, noOrder := whrPayment(), whrPayout()
	noID.ID, noOrder.OrderID = "", ""
	tests := []struct {
		name string
		err  func() error
		want error
	}{
		{"nil payment", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, (*cryptopay.Payment)(nil), cryptopay.PaymentPaid)
			return err
		}, cryptopaytest.ErrInvalid},
		{"empty status", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, whrPayment(), cryptopay.PaymentStatus(""))
			return err
		}, cryptopaytest.ErrInvalid},
		{"payout status for a payment", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, whrPayment(), cryptopay.PayoutPaid)
			return err
		}, cryptopaytest.ErrInvalid},
		{"payment status for a payout", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, whrPayout(), cryptopay.PaymentPaid)
			return err
		}, cryptopaytest.ErrInvalid},
		{"no id", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, noID, cryptopay.PaymentPaid)
			return err
		}, cryptopaytest.ErrInvalid},
		{"no order id", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, whrSecret, noOrder, cryptopay.PayoutPaid)
			return err
		}, cryptopay.ErrInvalidParams},
		{"short secret", func() error {
			_, err := cryptopaytest.NewWebhookRequest(whrBase, []byte("short"), whrPayment(), cryptopay.PaymentPaid)
			return err
		}, cryptopay.ErrInvalidParams},
		{"bad base", func() error {
			_, _, err := cryptopaytest.NewWebhookPayload("ftp://x/", whrSecret, whrPayment(), cryptopay.PaymentPaid)
			return err
		}, cryptopay.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "%v", err)
			assert.NotContains(t, err.Error(), string(whrSecret))
		})
	}
}
