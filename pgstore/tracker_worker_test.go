package pgstore

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
)

const fuzzPaymentID = "0b7e5d0e-1c7d-4e53-9a39-5a4d8a0a0c11"

// FuzzTrackerUntrusted feeds the tracker's check of an API answer hostile
// statuses, ids, orderIds and amounts: it must never panic, accept only
// what the lifecycle table allows for the tracked payment, and say why in
// one clean, bounded line.
func FuzzTrackerUntrusted(f *testing.F) {
	f.Add("", "waiting", fuzzPaymentID, "ord-1", "", "")
	f.Add("paid", "waiting", fuzzPaymentID, "ord-1", "10", "")
	f.Add("expired", "paid", strings.ToUpper(fuzzPaymentID), "ord-1", "", "10")
	f.Add("paid_partial", "paid_partial", fuzzPaymentID, "ord-1", "4", "3")
	f.Add("waiting", "pa\u202eid", fuzzPaymentID, "ord-1", "", "")
	f.Add("waiting", "paid", "other\n\x1b[2Jid", "ord-\x00", "", "1e3")
	f.Fuzz(func(t *testing.T, from, to, id, orderID, paidBefore, paidNow string) {
		h := held{TrackedPayment: &TrackedPayment{OrderID: "ord-1", PaymentID: fuzzPaymentID, Status: cryptopay.PaymentStatus(from)}}
		if d, err := decimal.NewFromString(paidBefore); err == nil {
			h.PaidAmount = decimal.NewNullDecimal(d)
		}
		p := &cryptopay.Payment{ID: id, OrderID: orderID, Status: cryptopay.PaymentStatus(to), ExpiredAt: time.Now()}
		if d, err := decimal.NewFromString(paidNow); err == nil {
			p.PaidAmount = decimal.NewNullDecimal(d)
		}
		tr := &Tracker{}
		reason := tr.untrusted(h, p)
		if reason == "" {
			switch {
			case !strings.EqualFold(id, fuzzPaymentID) || orderID != "ord-1":
				t.Fatalf("accepted an answer for another payment or order: %q %q", id, orderID)
			case !p.Status.IsKnown():
				t.Fatalf("accepted an unknown status %q", to)
			case from != "" && from != to && !reachable(h.Status, p.Status):
				t.Fatalf("accepted %s -> %s", from, to)
			case paidOrZero(p.PaidAmount).LessThan(paidOrZero(h.PaidAmount)) || paidOrZero(p.PaidAmount).IsNegative():
				t.Fatalf("accepted less paid, or a negative amount: %s after %s", paidNow, paidBefore)
			}
			return
		}
		if len(reason) > maxErrorText+len("…") {
			t.Fatalf("reason of %d bytes", len(reason))
		}
		if strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("reason has a control character: %q", reason)
		}
	})
}

// A status is accepted after another when the lifecycle table leads there
// in any number of moves (the reads may miss the statuses between), and
// refused when it does not.
func TestTrackerReachable(t *testing.T) {
	tests := []struct {
		from, to cryptopay.PaymentStatus
		want     bool
	}{
		{cryptopay.PaymentWaiting, cryptopay.PaymentPaid, true},
		{cryptopay.PaymentPaidPartial, cryptopay.PaymentFailed, true}, // through confirming
		{cryptopay.PaymentExpired, cryptopay.PaymentRejected, true},   // through confirming or locked
		{cryptopay.PaymentPaid, cryptopay.PaymentPaidOver, true},
		{cryptopay.PaymentPaid, cryptopay.PaymentWaiting, false},
		{cryptopay.PaymentPaid, cryptopay.PaymentFailed, false},
		{cryptopay.PaymentFailed, cryptopay.PaymentPaid, false},
		{cryptopay.PaymentConfirming, cryptopay.PaymentExpired, false},
		{cryptopay.PaymentPaidOver, cryptopay.PaymentPaid, false},
	}
	for _, tt := range tests {
		if got := reachable(tt.from, tt.to); got != tt.want {
			t.Errorf("reachable(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}
