package claim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// BenchmarkClaimPage is the claim page's cost per request, handler and
// database (the refund's read; for a claim, its transaction with the
// payout intent), from an in-process request to the response written:
// GET of the form, POST of a claim (each on its own unclaimed refund,
// made before the timer starts), GET of the status page, and a forged
// token (refused before the database).
func BenchmarkClaimPage(b *testing.B) {
	w := newBenchWorld(b)
	_, formQ := w.benchRefund(b, "form")
	status := w.do("POST", formQ, "address="+tronAddr).Header().Get("Location")
	_, formQ = w.benchRefund(b, "form-2")
	b.Run("GET form", func(b *testing.B) { w.loop(b, "GET", formQ, "", http.StatusOK) })
	b.Run("GET status", func(b *testing.B) { w.loop(b, "GET", status, "", http.StatusOK) })
	b.Run("GET forged", func(b *testing.B) { w.loop(b, "GET", "?t=AAAA.BBBB", "", http.StatusForbidden) })
	made := 0 // the refunds made by every run of the sub-benchmark
	b.Run("POST claim", func(b *testing.B) {
		qs := make([]string, b.N)
		for i := range qs {
			made++
			_, qs[i] = w.benchRefund(b, fmt.Sprintf("claim-%d", made))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if rec := w.do("POST", qs[i], "address="+tronAddr); rec.Code != http.StatusSeeOther {
				b.Fatalf("POST: %d %s", rec.Code, rec.Body)
			}
		}
	})
}

// newBenchWorld is newWorld with a payment large enough for every
// refund the benchmark makes.
func newBenchWorld(b *testing.B) *world {
	w := newWorld(b)
	_, err := w.pool.Exec(context.Background(), "UPDATE "+w.tables[1]+" SET paid_amount = 1000000000 WHERE order_id = 'o1'")
	require.NoError(b, err)
	return w
}

// benchRefund makes an unclaimed refund of 0.000001 with the
// idempotency key idem and returns its claim link's query.
func (w *world) benchRefund(b *testing.B, idem string) (*pgstore.Refund, string) {
	return w.claimable(b, pgstore.RefundParams{OrderID: "o1", Key: idem, Rule: pgstore.RefundAmount,
		Amount: decimal.RequireFromString("0.000001"), CustomerID: "cust-o1", Actor: "alice"})
}

func (w *world) loop(b *testing.B, method, target, body string, code int) {
	b.ReportAllocs()
	for b.Loop() {
		if rec := w.do(method, target, body); rec.Code != code || strings.Contains(rec.Body.String(), "Internal") {
			b.Fatalf("%s: %d", method, rec.Code)
		}
	}
}
