package cryptopaytest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"net/http"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"

	"github.com/google/uuid"
)

func paymentWith(amount string, feeByUser bool) string {
	return fmt.Sprintf(`{"amount":%s,"platformFeeByUser":%t,"currency":"usdt","network":"tron",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o"}`, amount, feeByUser)
}

func TestPayAmounts(t *testing.T) {
	tests := []struct {
		name      string
		feeByUser bool
		pays      []string
		status    cryptopay.PaymentStatus
		paid      string
		merchant  string
	}{
		// amount 100, fee 1%: fee 1; payAmount 101 (user) or 100 (merchant).
		{"exact, user pays fee", true, []string{"101"}, cryptopay.PaymentPaid, "101", "100"},
		{"exact, merchant pays fee", false, []string{"100"}, cryptopay.PaymentPaid, "100", "99"},
		{"partial", true, []string{"50"}, cryptopay.PaymentPaidPartial, "50", "49"},
		{"partial below the fee", false, []string{"0.5"}, cryptopay.PaymentPaidPartial, "0.5", "0"},
		{"over", true, []string{"150.5"}, cryptopay.PaymentPaidOver, "150.5", "149.5"},
		{"partial then rest", true, []string{"1", "100"}, cryptopay.PaymentPaid, "101", "100"},
		{"three small parts", false, []string{"0.1", "0.2", "99.7"}, cryptopay.PaymentPaid, "100", "99"},
		{"paid then more", false, []string{"100", "0.00000001"}, cryptopay.PaymentPaidOver, "100.00000001", "99.00000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, cryptopaytest.WithBalance("usdt", "tron", dec("0")))
			id := createPayment(t, s, paymentWith("100", tt.feeByUser))
			for _, a := range tt.pays {
				require.NoError(t, s.Pay(id, dec(a)))
			}
			m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
			assert.Equal(t, string(tt.status), m["status"])
			assert.True(t, num(t, m, "paidAmount").Equal(dec(tt.paid)), "paid %v", m["paidAmount"])
			assert.True(t, num(t, m, "merchantAmount").Equal(dec(tt.merchant)), "merchant %v", m["merchantAmount"])
			assert.True(t, s.Balance("usdt", "tron").Equal(dec(tt.merchant)), "balance %s", s.Balance("usdt", "tron"))
		})
	}
}

func TestPayRefusals(t *testing.T) {
	s := newServer(t)
	id := createPayment(t, s, paymentBody)
	assert.ErrorIs(t, s.Pay(id, dec("0")), cryptopaytest.ErrInvalid)
	assert.ErrorIs(t, s.Pay(id, dec("-1")), cryptopaytest.ErrInvalid)
	assert.ErrorIs(t, s.Pay("nope", dec("1")), cryptopaytest.ErrNotFound)
	for _, st := range []cryptopay.PaymentStatus{cryptopay.PaymentFailed, cryptopay.PaymentRejected} {
		id := createPayment(t, s, paymentBody)
		require.NoError(t, s.SetPaymentStatus(id, st))
		err := s.Pay(id, dec("1"))
		assert.ErrorIs(t, err, cryptopaytest.ErrTransition)
		assert.Contains(t, err.Error(), string(st))
	}
}

func TestExpiryAndLatePayment(t *testing.T) {
	s := newServer(t, cryptopaytest.WithPaymentTTL(time.Hour))
	id := createPayment(t, s, paymentBody)
	before := s.Now()
	s.Advance(59 * time.Minute)
	st, err := s.PaymentStatus(id)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, st)
	assert.GreaterOrEqual(t, s.Now().Sub(before), 59*time.Minute)

	s.Advance(time.Minute)
	m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "expired", m["status"])
	assert.True(t, num(t, m, "paidAmount").IsZero(), "nothing paid yet")

	// A late transfer still lands.
	require.NoError(t, s.Pay(id, dec("10.1")))
	m = call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "paid", m["status"])

	// A paid payment never expires.
	s.Advance(48 * time.Hour)
	st, _ = s.PaymentStatus(id)
	assert.Equal(t, cryptopay.PaymentPaid, st)
	s.Advance(-time.Hour) // ignored
}

func TestExpiryIsLazyOnRead(t *testing.T) {
	// The clock moves with real time too: a tiny TTL expires on the next read.
	s := newServer(t, cryptopaytest.WithPaymentTTL(time.Millisecond))
	id := createPayment(t, s, paymentBody)
	time.Sleep(5 * time.Millisecond)
	m := call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
	assert.Equal(t, "expired", m["status"])
}

func TestCreatePaymentWire(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newServer(t, cryptopaytest.WithStartTime(start))
	r := call(t, s, "POST", "/v1/payment", paymentBody)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.NotEmpty(t, r.Header.Get("X-Request-Id"))

	m := r.obj(t)
	assert.Equal(t, creationPaymentKeys, keys(m),
		"creation response carries exactly the spec's creation fields, less the webhookUrl that was not sent")
	_, err := uuid.Parse(m["paymentId"].(string))
	assert.NoError(t, err)
	assert.Equal(t, "waiting", m["status"])
	assert.True(t, num(t, m, "payAmount").Equal(dec("10.1")), "10 + 1%% fee borne by the user")
	assert.Equal(t, "usdt", m["currency"])
	assert.Equal(t, "tron", m["network"])
	assert.Equal(t, "cust-1", m["customerId"])
	assert.Equal(t, "203.0.113.7", m["customerIp"])
	assert.Equal(t, "order-1", m["orderId"])
	assert.Equal(t, true, m["platformFeeByUser"])
	addr := m["payAddress"].(string)
	assert.True(t, strings.HasPrefix(addr, "T"), addr)
	assert.Equal(t, "tron:"+addr+"?amount=10.1", m["payQrCodeUri"])

	created, err := time.Parse(time.RFC3339, m["createdAt"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(m["createdAt"].(string), "Z"), "UTC")
	// Ordered on the server's clock, with no allowance for a slow machine.
	assert.False(t, created.Before(start), "created on the server's clock, which started at start")
	assert.False(t, created.After(s.Now()), "created before now")
	expired, err := time.Parse(time.RFC3339, m["expiredAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, cryptopaytest.DefaultPaymentTTL, expired.Sub(created))
	assert.Equal(t, m["createdAt"], m["updatedAt"])
}

func TestCreatePaymentAmounts(t *testing.T) {
	s := newServer(t, cryptopaytest.WithFeePercent(dec("2.5")))
	tests := []struct {
		name, amount string
		feeByUser    bool
		payAmount    string
	}{
		{"small number", `0.1`, false, "0.1"},
		{"exponent", `1e-8`, false, "0.00000001"},
		{"thirty digits", `123456789012345678.901234567891`, false, "123456789012345678.901234567891"},
		{"string amount", `"12.5"`, false, "12.5"},
		{"fee on 0.1", `0.1`, true, "0.1025"},
		{"fee on big", `1000000000000.000000001`, true, "1025000000000.000000001025"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"amount":%s,"platformFeeByUser":%t,"currency":"eth","network":"eth",
				"customerId":"c","customerIp":"::1","orderId":"o"}`, tt.amount, tt.feeByUser)
			r := call(t, s, "POST", "/v1/payment", body)
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
			m := r.obj(t)
			assert.True(t, num(t, m, "payAmount").Equal(dec(tt.payAmount)), "payAmount %v", m["payAmount"])
			assert.NotContains(t, string(r.Body), `"payAmount":"`, "amounts are JSON numbers")
			assert.True(t, strings.HasPrefix(m["payAddress"].(string), "0x"))
			assert.Contains(t, m["payQrCodeUri"], "ethereum:")
		})
	}
}

func TestCreatePaymentOptionalFields(t *testing.T) {
	s := newServer(t)
	r := call(t, s, "POST", "/v1/payment", `{"amount":1,"platformFeeByUser":false,"currency":"btc","network":"bitcoin",
		"customerId":"c","customerIp":"1.2.3.4","orderId":"o","additionalData":"note","webhookUrl":"http://127.0.0.1:1/hook",
		"someFutureField":{"x":1}}`)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	m := r.obj(t)
	assert.Equal(t, "note", m["additionalData"])
	assert.Equal(t, "http://127.0.0.1:1/hook", m["webhookUrl"])
	assert.True(t, strings.HasPrefix(m["payAddress"].(string), "bc1q"))
	assert.True(t, strings.HasPrefix(m["payQrCodeUri"].(string), "bitcoin:"))
}

func TestGetPaymentWire(t *testing.T) {
	statusKeys := sorted(append(creationPaymentKeys, "paidAmount", "merchantAmount", "paidAddress")...)
	zero := func(t *testing.T, m map[string]any) {
		assert.True(t, num(t, m, "paidAmount").IsZero())
		assert.True(t, num(t, m, "merchantAmount").IsZero())
		assert.Equal(t, "", m["paidAddress"])
	}
	tests := []struct {
		name     string
		opts     []cryptopaytest.ServerOption
		wantKeys []string
		check    func(t *testing.T, m map[string]any)
	}{
		{"default: zero, schema-valid", nil, statusKeys, zero},
		{"null", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidNull)}, statusKeys,
			func(t *testing.T, m map[string]any) {
				assert.Nil(t, m["paidAmount"])
				assert.Nil(t, m["merchantAmount"])
				assert.Nil(t, m["paidAddress"])
			}},
		{"omit", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidOmit)}, creationPaymentKeys,
			func(*testing.T, map[string]any) {}},
		{"zero", []cryptopaytest.ServerOption{cryptopaytest.WithUnpaidFields(cryptopaytest.UnpaidZero)}, statusKeys, zero},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts...)
			id := createPayment(t, s, paymentBody)
			r := call(t, s, "GET", "/v1/payment/"+id+"/status", "")
			require.Equal(t, http.StatusOK, r.Status)
			m := r.obj(t)
			assert.Equal(t, tt.wantKeys, keys(m))
			tt.check(t, m)

			require.NoError(t, s.Pay(id, dec("10.1")))
			m = call(t, s, "GET", "/v1/payment/"+id+"/status", "").obj(t)
			assert.Equal(t, statusKeys, keys(m), "after payment the status-only fields are always there")
			assert.Equal(t, "paid", m["status"])
			assert.True(t, num(t, m, "paidAmount").Equal(dec("10.1")))
			assert.True(t, num(t, m, "merchantAmount").Equal(dec("10")))
			assert.NotEqual(t, m["payAddress"], m["paidAddress"], "paidAddress is the sender's address")
			assert.NotEmpty(t, m["paidAddress"])
		})
	}
}
