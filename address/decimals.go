package address

// This file holds the one table of how many decimal places an amount of a
// currency can have on a network: the places of the chain's smallest unit
// for its own coin (a satoshi is 10^-8 BTC, a litoshi 10^-8 LTC, a sun
// 10^-6 TRX, a wei 10^-18 ETH and of the other EVM coins) and the
// decimals() of the token contract for a token (USDT and USDC have 6 on
// TRON, Ethereum, Polygon, Arbitrum, Optimism, Base and Avalanche; their
// BNB Smart Chain contracts have 18).

// pair is a currency on a network, both as the API's keys.
type pair struct{ currency, network string }

// ethL2Keys are the networks whose own coin is ETH (Ethereum, its
// testnets and the rollups on it).
var ethL2Keys = []string{
	"eth", "ethereum", "erc20", "sepolia", "holesky", "hoodi", "goerli",
	"arbitrum", "arbitrum-sepolia", "optimism", "optimism-sepolia",
	"base", "base-sepolia", "linea", "scroll", "zksync",
}

// stablecoin6Keys are the networks where USDT and USDC have 6 decimals.
var stablecoin6Keys = concat(tronKeys, []string{
	"eth", "ethereum", "erc20", "polygon", "matic", "arbitrum", "optimism", "avalanche", "avaxc",
})

// decimals maps every known pair to its decimal places.
var decimals = func() map[pair]int32 {
	m := make(map[pair]int32)
	for _, e := range []struct {
		currency string
		places   int32
		networks []string
	}{
		{"btc", 8, concat(bitcoinKeys, bitcoinTestnetKeys)},
		{"ltc", 8, concat(litecoinKeys, litecoinTestnetKeys)},
		{"trx", 6, tronKeys},
		{"eth", 18, ethL2Keys},
		{"bnb", 18, []string{"bep20", "bsc"}},
		{"pol", 18, []string{"polygon", "matic", "amoy"}},
		{"matic", 18, []string{"polygon", "matic", "amoy"}},
		{"avax", 18, []string{"avalanche", "avaxc"}},
		{"usdt", 6, stablecoin6Keys},
		{"usdc", 6, concat(stablecoin6Keys, []string{"base"})},
		{"usdt", 18, []string{"bep20", "bsc"}},
		{"usdc", 18, []string{"bep20", "bsc"}},
	} {
		for _, n := range e.networks {
			m[pair{e.currency, n}] = e.places
		}
	}
	return m
}()

func concat(a, b []string) []string { return append(append([]string(nil), a...), b...) }

// Decimals returns how many decimal places an amount of currency on
// network can have (8 for "btc" on "bitcoin", 6 for "usdt" on "tron", 18
// for "eth" on "eth"), and whether the pair is known. The keys are the
// API's, exactly: lower case ("usdt", not "USDT"). An amount with more
// places cannot be paid as asked: the chain cannot move less than one of
// its smallest units, so the SDK refuses it before sending. A pair not in
// the table is not known (known is false), and its amounts are not
// checked.
func Decimals(currency, network string) (places int, known bool) {
	p, ok := decimals[pair{currency, network}]
	return int(p), ok
}
