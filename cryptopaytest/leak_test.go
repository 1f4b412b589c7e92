package cryptopaytest_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestCloseLeavesNoGoroutine exercises every part that starts goroutines
// (listener, connections, stalled handlers, webhook senders mid-backoff, the
// expiry sweeper, SDK clients) and checks that Close ends them all. It must
// not run in parallel with other tests.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	rcv := newHookReceiver(t, func(int32) int { return 500 })
	time.Sleep(10 * time.Millisecond)
	before := runtime.NumGoroutine()

	s := cryptopaytest.NewServer(cryptopaytest.WithWebhookRetry(100, 50*time.Millisecond))
	c := s.Client()
	ctx := context.Background()
	p, err := c.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount: dec("1"), Currency: "eth", Network: "eth", CustomerID: "c", CustomerIP: "::1", OrderID: "o",
		WebhookURL: rcv.URL,
	})
	require.NoError(t, err)
	require.NoError(t, s.Pay(p.ID, dec("1")))
	_, err = s.WaitWebhooks(ctx, 1) // a sender is now waiting to retry
	require.NoError(t, err)

	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Delay: time.Hour})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{})).GetBalances(ctx)
	}()
	require.Eventually(t, func() bool { return s.Requests(cryptopaytest.RouteBalance) == 1 }, 30*time.Second, time.Millisecond)
	for range 5 {
		_, err := c.GetPayment(ctx, p.ID)
		require.NoError(t, err)
	}

	s.Close()
	<-done

	// Two checks: no goroutine runs code of this package (precise, immune
	// to other goroutines ending meanwhile), and the count is back down.
	deadline := time.Now().Add(30 * time.Second)
	for (serverFrames() != "" || runtime.NumGoroutine() > before) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := serverFrames(); st != "" {
		t.Fatalf("goroutines of the server still running after Close:\n%s", st)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// serverFrames returns the stacks of goroutines that run code of package
// cryptopaytest (not of its tests).
func serverFrames() string {
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	var out []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "cryptopay-go/cryptopaytest.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
