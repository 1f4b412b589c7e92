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
	// ahead reports whether the posted status is one the API's status can
	// still move to and not the other way round (by the SDK's lifecycle
	// table), so the API is lagging behind the event.
	ahead func(posted, api string) bool
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
		moveAhead(cryptopay.PaymentStatus.CanMoveTo),
		(*cryptopay.Client).GetPayment,
		func(p *cryptopay.Payment) object { return object{p, p.ID, p.OrderID, string(p.Status)} },
	)
	payoutKind = newKind("payout", ids.Payout, func(id string) string { return id },
		moveAhead(cryptopay.PayoutStatus.CanMoveTo),
		(*cryptopay.Client).GetPayout,
		func(p *cryptopay.Payout) object { return object{p, p.ID, p.OrderID, string(p.Status)} },
	)
)

// newKind builds the kind of object T.
func newKind[T any](name string, badID, key func(string) string, ahead func(posted, api string) bool,
	get func(*cryptopay.Client, context.Context, string, ...cryptopay.Option) (*T, error),
	fields func(*T) object) *kind {
	return &kind{
		name: name, badID: badID, key: key, ahead: ahead,
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

// moveAhead builds kind.ahead from a status type's CanMoveTo: posted is
// ahead of api when api can move to it and it cannot move back to api
// (statuses that move both ways, such as locked and confirming, are never
// ahead of each other). Unknown statuses move nowhere, so are never ahead.
func moveAhead[S ~string](canMove func(S, S) bool) func(posted, api string) bool {
	return func(posted, api string) bool {
		return canMove(S(api), S(posted)) && !canMove(S(posted), S(api))
	}
}
