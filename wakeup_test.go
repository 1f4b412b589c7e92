package cryptopay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// count reports how many waits are registered for the object.
func (r *waitRegistry) count(kind objKind, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m[objectKey(kind, id)])
}

func TestWakeupIsPerKindAndID(t *testing.T) {
	t.Parallel()
	c, _ := setup(t)
	w := c.waiters.add(kindPayout, waitPayoutID)
	defer c.waiters.remove(kindPayout, waitPayoutID, w)
	obj := func() any { return &Payout{ID: waitPayoutID, Status: PayoutPaid} }
	assert.Zero(t, c.waiters.notify(kindPayment, waitPayoutID, obj), "a payment event does not wake a payout wait")
	assert.Zero(t, c.waiters.notify(kindPayout, "PO_8F2C61", obj), "payout ids are case-sensitive")
	assert.Equal(t, 1, c.waiters.notify(kindPayout, waitPayoutID, obj))
	assert.Equal(t, 1, c.waiters.notify(kindPayout, waitPayoutID, obj), "never blocks on a full mailbox")
	obj1, hinted := w.take()
	assert.Equal(t, PayoutPaid, obj1.(*Payout).Status)
	assert.False(t, hinted)
	obj1, _ = w.take()
	assert.Nil(t, obj1)
	var nilReg *waitRegistry
	assert.Zero(t, nilReg.notify(kindPayout, waitPayoutID, obj))
}

func TestWakeupHint(t *testing.T) {
	t.Parallel()
	var r waitRegistry
	w := r.add(kindPayment, waitPaymentID)
	assert.Equal(t, 1, r.count(kindPayment, waitPaymentID))
	assert.Equal(t, 1, r.hint(kindPayment, "7B0D9A52-3C1E-4F8A-A6B4-2D9E0C5F1A73"), "payment ids match case-insensitively")
	assert.Equal(t, 1, r.hint(kindPayment, waitPaymentID), "never blocks on a full mailbox")
	assert.Zero(t, r.hint(kindPayout, waitPaymentID))
	assert.Len(t, w.ch, 1, "one signal for both hints")
	obj, hinted := w.take()
	assert.Nil(t, obj, "a hint carries no object")
	assert.True(t, hinted)
	_, hinted = w.take()
	assert.False(t, hinted)

	w2 := r.add(kindPayment, waitPaymentID)
	r.remove(kindPayment, waitPaymentID, w)
	assert.Equal(t, 1, r.count(kindPayment, waitPaymentID))
	r.remove(kindPayment, waitPaymentID, w2)
	assert.Zero(t, r.count(kindPayment, waitPaymentID))
	assert.Empty(t, r.m, "no key left behind")
}
