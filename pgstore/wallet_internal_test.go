package pgstore

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

// A provider that respells a wallet where case means nothing (an EVM
// address in lower case, a segwit one in upper case) names the same
// wallet: the books, an operator's Resolve and the allow-list all agree.
// A base58 address in another case is another address everywhere.
func TestWalletRespelledIsTheSame(t *testing.T) {
	const evm = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	const segwit = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
	const tron = "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC"
	tests := []struct {
		name, network, ours, theirs string
		same                        bool
	}{
		{"EVM lower case", "erc20", evm, strings.ToLower(evm), true},
		{"segwit upper case", "bitcoin", segwit, strings.ToUpper(segwit), true},
		{"same bytes", "tron", tron, tron, true},
		{"base58 in another case", "tron", tron, strings.ToLower(tron), false},
		{"another EVM address", "erc20", evm, "0xde709f2102306220921060314715629080e2fb77", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			amount := decimal.RequireFromString("12.5")
			row := &payoutRow{orderID: "wd-1", n: 1, currency: "usdt", network: tt.network, wallet: tt.theirs,
				qCurrency: "usdt", qNetwork: tt.network, qWallet: tt.ours}
			it := BooksItem{Ours: decimal.NewNullDecimal(amount), Theirs: decimal.NewNullDecimal(amount)}
			assert.Equal(t, tt.same, row.differs(&it) == "", "books: %q", row.differs(&it))

			params := cryptopay.CreatePayoutParams{OrderID: "wd-1", WalletAddress: tt.ours, Amount: amount, Currency: "usdt", Network: tt.network}
			got := &cryptopay.Payout{ID: "p-1", OrderID: "wd-1", WalletAddress: tt.theirs, Amount: amount, Currency: "usdt", Network: tt.network}
			assert.Equal(t, tt.same, payoutMismatch(got, "p-1", params) == "", "resolve: %q", payoutMismatch(got, "p-1", params))

			g := Guardrails{AllowedAddresses: []string{tt.ours}}
			require.NoError(t, g.check())
			params.WalletAddress = tt.theirs
			assert.Equal(t, tt.same, g.stop(t.Context(), params) == nil, "allow-list")
		})
	}
}

// The allow-list is the one NewQueue was given: writing another wallet
// into the caller's slice afterwards allows nothing (NewQueue keeps its
// own index of the entries, respellings included).
func TestAllowListIsKeptAtNewQueue(t *testing.T) {
	const ours = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	const other = "0xde709f2102306220921060314715629080e2fb77"
	list := []string{ours}
	g := Guardrails{AllowedAddresses: list}
	require.NoError(t, g.check())
	list[0] = other
	p := cryptopay.CreatePayoutParams{OrderID: "wd-1", Amount: decimal.RequireFromString("1"), Currency: "usdt", Network: "erc20"}
	for _, tc := range []struct {
		wallet string
		allow  bool
	}{
		{ours, true},
		{strings.ToLower(ours), true},
		{other, false},
		{strings.ToUpper(other[2:]), false},
		{"0x" + strings.ToUpper(other[2:]), false},
	} {
		p.WalletAddress = tc.wallet
		assert.Equal(t, tc.allow, g.stop(t.Context(), p) == nil, tc.wallet)
	}
}
