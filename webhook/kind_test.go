package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStatusAhead checks the kind tables' "the posted status is ahead of
// the API's" rule that decides whether a webhook is answered 503 for a
// retry.
func TestStatusAhead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind        *kind
		posted, api string
		want        bool
	}{
		{paymentKind, "paid", "waiting", true},
		{paymentKind, "paid", "confirming", true},
		{paymentKind, "paid", "expired", true},
		{paymentKind, "confirming", "waiting", true},
		{paymentKind, "paid", "paid", false},
		{paymentKind, "waiting", "paid", false},
		{paymentKind, "expired", "paid", false},
		{paymentKind, "paid_partial", "paid", false},
		// The rest of a partial payment arrived; the API has not seen it yet.
		{paymentKind, "paid", "paid_partial", true},
		{paymentKind, "paid_over", "paid", true},
		{paymentKind, "locked", "confirming", false}, // both ways: no order
		{paymentKind, "confirming", "locked", false},
		{paymentKind, "failed", "paid", false},
		{paymentKind, "brand_new", "waiting", false},
		{paymentKind, "paid", "brand_new", false},
		{payoutKind, "paid", "processing", true},
		{payoutKind, "processing", "created", true},
		{payoutKind, "created", "paid", false},
		{payoutKind, "failed", "paid", false},
		// failed is final: the API cannot catch up, a retry would not help.
		{payoutKind, "paid", "failed", false},
	}
	for _, tt := range tests {
		ev := event{kind: tt.kind, postedStatus: tt.posted, status: tt.api}
		assert.Equal(t, tt.want, ev.ahead(), "%s %s vs %s", tt.kind.name, tt.posted, tt.api)
	}
}
