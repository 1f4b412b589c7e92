package cryptopay_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/address"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// Valid addresses nobody holds the keys of (20 bytes of a SHA-256 of
// fixed text), one per checked network family of the fake's pairs.
const (
	tronWallet = "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N"
	evmWallet  = "0xC335e3f92368E663751a56cDC130D59132C76C86"
	btcWallet  = "bc1qcv6787frdrnxxag62mxuzvx4jyevwmyxrhg83d"
)

func walletPayout(network, wallet string) cryptopay.CreatePayoutParams {
	cur := map[string]string{"tron": "usdt", "erc20": "usdt", "eth": "eth", "sepolia": "eth", "bitcoin": "btc", "litecoin": "ltc"}[network]
	return cryptopay.CreatePayoutParams{WalletAddress: wallet, Amount: decimal.NewFromInt(1), Currency: cur, Network: network,
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "addr-1"}
}

// TestRefusedPayoutNeverReachesTheWire: a payout whose address or
// identifiers are refused is a *ValidationError naming the Go field, and
// the fake counts 0 create requests; the same payouts with valid values
// are created.
func TestRefusedPayoutNeverReachesTheWire(t *testing.T) {
	srv := cryptopaytest.NewServer()
	t.Cleanup(srv.Close)
	c := srv.Client()
	for _, tc := range []struct {
		name   string
		p      cryptopay.CreatePayoutParams
		field  string
		reason string
	}{
		{"TRON address on erc20", walletPayout("erc20", tronWallet), "WalletAddress", `is not a valid "erc20" address: is a TRON address`},
		{"EVM address on tron", walletPayout("tron", evmWallet), "WalletAddress", "is an EVM (0x) address"},
		{"EVM address on bitcoin", walletPayout("bitcoin", evmWallet), "WalletAddress", "is an EVM (0x) address"},
		{"Bitcoin address on litecoin", walletPayout("litecoin", btcWallet), "WalletAddress", "is a Bitcoin address"},
		{"mistyped TRON", walletPayout("tron", tronWallet[:20]+"x"+tronWallet[21:]), "WalletAddress", "checksum"},
		{"mistyped EIP-55", walletPayout("eth", strings.Replace(evmWallet, "C335", "c335", 1)), "WalletAddress", "EIP-55"},
		{"mistyped bech32", walletPayout("bitcoin", btcWallet[:len(btcWallet)-1]+"q"), "WalletAddress", "bech32 checksum"},
		{"cut-off address", walletPayout("sepolia", evmWallet[:30]), "WalletAddress", "28 characters"},
		{"zero-width space in address", walletPayout("tron", tronWallet[:10]+"\u200b"+tronWallet[10:]), "WalletAddress", `invisible or control character '\u200b' at byte 10`},
		{"space in address", walletPayout("tron", tronWallet[:10]+" "+tronWallet[10:]), "WalletAddress", "white space at byte 10"},
		{"trailing newline", walletPayout("tron", tronWallet+"\n"), "WalletAddress", "white space"},
		{"zero-width space, unchecked network", withPayout(walletPayout("tron", "So1\u200bana"), func(p *cryptopay.CreatePayoutParams) { p.Network = "solana" }), "WalletAddress", "invisible"},
		{"address too long, unchecked network", withPayout(walletPayout("tron", strings.Repeat("a", 257)), func(p *cryptopay.CreatePayoutParams) { p.Network = "solana" }), "WalletAddress", "longer than 256 bytes"},
		{"orderId with newline", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = "a\nb" }), "OrderID", "control"},
		{"orderId with trailing space", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = "addr-1 " }), "OrderID", "white space"},
		{"orderId with RLO", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = "addr\u202e1" }), "OrderID", "invisible"},
		{"orderId with OSC", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = "a\x1b]8;;x\x07b" }), "OrderID", "control"},
		{"orderId with C1", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = "a\u009bb" }), "OrderID", "control"},
		{"orderId too long", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.OrderID = strings.Repeat("o", 129) }), "OrderID", "longer than 128 bytes"},
		{"customerId with ESC", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.CustomerID = "c\x1b1" }), "CustomerID", "control"},
		{"customerId too long", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.CustomerID = strings.Repeat("c", 129) }), "CustomerID", "longer than 128 bytes"},
		{"customerIp too long", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.CustomerIP = strings.Repeat("1", 65) }), "CustomerIP", "longer than 64 bytes"},
		{"customerIp with space", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.CustomerIP = " 203.0.113.1" }), "CustomerIP", "white space"},
		{"currency upper case", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.Currency = "USDT" }), "Currency", `use "usdt"`},
		{"currency empty", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.Currency = "" }), "Currency", "must not be empty"},
		{"network with space", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.Network = "tron " }), "Network", `use "tron"`},
		{"network empty", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.Network = "" }), "Network", "must not be empty"},
		{"additionalData over 64 KiB", withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) { p.AdditionalData = strings.Repeat("d", 64<<10+1) }), "AdditionalData", "more than the 65536 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreatePayout(t.Context(), tc.p)
			ve, ok := errors.AsType[*cryptopay.ValidationError](err)
			require.True(t, ok, "%v", err)
			assert.ErrorIs(t, err, cryptopay.ErrInvalidParams)
			assert.Equal(t, tc.field, ve.Field)
			assert.Contains(t, ve.Reason, tc.reason)
			assert.Equal(t, err, tc.p.Validate(), "Validate gives the same answer (the queue and the CLI call it)")
		})
	}
	assert.Zero(t, srv.Requests(cryptopaytest.RouteCreatePayout), "no refused payout reached the server")

	for i, p := range []cryptopay.CreatePayoutParams{
		walletPayout("tron", tronWallet), walletPayout("erc20", evmWallet), walletPayout("eth", strings.ToLower(evmWallet)),
		walletPayout("sepolia", strings.ToUpper(evmWallet[2:])), walletPayout("bitcoin", btcWallet),
		withPayout(walletPayout("tron", tronWallet), func(p *cryptopay.CreatePayoutParams) {
			p.OrderID, p.CustomerID, p.CustomerIP = strings.Repeat("o", 128), "заказчик 7", "2001:db8::1"
			p.AdditionalData = strings.Repeat("d", 64<<10)
		}),
	} {
		if i == 3 {
			p.WalletAddress = "0x" + p.WalletAddress
		}
		p.OrderID += string(rune('a' + i))
		if len(p.OrderID) > 128 {
			p.OrderID = p.OrderID[1:]
		}
		_, err := c.CreatePayout(t.Context(), p)
		require.NoError(t, err, "%+v", p.WalletAddress)
	}
	assert.Equal(t, 6, srv.Requests(cryptopaytest.RouteCreatePayout))
}

func withPayout(p cryptopay.CreatePayoutParams, f func(*cryptopay.CreatePayoutParams)) cryptopay.CreatePayoutParams {
	f(&p)
	return p
}

// TestRefusedPaymentNeverReachesTheWire: the identifier, key and size
// rules apply to payments too.
func TestRefusedPaymentNeverReachesTheWire(t *testing.T) {
	srv := cryptopaytest.NewServer()
	t.Cleanup(srv.Close)
	c := srv.Client()
	valid := cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(1), Currency: "usdt", Network: "tron", CustomerID: "c1",
		CustomerIP: "203.0.113.1", OrderID: "pay-1"}
	for _, tc := range []struct {
		mutate        func(*cryptopay.CreatePaymentParams)
		field, reason string
	}{
		{func(p *cryptopay.CreatePaymentParams) { p.OrderID = "pay-1\t" }, "OrderID", "white space"},
		{func(p *cryptopay.CreatePaymentParams) { p.OrderID = "pay\u200d1" }, "OrderID", "invisible"},
		{func(p *cryptopay.CreatePaymentParams) { p.OrderID = strings.Repeat("p", 129) }, "OrderID", "longer than 128"},
		{func(p *cryptopay.CreatePaymentParams) { p.CustomerID = "c\u20661" }, "CustomerID", "invisible"},
		{func(p *cryptopay.CreatePaymentParams) { p.CustomerIP = strings.Repeat("1", 65) }, "CustomerIP", "longer than 64"},
		{func(p *cryptopay.CreatePaymentParams) { p.Currency = "Usdt" }, "Currency", `use "usdt"`},
		{func(p *cryptopay.CreatePaymentParams) { p.Network = "TRON" }, "Network", `use "tron"`},
		{func(p *cryptopay.CreatePaymentParams) { p.Network = "tr on" }, "Network", "is not a key"},
		{func(p *cryptopay.CreatePaymentParams) { p.AdditionalData = strings.Repeat("d", 64<<10+1) }, "AdditionalData", "more than the 65536"},
	} {
		p := valid
		tc.mutate(&p)
		_, err := c.CreatePayment(t.Context(), p)
		ve, ok := errors.AsType[*cryptopay.ValidationError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, tc.field, ve.Field)
		assert.Contains(t, ve.Reason, tc.reason)
	}
	assert.Zero(t, srv.Requests(cryptopaytest.RouteCreatePayment))
	// A payment's network may be left out (the SDK does not require it);
	// when given it is a key.
	p := valid
	p.Network = ""
	assert.NoError(t, p.Validate())
}

// TestWithAddressChecker: the Client's Checker replaces the built-in
// checks for CreatePayout (a network added, one removed), Validate keeps
// the built-ins, ValidateWith takes the Checker, and the option is
// refused per call.
func TestWithAddressChecker(t *testing.T) {
	srv := cryptopaytest.NewServer(cryptopaytest.WithCurrencies(
		cryptopaytest.Currency{Currency: "sol", Network: "solana"}, cryptopaytest.Currency{Currency: "usdt", Network: "tron"}))
	t.Cleanup(srv.Close)
	notSolana := errors.New("not a solana address")
	checker := address.Checker{}.With("solana", func(addr string) error {
		if len(addr) < 32 {
			return notSolana
		}
		return nil
	}).With("tron", nil)
	c := srv.Client(cryptopay.WithAddressChecker(checker))

	sol := cryptopay.CreatePayoutParams{WalletAddress: "short", Amount: decimal.NewFromInt(1), Currency: "sol", Network: "solana",
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "sol-1"}
	_, err := c.CreatePayout(t.Context(), sol)
	assert.ErrorContains(t, err, `invalid WalletAddress: is not a valid "solana" address: not a solana address`)
	assert.NoError(t, sol.Validate(), "Validate has the built-ins only: solana is unchecked")
	assert.Error(t, sol.ValidateWith(checker))
	assert.Zero(t, srv.Requests(cryptopaytest.RouteCreatePayout))

	sol.WalletAddress = strings.Repeat("A", 44)
	_, err = c.CreatePayout(t.Context(), sol)
	require.NoError(t, err)

	// tron is unchecked on this Client: the fake takes the address, the
	// built-in Validate still refuses it.
	tron := walletPayout("tron", "TXyz")
	_, err = c.CreatePayout(t.Context(), tron)
	require.NoError(t, err)
	assert.ErrorContains(t, tron.Validate(), "WalletAddress")
	assert.Equal(t, 2, srv.Requests(cryptopaytest.RouteCreatePayout))

	_, err = c.GetBalances(t.Context(), cryptopay.WithAddressChecker(checker))
	assert.ErrorIs(t, err, cryptopay.ErrInvalidParams, "a per-call Checker is refused")
}
