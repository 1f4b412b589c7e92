package webhook

import (
	"context"
	"encoding/json"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// kind is everything that differs between a payment event and a payout
// event: the handler looks it up once and never branches on the kind.
type kind struct {
	name  string              // "payment" or "payout"
	badID func(string) string // why a string is not such an id ("" if it is)
	key   func(string) string // the id as dedupe keys compare it
	// rank orders the statuses along their usual course (0: unknown), so a
	// posted status ahead of the API's can be told.
	rank func(status string) int
	// read re-reads the object through the API; decode reads a posted body.
	read   func(ctx context.Context, c *cryptopay.Client, id string) (object, error)
	decode func(body []byte) (object, bool)
}

// object is an event's payment or payout (v, a *cryptopay.Payment or a
// *cryptopay.Payout) with the fields the handler checks.
type object struct {
	v                   any
	id, orderID, status string
}

var (
	paymentKind = newKind("payment", ids.Payment, ids.PaymentKey,
		statusRanks(
			[]cryptopay.PaymentStatus{cryptopay.PaymentWaiting},
			[]cryptopay.PaymentStatus{cryptopay.PaymentConfirming, cryptopay.PaymentLocked},
			[]cryptopay.PaymentStatus{cryptopay.PaymentFailed, cryptopay.PaymentRejected, cryptopay.PaymentExpired},
			[]cryptopay.PaymentStatus{cryptopay.PaymentPaidPartial, cryptopay.PaymentPaid, cryptopay.PaymentPaidOver},
		),
		(*cryptopay.Client).GetPayment,
		func(p *cryptopay.Payment) object { return object{p, p.ID, p.OrderID, string(p.Status)} },
	)
	payoutKind = newKind("payout", ids.Payout, func(id string) string { return id },
		statusRanks(
			[]cryptopay.PayoutStatus{cryptopay.PayoutCreated},
			[]cryptopay.PayoutStatus{cryptopay.PayoutReview},
			[]cryptopay.PayoutStatus{cryptopay.PayoutProcessing},
			[]cryptopay.PayoutStatus{cryptopay.PayoutConfirming},
			[]cryptopay.PayoutStatus{cryptopay.PayoutFailed, cryptopay.PayoutCancelled},
			[]cryptopay.PayoutStatus{cryptopay.PayoutPaid},
		),
		(*cryptopay.Client).GetPayout,
		func(p *cryptopay.Payout) object { return object{p, p.ID, p.OrderID, string(p.Status)} },
	)
)

// newKind builds the kind of object T.
func newKind[T any](name string, badID, key func(string) string, rank func(string) int,
	get func(*cryptopay.Client, context.Context, string, ...cryptopay.Option) (*T, error),
	fields func(*T) object) *kind {
	return &kind{
		name: name, badID: badID, key: key, rank: rank,
		read: func(ctx context.Context, c *cryptopay.Client, id string) (object, error) {
			v, err := get(c, ctx, id)
			if err != nil {
				return object{}, err
			}
			return fields(v), nil
		},
		decode: func(body []byte) (object, bool) {
			v := new(T)
			// T's own decoder, without encoding/json's extra pass.
			if any(v).(json.Unmarshaler).UnmarshalJSON(body) != nil {
				return object{}, false
			}
			return fields(v), true
		},
	}
}

// statusRanks ranks statuses by the group they are in: the first group is
// 1, the next 2, and so on; a status in no group is 0.
func statusRanks[S ~string](groups ...[]S) func(string) int {
	ranks := make(map[string]int)
	for i, g := range groups {
		for _, s := range g {
			ranks[string(s)] = i + 1
		}
	}
	return func(s string) int { return ranks[s] }
}
