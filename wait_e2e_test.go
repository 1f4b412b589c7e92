package cryptopay_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// BenchmarkWaitWakeup measures how long a WaitForPayment takes to see a
// payment after it was paid, and how many status reads it costs, with the
// webhook wake-up and with polling alone. The payment arrives at a random
// moment after the wait's first read. Metrics:
//
//	detect-ms        time from Pay to the wait returning
//	waiter-gets/op   status reads made by the wait itself
//	handler-gets/op  status reads made by the webhook handler (one per event)
func BenchmarkWaitWakeup(b *testing.B) {
	cases := []struct {
		name string
		opts []cryptopay.PaymentWaitOption
		gap  time.Duration // the payment arrives within this after the first read
	}{
		// Default intervals (2 s growing to 30 s): only the webhook can end
		// the wait within the benchmark's time.
		{"webhook/default-intervals", nil, 20 * time.Millisecond},
		{"polling/20ms", []cryptopay.PaymentWaitOption{cryptopay.WithWebhookWakeup(false),
			cryptopay.WithPollInterval(20 * time.Millisecond), cryptopay.WithMaxPollInterval(20 * time.Millisecond)}, 20 * time.Millisecond},
		{"polling/100ms", []cryptopay.PaymentWaitOption{cryptopay.WithWebhookWakeup(false),
			cryptopay.WithPollInterval(100 * time.Millisecond), cryptopay.WithMaxPollInterval(100 * time.Millisecond)}, 100 * time.Millisecond},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			e := newHookEnv(b)
			var detect time.Duration
			var waiterGets, handlerGets int
			n := 0
			for b.Loop() {
				n++
				p := e.createPayment(b, "order-bench-"+strconv.Itoa(n))
				before := e.srv.Requests(cryptopaytest.RouteGetPayment)
				hooksBefore := len(e.srv.Webhooks())
				done := make(chan error, 1)
				go func() {
					got, err := e.client.WaitForPayment(context.Background(), p.ID, bc.opts...)
					if err == nil && got.Status != cryptopay.PaymentPaid {
						err = context.DeadlineExceeded
					}
					done <- err
				}()
				hookUntil(b, func() bool { return e.srv.Requests(cryptopaytest.RouteGetPayment) > before })
				time.Sleep(rand.N(bc.gap))
				start := time.Now()
				require.NoError(b, e.srv.Pay(p.ID, p.PayAmount))
				require.NoError(b, <-done)
				detect += time.Since(start)
				e.idle(b)
				reads := e.srv.Requests(cryptopaytest.RouteGetPayment) - before
				hooks := len(e.srv.Webhooks()) - hooksBefore
				handlerGets += hooks
				waiterGets += reads - hooks
			}
			b.ReportMetric(float64(detect.Microseconds())/1000/float64(n), "detect-ms")
			b.ReportMetric(float64(waiterGets)/float64(n), "waiter-gets/op")
			b.ReportMetric(float64(handlerGets)/float64(n), "handler-gets/op")
		})
	}
}
