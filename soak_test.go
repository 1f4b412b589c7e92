package cryptopay_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// The soak test is short by default. Run it long with
//
//	go test -race -run '^TestSoak$' -soak .              (10,000 operations)
//	go test -race -run '^TestSoak$' -soak -soak.ops=50000 .
//
// or CRYPTOPAY_SOAK=1 (and CRYPTOPAY_SOAK_OPS=n) in the environment.
var (
	soakLong = flag.Bool("soak", false, "run TestSoak with 10,000 operations (see -soak.ops)")
	soakN    = flag.Int("soak.ops", 0, "operations for TestSoak (default 1,500; 10,000 with -soak)")
)

const (
	soakWorkers  = 64
	soakShortOps = 1500
	soakLongOps  = 10000
	soakFaultPct = 10 // percent of operations preceded by an injected fault
	soakTimeout  = time.Second
	// soakSettle is how long reconciliation waits for a create the server
	// may still be handling (a few attempt timeouts).
	soakSettle      = 3 * soakTimeout
	soakFeePct      = 1     // the fake's default payment fee, percent
	soakNetFeePct   = "0.5" // the fake's default payout network fee, percent
	soakStartAmount = 1000000
)

func soakOps() int {
	if *soakN > 0 {
		return *soakN
	}
	if v := os.Getenv("CRYPTOPAY_SOAK_OPS"); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
			return n
		}
	}
	if *soakLong || os.Getenv("CRYPTOPAY_SOAK") == "1" {
		return soakLongOps
	}
	return soakShortOps
}

var soakPairs = []cryptopaytest.Currency{{Currency: "usdt", Network: "tron"}, {Currency: "eth", Network: "eth"}, {Currency: "btc", Network: "bitcoin"}}

// soakWallets are valid addresses (nobody holds their keys) for the
// networks of soakPairs.
var soakWallets = map[string]string{
	"tron": "TTF7VdfSkqKYSTZuZnsri7WsxdFVkXdwAd", "eth": "0xC335e3f92368E663751a56cDC130D59132C76C86",
	"bitcoin": "bc1qcv6787frdrnxxag62mxuzvx4jyevwmyxrhg83d",
}

// soakFaultKinds is the mix of injected faults: transient statuses,
// resets before and after processing, timeouts, cut and malformed bodies.
var soakFaultKinds = []struct {
	name  string
	fault cryptopaytest.Fault
}{
	{"503", cryptopaytest.Fault{Status: 503, RetryAfter: "0"}},
	{"429", cryptopaytest.Fault{Status: 429, RetryAfter: "0"}},
	{"502 html", cryptopaytest.Fault{Status: 502, Body: "<html><body>Bad gateway</body></html>", ContentType: "text/html"}},
	{"500 after processing", cryptopaytest.Fault{Status: 500, Process: true}},
	{"reset", cryptopaytest.Fault{Drop: true}},
	{"reset after processing", cryptopaytest.Fault{Drop: true, Process: true}},
	{"truncated after processing", cryptopaytest.Fault{Truncate: true, Process: true}},
	{"timeout", cryptopaytest.Fault{Delay: time.Hour}},
	{"timeout after processing", cryptopaytest.Fault{Delay: time.Hour, Process: true}},
	{"200 wrong shape after processing", cryptopaytest.Fault{Status: 200, Body: `{"unexpected":"shape"}`, Process: true}},
	{"200 empty after processing", cryptopaytest.Fault{Status: 200, EmptyBody: true, Process: true}},
}

type soakPayment struct {
	id, orderID string
	amount      decimal.Decimal
	feeByUser   bool
	pair        cryptopaytest.Currency
	mu          sync.Mutex
	paid        decimal.Decimal
}

type soakPayout struct {
	id, orderID string
	amount      decimal.Decimal
	feeByUser   bool
	pair        cryptopaytest.Currency
	// outcome: "created" (a 2xx), "refused" (a definite error), "unknown"
	// (ErrOutcomeUnknown), then "found"/"absent" once reconciled.
	outcome string
	// attempted is when the create was sent: reconciliation takes it, so a
	// request the server handles late (a loaded machine) is waited for
	// before "absent" is said, as the README's recipe does.
	attempted time.Time
}

type soakStats struct {
	ops, faults, readErrs, unknownPayments, unknownPayouts              atomic.Int64
	reconciledFound, reconciledAbsent, reconcileRetries, definite, pays atomic.Int64
	faultKinds                                                          [soakNumKinds]atomic.Int64
}

const soakNumKinds = 11 // len(soakFaultKinds)

// TestSoak runs mixed operations (creates, reads, lists, balances, payouts,
// payments paid on the server) from 64 goroutines against the fake with
// about 10% injected faults, then checks: no payout exists twice; every
// ErrOutcomeUnknown was reconciled by orderId and the answer matches the
// server; every created payment reads back; every balance equals what the
// operations that succeeded (or were found by reconciliation) imply under
// the fake's money rules.
func TestSoak(t *testing.T) {
	t.Parallel()
	require.Len(t, soakFaultKinds, soakNumKinds)
	ops := soakOps()
	var opts []cryptopaytest.ServerOption
	for _, c := range cryptopaytest.DefaultCurrencies() {
		opts = append(opts, cryptopaytest.WithBalance(c.Currency, c.Network, decimal.NewFromInt(soakStartAmount)))
	}
	s := cryptopaytest.NewServer(opts...)
	t.Cleanup(s.Close)
	c := s.Client(cryptopay.WithTimeout(soakTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var (
		st       soakStats
		mu       sync.Mutex
		payments []*soakPayment
		payouts  []*soakPayout
		problems []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	// checkRead: a read may fail when faults pile up on one request, but
	// only with a typed error, and never with "outcome unknown".
	checkRead := func(what string, err error) {
		if err == nil {
			return
		}
		st.readErrs.Add(1)
		var apiErr *cryptopay.APIError
		var respErr *cryptopay.ResponseError
		switch {
		case errors.Is(err, cryptopay.ErrOutcomeUnknown):
			fail("%s: a read reported an unknown outcome: %v", what, err)
		case errors.As(err, &apiErr), errors.As(err, &respErr):
		case strings.Contains(err.Error(), "cryptopay: GET "):
			// a transport error after the retry budget
		default:
			fail("%s: untyped error %v", what, err)
		}
	}
	// classifyPost returns "created", "refused" or "unknown" for a create.
	classifyPost := func(what string, err error) string {
		var apiErr *cryptopay.APIError
		switch {
		case err == nil:
			return "created"
		case errors.Is(err, cryptopay.ErrOutcomeUnknown):
			return "unknown"
		case errors.As(err, &apiErr) && apiErr.StatusCode < 500:
			st.definite.Add(1)
			return "refused"
		default:
			fail("%s: a create failed with neither a definite answer nor ErrOutcomeUnknown: %v", what, err)
			return "refused"
		}
	}
	reconcile := func(p *soakPayout) bool {
		res, err := c.ReconcilePayout(ctx, cryptopay.ReconcileParams{OrderID: p.orderID, AttemptedAt: p.attempted, SettleTime: soakSettle})
		if err != nil {
			return false // still unknown: look again later, never resend
		}
		if res.Verdict == cryptopay.PayoutExists {
			p.outcome = "found"
			st.reconciledFound.Add(1)
		} else {
			p.outcome = "absent"
			st.reconciledAbsent.Add(1)
		}
		return true
	}

	start := time.Now()
	var wg sync.WaitGroup
	for w := range soakWorkers {
		n := ops / soakWorkers
		if w < ops%soakWorkers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 0x50a4))
			var mine []*soakPayment
			var myPayouts []*soakPayout
			for i := range n {
				st.ops.Add(1)
				op := rng.IntN(100)
				route := soakRoute(op)
				if route != "" && rng.IntN(100) < soakFaultPct {
					k := rng.IntN(len(soakFaultKinds))
					s.InjectFault(route, soakFaultKinds[k].fault)
					st.faults.Add(1)
					st.faultKinds[k].Add(1)
				}
				pair := soakPairs[rng.IntN(len(soakPairs))]
				amount := decimal.New(int64(1+rng.IntN(100000)), -4) // 0.0001 to 10
				switch {
				case op < 20: // create a payment
					p := &soakPayment{orderID: fmt.Sprintf("soak-pay-%d-%d", w, i), amount: amount, feeByUser: rng.IntN(2) == 0, pair: pair}
					got, err := c.CreatePayment(ctx, cryptopay.CreatePaymentParams{
						Amount: amount, PlatformFeeByUser: p.feeByUser, Currency: pair.Currency, Network: pair.Network,
						CustomerID: "cust", CustomerIP: "203.0.113.7", OrderID: p.orderID,
					})
					switch classifyPost("CreatePayment", err) {
					case "created":
						p.id = got.ID
						mine = append(mine, p)
					case "unknown":
						st.unknownPayments.Add(1)
					}
				case op < 40: // create a payout
					p := &soakPayout{orderID: fmt.Sprintf("soak-po-%d-%d", w, i), amount: amount, feeByUser: rng.IntN(2) == 0, pair: pair, attempted: time.Now()}
					got, err := c.CreatePayout(ctx, cryptopay.CreatePayoutParams{
						WalletAddress: soakWallets[pair.Network], NetworkFeeByUser: p.feeByUser, Amount: amount,
						Currency: pair.Currency, Network: pair.Network, CustomerID: "cust", CustomerIP: "203.0.113.7", OrderID: p.orderID,
					})
					p.outcome = classifyPost("CreatePayout", err)
					if err == nil {
						p.id = got.ID
					}
					if p.outcome == "unknown" {
						st.unknownPayouts.Add(1)
						reconcile(p) // if the lookup fails, it stays unknown until after the run
					}
					myPayouts = append(myPayouts, p)
				case op < 55: // pay one of my payments, on the server
					if len(mine) == 0 {
						continue
					}
					p := mine[rng.IntN(len(mine))]
					amt := p.amount.Mul(decimal.New(int64(rng.IntN(12)+1), -1)) // 10% to 120% of the amount
					if err := s.Pay(p.id, amt); err != nil {
						fail("Pay %s: %v", p.id, err)
						continue
					}
					st.pays.Add(1)
					p.mu.Lock()
					p.paid = p.paid.Add(amt)
					p.mu.Unlock()
				case op < 70: // read a payment
					if len(mine) == 0 {
						continue
					}
					p := mine[rng.IntN(len(mine))]
					got, err := c.GetPayment(ctx, p.id)
					checkRead("GetPayment", err)
					if err == nil && got.ID != p.id {
						fail("GetPayment %s read %s", p.id, got.ID)
					}
				case op < 75: // read a payout
					var ids []string
					for _, p := range myPayouts {
						if p.id != "" {
							ids = append(ids, p.id)
						}
					}
					if len(ids) == 0 {
						continue
					}
					id := ids[rng.IntN(len(ids))]
					got, err := c.GetPayout(ctx, id)
					checkRead("GetPayout", err)
					if err == nil && got.ID != id {
						fail("GetPayout %s read %s", id, got.ID)
					}
				case op < 80:
					page, err := c.ListPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 20, Offset: rng.IntN(50)})
					checkRead("ListPayouts", err)
					if err == nil && page.Payouts == nil {
						fail("ListPayouts: nil slice")
					}
				case op < 92:
					_, err := c.GetBalances(ctx)
					checkRead("GetBalances", err)
				default:
					_, err := c.ListCurrencies(ctx)
					checkRead("ListCurrencies", err)
				}
			}
			mu.Lock()
			payments = append(payments, mine...)
			payouts = append(payouts, myPayouts...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	// Reconcile what is still unknown, now that the faults are gone.
	s.ClearFaults()
	for _, p := range payouts {
		if p.outcome == "unknown" {
			st.reconcileRetries.Add(1)
			require.True(t, reconcile(p), "reconciling %s after the faults cleared", p.orderID)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}

	// 1. No payout exists twice, and the server holds exactly the payouts
	// the client knows of.
	expected := map[cryptopaytest.Currency]decimal.Decimal{}
	for _, pr := range cryptopaytest.DefaultCurrencies() {
		expected[pr] = decimal.NewFromInt(soakStartAmount)
	}
	netFee := decimal.RequireFromString(soakNetFeePct).Div(decimal.NewFromInt(100))
	var exist, dups int
	for _, p := range payouts {
		n := s.PayoutsWithOrderID(p.orderID)
		if n > 1 {
			dups++
		}
		want := 0
		if p.outcome == "created" || p.outcome == "found" {
			want = 1
			exist++
			debit := p.amount
			if !p.feeByUser {
				debit = debit.Add(p.amount.Mul(netFee))
			}
			expected[p.pair] = expected[p.pair].Sub(debit)
		}
		assert.Equal(t, want, n, "payouts with orderId %s (client saw %s)", p.orderID, p.outcome)
	}
	assert.Zero(t, dups, "duplicate payouts")
	assert.Equal(t, exist, s.PayoutCount(), "the server holds no payout the client does not know of")

	// 2. Every created payment reads back, with the amounts the fake's
	// rules give; paid ones add their merchant amount to the balance.
	fee := decimal.NewFromInt(soakFeePct).Div(decimal.NewFromInt(100))
	for _, p := range payments {
		got, err := c.GetPayment(ctx, p.id)
		if !assert.NoError(t, err, "payment %s readable", p.id) {
			continue
		}
		assert.Equal(t, p.orderID, got.OrderID)
		pfee := p.amount.Mul(fee)
		merchant := decimal.Max(p.paid.Sub(pfee), decimal.Zero)
		if p.paid.IsPositive() {
			if assert.True(t, got.MerchantAmount.Valid, "merchantAmount of paid payment %s", p.id) {
				assert.Truef(t, merchant.Equal(got.MerchantAmount.Decimal), "merchantAmount of %s: want %s, got %s", p.id, merchant, got.MerchantAmount.Decimal)
			}
			assert.Truef(t, p.paid.Equal(got.PaidAmount.Decimal), "paidAmount of %s: want %s, got %s", p.id, p.paid, got.PaidAmount.Decimal)
		} else {
			assert.Equal(t, cryptopay.PaymentWaiting, got.Status)
		}
		expected[p.pair] = expected[p.pair].Add(merchant)
	}
	pc := s.PaymentCount()
	assert.GreaterOrEqual(t, pc, len(payments))
	assert.LessOrEqual(t, int64(pc), int64(len(payments))+st.unknownPayments.Load(), "payments the client does not know of come only from unknown outcomes")

	// 3. Balances, through the API and on the server, match the model.
	bals, err := c.GetBalances(ctx)
	require.NoError(t, err)
	seen := 0
	for _, b := range bals {
		pr := cryptopaytest.Currency{Currency: b.Currency, Network: b.Network}
		want, ok := expected[pr]
		if !ok {
			continue
		}
		seen++
		assert.Truef(t, want.Equal(b.Amount), "balance %s/%s: want %s, API says %s", b.Currency, b.Network, want, b.Amount)
		assert.Truef(t, want.Equal(s.Balance(b.Currency, b.Network)), "balance %s/%s on the server", b.Currency, b.Network)
	}
	assert.Equal(t, len(expected), seen)

	var kinds []string
	for i, k := range soakFaultKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k.name, st.faultKinds[i].Load()))
	}
	sort.Strings(kinds)
	t.Logf("soak: %d ops from %d goroutines in %v; %d faults injected (%s); payouts: %d attempted, %d exist, %d unknown outcomes -> %d found + %d absent (%d reconciled after the run), %d definite refusals; payments: %d created, %d unknown outcomes, %d pays; %d read errors; duplicates: %d",
		st.ops.Load(), soakWorkers, elapsed.Round(time.Millisecond), st.faults.Load(), strings.Join(kinds, ", "),
		len(payouts), exist, st.unknownPayouts.Load(), st.reconciledFound.Load(), st.reconciledAbsent.Load(), st.reconcileRetries.Load(),
		st.definite.Load(), len(payments), st.unknownPayments.Load(), st.pays.Load(), st.readErrs.Load(), dups)
}

// soakRoute is the route an operation calls, for fault injection ("" for
// operations on the server itself).
func soakRoute(op int) cryptopaytest.Route {
	switch {
	case op < 20:
		return cryptopaytest.RouteCreatePayment
	case op < 40:
		return cryptopaytest.RouteCreatePayout
	case op < 55:
		return ""
	case op < 70:
		return cryptopaytest.RouteGetPayment
	case op < 75:
		return cryptopaytest.RouteGetPayout
	case op < 80:
		return cryptopaytest.RouteListPayouts
	case op < 92:
		return cryptopaytest.RouteBalance
	default:
		return cryptopaytest.RouteCurrencies
	}
}
