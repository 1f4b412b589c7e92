package cryptopay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// TestWirePoolHandsOutZeroStructs: a wire struct comes back from the pool
// zeroed, whatever the last response left in it (json leaves an absent
// field as it was).
func TestWirePoolHandsOutZeroStructs(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"payment", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wirePayment) { w.ID, w.PaidAddress = paymentID, "0xfeed"; w.PaidAmount.Valid = true })
		}},
		{"payout", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wirePayout) { w.ID, w.OrderID = "p-1", "order-1" })
		}},
		{"balances", func(t *testing.T) {
			checkPoolZeroes(t, func(w *wireBalances) { *w = append(*w, wireBalance{}) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// checkPoolZeroes takes a struct from a pool of W, checks it is zero,
// dirties it and puts it back, many times: a pool that did not zero what
// it is given back would hand a dirty one out again.
func checkPoolZeroes[W any](t *testing.T, dirty func(*W)) {
	t.Helper()
	var pool wirePool[W]
	var zero W
	for range 100 {
		w := pool.get()
		require.Equal(t, zero, *w, "a struct from the pool is zero")
		dirty(w)
		pool.put(w)
	}
}

// TestNoFieldShowsThroughToTheNextResponse: a field one response carried
// is not in the next call's result when the next response lacks it (the
// pooled wire structs are zeroed between calls).
func TestNoFieldShowsThroughToTheNextResponse(t *testing.T) {
	t.Parallel()
	c, mux := setup(t)
	var n atomic.Int32
	paid := serveJSON(http.StatusOK, paymentStatus, nil, nil)     // paidAmount, paidAddress
	waiting := serveJSON(http.StatusOK, paymentCreated, nil, nil) // neither
	mux.HandleFunc("GET /v1/payment/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			paid(w, r)
		} else {
			waiting(w, r)
		}
	})
	ctx := context.Background()
	for range 20 {
		p, err := c.GetPayment(ctx, paymentID)
		require.NoError(t, err)
		require.True(t, p.PaidAmount.Valid)
		require.Equal(t, "0xfeed", p.PaidAddress)

		p, err = c.GetPayment(ctx, paymentID)
		require.NoError(t, err)
		assert.False(t, p.PaidAmount.Valid, "paidAmount of the previous response")
		assert.Empty(t, p.PaidAddress, "paidAddress of the previous response")
		assert.Equal(t, "note", p.AdditionalData)
	}
}

// The allocations per call TestCallAllocations allows, the transport's own
// (4) included. Before the hot path's work of issue 32 they were 41 and 54.
const (
	maxGetAllocs    = 35
	maxCreateAllocs = 47
)

// cannedRT answers every request with a payment, in memory: the transport
// costs the same few allocations per call whatever the SDK does.
type cannedRT struct{ body []byte }

func (rt cannedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(rt.body)),
		ContentLength: int64(len(rt.body)), Request: r}, nil
}

// TestCallAllocations pins what a create and a read allocate, every check
// on (the params' rules, the amount's places, the answer's identity, the
// scrubbing), on the default transport's path (shared header maps) over an
// in-memory transport. The numbers are this round's (BENCHMARKS.md): a
// change that adds an allocation per call fails here; one that removes
// some lowers them.
func TestCallAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector changes allocation counts")
	}
	const id = "6f1c2a4e-8b9d-4e3f-a1b2-c3d4e5f60718"
	body := []byte(`{"paymentId":"` + id + `","status":"paid","payAmount":101.5,"payAddress":"TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N",` +
		`"payQrCodeUri":"tron:TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N?amount=101.5","currency":"usdt","network":"tron",` +
		`"customerId":"customer-42","customerIp":"203.0.113.7","orderId":"order-1001","platformFeeByUser":true,` +
		`"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:09:05Z","expiredAt":"2026-01-02T04:04:05Z",` +
		`"webhookUrl":"https://shop.example/hook","paidAmount":101.5,"merchantAmount":99}`)
	c, err := NewClient("http://127.0.0.1:1", "sk_test_0123456789abcdef", WithHTTPClient(&http.Client{Transport: cannedRT{body}}))
	require.NoError(t, err)
	c.shareHeaders = true // as on the Client's own transport
	params := CreatePaymentParams{Amount: decimal.RequireFromString("100"), PlatformFeeByUser: true, Currency: "usdt",
		Network: "tron", CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: "order-1001",
		AdditionalData: "cart 17", WebhookURL: "https://shop.example/hook?token=abc"}
	ctx := context.Background()
	get := testing.AllocsPerRun(200, func() {
		if _, err := c.GetPayment(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	create := testing.AllocsPerRun(200, func() {
		if _, err := c.CreatePayment(ctx, params); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("GetPayment %v, CreatePayment %v allocations per call", get, create)
	assert.LessOrEqual(t, get, float64(maxGetAllocs), "GetPayment")
	assert.LessOrEqual(t, create, float64(maxCreateAllocs), "CreatePayment")
}

// assertWireMirrors checks that the wire struct W declares T's fields flat,
// name by name and tag by tag, with the amounts and times in their wire
// types, and that body (every field set) decoded into W and converted
// reaches every field of T.
func assertWireMirrors[T, W any, PW decoder[T, W]](t *testing.T, body string) {
	t.Helper()
	wireOf := map[reflect.Type]reflect.Type{
		reflect.TypeFor[decimal.Decimal]():     reflect.TypeFor[wire.Amount](),
		reflect.TypeFor[decimal.NullDecimal](): reflect.TypeFor[wire.Amount](),
		reflect.TypeFor[time.Time]():           reflect.TypeFor[wire.Time](),
	}
	tt, wt := reflect.TypeFor[T](), reflect.TypeFor[W]()
	require.Equal(t, tt.NumField(), wt.NumField())
	for i := range tt.NumField() {
		f, wf := tt.Field(i), wt.Field(i)
		assert.Equal(t, f.Name, wf.Name)
		assert.Equal(t, f.Tag, wf.Tag, f.Name)
		want := f.Type
		if w, ok := wireOf[want]; ok {
			want = w
		}
		assert.Equal(t, want, wf.Type, f.Name)
	}
	var w W
	require.NoError(t, json.Unmarshal([]byte(body), PW(&w)))
	var v T
	PW(&w).to(&v)
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		assert.False(t, rv.Field(i).IsZero(), "%s is not copied", tt.Field(i).Name)
	}
}
