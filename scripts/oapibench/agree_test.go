package oapibench_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/scripts/oapibench/oapiclient"
)

// fields is a payment as text, field by field, by the SDK's field names:
// amounts as their decimal digits, times in RFC 3339 (UTC, nanoseconds).
type fields map[string]string

func amountText(d decimal.NullDecimal) string {
	if !d.Valid {
		return ""
	}
	return d.Decimal.String()
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func sdkFields(p cryptopay.Payment) fields {
	return fields{
		"ID": p.ID, "Status": string(p.Status), "PayAmount": p.PayAmount.String(), "PayAddress": p.PayAddress,
		"PayQRCodeURI": p.PayQRCodeURI, "Currency": p.Currency, "Network": p.Network, "CustomerID": p.CustomerID,
		"CustomerIP": p.CustomerIP, "OrderID": p.OrderID, "AdditionalData": p.AdditionalData,
		"PlatformFeeByUser": strconv.FormatBool(p.PlatformFeeByUser), "CreatedAt": timeText(p.CreatedAt),
		"UpdatedAt": timeText(p.UpdatedAt), "ExpiredAt": timeText(p.ExpiredAt), "WebhookURL": p.WebhookURL,
		"PaidAmount": amountText(p.PaidAmount), "MerchantAmount": amountText(p.MerchantAmount), "PaidAddress": p.PaidAddress,
	}
}

// float32Text is the shortest decimal that reads back as x: the digits a
// float32 amount of the generated client stands for.
func float32Text(x float32) string { return decimal.NewFromFloat32(x).String() }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// oapiFields is the generated client's read of a payment, by the SDK's
// field names.
func oapiFields(p *oapiclient.PaymentStatus) fields {
	return fields{
		"ID": p.PaymentId.String(), "Status": string(p.Status), "PayAmount": float32Text(p.PayAmount), "PayAddress": p.PayAddress,
		"PayQRCodeURI": p.PayQrCodeUri, "Currency": p.Currency, "Network": p.Network, "CustomerID": p.CustomerId,
		"CustomerIP": p.CustomerIp, "OrderID": p.OrderId, "AdditionalData": deref(p.AdditionalData),
		"PlatformFeeByUser": strconv.FormatBool(p.PlatformFeeByUser), "CreatedAt": timeText(p.CreatedAt),
		"UpdatedAt": timeText(p.UpdatedAt), "ExpiredAt": timeText(p.ExpiredAt), "WebhookURL": deref(p.WebhookUrl),
		"PaidAmount": float32Text(p.PaidAmount), "MerchantAmount": float32Text(p.MerchantAmount), "PaidAddress": p.PaidAddress,
	}
}

// oapiCreatedFields is the generated client's create answer, likewise (a
// create answer has no paid fields).
func oapiCreatedFields(p *oapiclient.PaymentCreated) fields {
	return oapiFields(&oapiclient.PaymentStatus{
		AdditionalData: p.AdditionalData, CreatedAt: p.CreatedAt, Currency: p.Currency, CustomerId: p.CustomerId,
		CustomerIp: p.CustomerIp, ExpiredAt: p.ExpiredAt, Network: p.Network, OrderId: p.OrderId,
		PayAddress: p.PayAddress, PayAmount: p.PayAmount, PayQrCodeUri: p.PayQrCodeUri, PaymentId: p.PaymentId,
		PlatformFeeByUser: p.PlatformFeeByUser, Status: p.Status, UpdatedAt: p.UpdatedAt, WebhookUrl: p.WebhookUrl,
	})
}

// The SDK and the generated client create payments at the fake and read
// each other's, paid: they agree on every field, to the digit, where the
// generated client's float32 amounts hold the amount's digits; beyond
// about seven significant digits its amounts are wrong and the SDK's
// exact.
func TestSameAnswers(t *testing.T) {
	for _, tc := range []struct {
		amount string
		exact  bool // float32 holds every digit of the amounts
	}{
		{amount: "100", exact: true},
		{amount: "12.5", exact: true},
		{amount: "0.25", exact: true},
		{amount: "1234.567891", exact: false},
	} {
		t.Run(tc.amount, func(t *testing.T) {
			fake := cryptopaytest.NewServer()
			t.Cleanup(fake.Close)
			sdk, gen := newSDK(t, fake.URL, fake.APIKey), newOAPI(t, fake.URL, fake.APIKey, newHTTPClient(t))
			ctx := context.Background()
			params := createParams
			params.Amount = decimal.RequireFromString(tc.amount)

			// The SDK creates; both read it, paid.
			made, err := sdk.CreatePayment(ctx, params)
			require.NoError(t, err)
			require.NoError(t, fake.Pay(made.ID, made.PayAmount))
			read, err := sdk.GetPayment(ctx, made.ID)
			require.NoError(t, err)
			genRead, err := oapiGetPayment(ctx, gen, made.ID)
			require.NoError(t, err)
			want := sdkFields(*read)
			require.Len(t, want, reflect.TypeFor[cryptopay.Payment]().NumField(), "sdkFields names every field")
			snap, err := fake.Payment(made.ID)
			require.NoError(t, err)
			assert.Equal(t, []string{snap.PayAmount.String(), amountText(snap.PaidAmount), amountText(snap.MerchantAmount)},
				[]string{want["PayAmount"], want["PaidAmount"], want["MerchantAmount"]}, "the SDK's amounts are the fake's")
			t.Logf("SDK %s %s %s; generated client %v %v %v", want["PayAmount"], want["PaidAmount"], want["MerchantAmount"],
				genRead.PayAmount, genRead.PaidAmount, genRead.MerchantAmount)
			assertAgree(t, tc.exact, want, oapiFields(genRead))

			// The generated client creates (its amount a float32); the SDK
			// reads it.
			params.OrderID += "-oapi"
			genMade, err := oapiCreatePayment(ctx, gen, oapiCreate(params))
			require.NoError(t, err)
			again, err := sdk.GetPayment(ctx, genMade.PaymentId.String())
			require.NoError(t, err)
			assertAgree(t, tc.exact, sdkFields(*again), oapiCreatedFields(genMade), "PaidAmount", "MerchantAmount", "PaidAddress")
			assert.Equal(t, tc.exact, again.PayAmount.Equal(made.PayAmount), "the amount the fake got from the generated client")
		})
	}
}

// assertAgree checks that got (the generated client's) equals want (the
// SDK's) on every field but skip; with exact false, that got's amounts
// differ from want's and nothing else does.
func assertAgree(t *testing.T, exact bool, want, got fields, skip ...string) {
	t.Helper()
	for _, k := range skip {
		delete(want, k)
		delete(got, k)
	}
	if exact {
		assert.Equal(t, want, got)
		return
	}
	for _, k := range []string{"PayAmount", "PaidAmount", "MerchantAmount"} {
		if _, ok := want[k]; ok {
			assert.NotEqual(t, want[k], got[k], "%s: a float32 holds %s", k, want[k])
			delete(want, k)
			delete(got, k)
		}
	}
	assert.Equal(t, want, got)
}
