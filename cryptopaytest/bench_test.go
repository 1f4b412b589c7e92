package cryptopaytest_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// BenchmarkServerGetPayment measures the server's GET /v1/payment/{id}/status
// throughput with parallel raw HTTP clients on keep-alive connections.
func BenchmarkServerGetPayment(b *testing.B) {
	s := cryptopaytest.NewServer()
	defer s.Close()
	id := createPayment(b, s, paymentBody)
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	url := s.URL + "/v1/payment/" + id + "/status"
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", url, nil)
		req.Header.Set("x-api-key", s.APIKey)
		for pb.Next() {
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkSDKGetPayment is the same through the SDK's client.
func BenchmarkSDKGetPayment(b *testing.B) {
	s := cryptopaytest.NewServer()
	defer s.Close()
	id := createPayment(b, s, paymentBody)
	c := s.Client()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.GetPayment(context.Background(), id); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkHandlerGetPayment measures the handler alone, without the
// network: the server's own cost per status read.
func BenchmarkHandlerGetPayment(b *testing.B) {
	s := cryptopaytest.NewServer()
	defer s.Close()
	id := createPayment(b, s, paymentBody)
	h := s.Handler()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "/v1/payment/"+id+"/status", nil)
		req.Header.Set("x-api-key", s.APIKey)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, req)
		}
	})
}
