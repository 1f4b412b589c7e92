package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Each of List's filters selects the intents it names, and only those:
// three intents, never sent (no Run), filtered one way at a time.
func TestQueueListFilters(t *testing.T) {
	r := newQRig(t)
	q := r.queue(t)
	r.enqueue(t, q, payoutParams(1), payoutParams(2), payoutParams(3))
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name string
		f    pgstore.ListFilter
		want []string
	}{
		{"all", pgstore.ListFilter{}, []string{"wd-000001", "wd-000002", "wd-000003"}},
		{"a state", pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateQueued}}, []string{"wd-000001", "wd-000002", "wd-000003"}},
		{"another state", pgstore.ListFilter{States: []pgstore.IntentState{pgstore.StateParked}}, nil},
		{"after, limit", pgstore.ListFilter{After: "wd-000001", Limit: 1}, []string{"wd-000002"}},
		{"held", pgstore.ListFilter{Held: true}, nil},
		{"currency", pgstore.ListFilter{Currency: "usdt"}, []string{"wd-000001", "wd-000002", "wd-000003"}},
		{"another currency", pgstore.ListFilter{Currency: "btc"}, nil},
		{"another network", pgstore.ListFilter{Network: "eth"}, nil},
		{"since the past", pgstore.ListFilter{Since: past}, []string{"wd-000001", "wd-000002", "wd-000003"}},
		{"since the future", pgstore.ListFilter{Since: future}, nil},
		{"until the past", pgstore.ListFilter{Until: past}, nil},
		{"search an orderId", pgstore.ListFilter{Search: "wd-000002"}, []string{"wd-000002"}},
		{"search a wallet", pgstore.ListFilter{Search: payoutParams(1).WalletAddress, Network: "tron"}, []string{"wd-000001", "wd-000002", "wd-000003"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := q.List(context.Background(), tc.f)
			require.NoError(t, err)
			var ids []string
			for _, in := range got {
				ids = append(ids, in.Params.OrderID)
			}
			assert.Equal(t, tc.want, ids)
		})
	}
}
