package cryptopay_test

// Benchmarks: each SDK call beside the floor, the hand-written client with
// plain net/http + encoding/json in internal/benchfloor (which
// scripts/oapibench measures against too), against the same loopback
// server in the same run, so the ratio SDK/floor comes from one process on
// one machine.
//
// Fairness rules (see BENCHMARKS.md):
//   - same server: an httptest server on 127.0.0.1 that answers every route
//     with canned, spec-shaped JSON (the same bytes for both clients);
//   - same transport settings: the floor's http.Transport copies the SDK's
//     default transport (MaxConnsPerHost, MaxIdleConns and
//     MaxIdleConnsPerHost 256, the same dialer and timeouts), which
//     client_test.go's TestBenchFloorTransportIsTheDefault checks;
//   - same headers (x-api-key, Accept, User-Agent, Content-Type on POST),
//     same request body, the body read whole under a size cap;
//   - equivalent result: the floor decodes into a struct with the same
//     fields, amounts as decimal.Decimal (exact money, what a careful
//     hand-written client does) and time.Time timestamps. A "floatfloor"
//     variant decodes amounts as float64, to show what exactness costs.
//
// Modes: "seq" is one caller; "par64" is 64 goroutines sharing one client
// (ns/op is then wall time per call, the inverse of throughput);
// "cpu-ns/op" is the process's CPU time per call, client and server
// together, which other load on the machine disturbs less. Every
// benchmark reports "conns", the connections the server saw opened
// (http.Server.ConnState StateNew) from a fresh client, and par64 also
// "conns/caller".
//
// Run them with `go run ./scripts/benchtable` (prints the SDK/floor table)
// or `go test -run '^$' -bench . -benchmem`.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/benchfloor"
)

const (
	benchKey       = "sk_bench_0123456789abcdef"
	benchPaymentID = "6f1c2a4e-8b9d-4e3f-a1b2-c3d4e5f60718"
	benchCallers   = 64
)

var benchPaymentJSON = []byte(`{"paymentId":"` + benchPaymentID + `","status":"paid","payAmount":101.5,` +
	`"payAddress":"TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE","payQrCodeUri":"tron:TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE?amount=101.5",` +
	`"currency":"usdt","network":"tron","customerId":"customer-42","customerIp":"203.0.113.7","orderId":"order-1001",` +
	`"additionalData":"cart 17","platformFeeByUser":true,"createdAt":"2025-01-02T03:04:05.123Z",` +
	`"updatedAt":"2025-01-02T03:09:05.456Z","expiredAt":"2025-01-02T04:04:05Z",` +
	`"webhookUrl":"https://shop.example/hook?token=abc","paidAmount":101.5,"merchantAmount":100,` +
	`"paidAddress":"TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE"}`)

var benchPayoutJSON = []byte(`{"payoutId":"po_8f7e6d5c4b3a","status":"created","amount":25.75,` +
	`"walletAddress":"0x52908400098527886E0F7030069857D2E4169EE7","networkFeeByUser":false,"currency":"usdt",` +
	`"network":"eth","customerId":"customer-42","customerIp":"203.0.113.7","orderId":"payout-2002",` +
	`"createdAt":"2025-01-02T03:04:05.123Z","updatedAt":"2025-01-02T03:04:05.123Z",` +
	`"webhookUrl":"https://shop.example/hook?token=def"}`)

// benchListJSON is a 100-item payout list page.
var benchListJSON = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"payout":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"status":"paid","amount":%d.%02d,"merchantAmount":%d.%02d,`+
			`"paidAddress":"0x52908400098527886E0F7030069857D2E41%05d","orderId":"order-%d","customerId":"customer-%d",`+
			`"payCurrency":{"name":"usdt"},"payNetwork":{"name":"tron"},"createdAt":"2025-01-02T03:04:%02d.123Z",`+
			`"payoutWallet":{"label":"hot","address":"TQn9Y2khEsLJW1ChVWFMSMeRDow5Kc%04d"}}`,
			10+i, i, 10+i, (i+1)%100, i, i, i%50, i%60, i)
	}
	b.WriteString(`],"count":100}`)
	return b.Bytes()
}()

// benchServer is the loopback server both clients talk to.
type benchServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newBenchServer(tb testing.TB) *benchServer {
	tb.Helper()
	s := &benchServer{}
	write := func(w http.ResponseWriter, code int, body []byte) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != benchKey {
			write(w, http.StatusUnauthorized, []byte(`{"code":"unauthorized","message":"bad key"}`))
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		p := r.URL.Path
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/payment/") && strings.HasSuffix(p, "/status"):
			write(w, http.StatusOK, benchPaymentJSON)
		case r.Method == http.MethodPost && p == "/v1/payment":
			write(w, http.StatusCreated, benchPaymentJSON)
		case r.Method == http.MethodPost && p == "/v1/payout":
			write(w, http.StatusOK, benchPayoutJSON)
		case r.Method == http.MethodGet && p == "/v1/payout/list":
			write(w, http.StatusOK, benchListJSON)
		default:
			write(w, http.StatusNotFound, []byte(`{"code":"not_found","message":"no route"}`))
		}
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	tb.Cleanup(s.Close)
	return s
}

func newBenchSDK(tb testing.TB, s *benchServer) *cryptopay.Client {
	tb.Helper()
	c, err := cryptopay.NewClient(s.URL, benchKey)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

// newFloorClient is the floor (internal/benchfloor) on the SDK's
// transport settings, for s.
func newFloorClient(tb testing.TB, s *benchServer) *benchfloor.Client {
	tb.Helper()
	hc := benchfloor.NewHTTPClient()
	tb.Cleanup(hc.CloseIdleConnections)
	return benchfloor.New(hc, s.URL, benchKey)
}

var (
	benchPaymentParams = cryptopay.CreatePaymentParams{
		Amount: decimal.RequireFromString("100"), PlatformFeeByUser: true, Currency: "usdt", Network: "tron",
		CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: "order-1001", AdditionalData: "cart 17",
		WebhookURL: "https://shop.example/hook?token=abc",
	}
	benchPayoutParams = cryptopay.CreatePayoutParams{
		WalletAddress: "0x52908400098527886E0F7030069857D2E4169EE7", Amount: decimal.RequireFromString("25.75"),
		Currency: "usdt", Network: "eth", CustomerID: "customer-42", CustomerIP: "203.0.113.7", OrderID: "payout-2002",
		WebhookURL: "https://shop.example/hook?token=def",
	}
)

// benchCase is one operation: the SDK's call and the floor's.
type benchCase struct {
	sdk        func(ctx context.Context, c *cryptopay.Client) error
	floor      func(ctx context.Context, f *benchfloor.Client) error
	floatFloor func(ctx context.Context, f *benchfloor.Client) error
}

var benchCases = map[string]benchCase{
	"GetPayment": {
		sdk: func(ctx context.Context, c *cryptopay.Client) error {
			p, err := c.GetPayment(ctx, benchPaymentID)
			if err == nil && !p.PaidAmount.Valid {
				err = errors.New("paidAmount not decoded")
			}
			return err
		},
		floor: func(ctx context.Context, f *benchfloor.Client) error {
			_, err := f.GetPayment(ctx, benchPaymentID)
			return err
		},
		floatFloor: func(ctx context.Context, f *benchfloor.Client) error {
			p := new(benchfloor.PaymentFloat)
			return f.Call(ctx, http.MethodGet, "/v1/payment/"+benchPaymentID+"/status", nil, p)
		},
	},
	"CreatePayment": {
		sdk: func(ctx context.Context, c *cryptopay.Client) error {
			_, err := c.CreatePayment(ctx, benchPaymentParams)
			return err
		},
		floor: func(ctx context.Context, f *benchfloor.Client) error {
			_, err := f.CreatePayment(ctx, benchfloor.CreatePaymentParams(benchPaymentParams))
			return err
		},
	},
	"CreatePayout": {
		sdk: func(ctx context.Context, c *cryptopay.Client) error {
			_, err := c.CreatePayout(ctx, benchPayoutParams)
			return err
		},
		floor: func(ctx context.Context, f *benchfloor.Client) error {
			_, err := f.CreatePayout(ctx, benchfloor.CreatePayoutParams(benchPayoutParams))
			return err
		},
	},
	"ListPayouts100": {
		sdk: func(ctx context.Context, c *cryptopay.Client) error {
			p, err := c.ListPayouts(ctx, cryptopay.ListPayoutsParams{Limit: 100})
			if err == nil && len(p.Payouts) != 100 {
				err = fmt.Errorf("%d items", len(p.Payouts))
			}
			return err
		},
		floor: func(ctx context.Context, f *benchfloor.Client) error {
			return f.Call(ctx, http.MethodGet, "/v1/payout/list?limit=100", nil, new(benchfloor.Page))
		},
		floatFloor: func(ctx context.Context, f *benchfloor.Client) error {
			return f.Call(ctx, http.MethodGet, "/v1/payout/list?limit=100", nil, new(benchfloor.PageFloat))
		},
	},
}

func BenchmarkGetPayment(b *testing.B)     { runBenchCase(b, benchCases["GetPayment"]) }
func BenchmarkCreatePayment(b *testing.B)  { runBenchCase(b, benchCases["CreatePayment"]) }
func BenchmarkCreatePayout(b *testing.B)   { runBenchCase(b, benchCases["CreatePayout"]) }
func BenchmarkListPayouts100(b *testing.B) { runBenchCase(b, benchCases["ListPayouts100"]) }

// benchRound alternates which of SDK and floor runs first, from one -count
// round to the next, so neither always inherits the other's heap and
// scheduler state.
var benchRound atomic.Int64

func runBenchCase(b *testing.B, bc benchCase) {
	sdkFirst := benchRound.Add(1)%2 == 1
	for _, mode := range []string{"seq", "par64"} {
		callers := 1
		if mode == "par64" {
			callers = benchCallers
		}
		sdk := func() {
			b.Run(mode+"/sdk", func(b *testing.B) {
				s := newBenchServer(b)
				c := newBenchSDK(b, s)
				benchLoop(b, s, callers, func(ctx context.Context) error { return bc.sdk(ctx, c) })
			})
		}
		floor := func() {
			b.Run(mode+"/floor", func(b *testing.B) {
				s := newBenchServer(b)
				f := newFloorClient(b, s)
				benchLoop(b, s, callers, func(ctx context.Context) error { return bc.floor(ctx, f) })
			})
		}
		if sdkFirst {
			sdk()
			floor()
		} else {
			floor()
			sdk()
		}
		if bc.floatFloor != nil {
			b.Run(mode+"/floatfloor", func(b *testing.B) {
				s := newBenchServer(b)
				f := newFloorClient(b, s)
				benchLoop(b, s, callers, func(ctx context.Context) error { return bc.floatFloor(ctx, f) })
			})
		}
	}
}

// benchLoop runs b.N calls spread over callers goroutines (1: the
// benchmark's own) and reports the connections the server saw opened.
func benchLoop(b *testing.B, s *benchServer, callers int, call func(context.Context) error) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu0, cpuOK := benchfloor.ProcessCPU()
	b.ResetTimer()
	if callers == 1 {
		for range b.N {
			if err := call(ctx); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		n := int64(b.N)
		for range callers {
			wg.Go(func() {
				for next.Add(1) <= n {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	reportCPU(b, cpu0, cpuOK)
	conns := s.conns.Load()
	b.ReportMetric(float64(conns), "conns")
	if callers > 1 {
		b.ReportMetric(float64(conns)/float64(callers), "conns/caller")
	}
}

// reportCPU reports the process's CPU time per call since cpu0: the
// client's and the in-process server's, the same server for SDK and floor.
func reportCPU(b *testing.B, cpu0 time.Duration, ok bool) {
	if cpu1, ok1 := benchfloor.ProcessCPU(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// --- the client alone: an in-memory transport, no sockets ---

// memTransport answers every request with the canned payment, in memory,
// so what is left is each client's own work per call.
type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Status:        "200 OK",
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(benchPaymentJSON)),
		ContentLength: int64(len(benchPaymentJSON)),
		Request:       r,
	}, nil
}

// BenchmarkClientOverheadGetPayment is GetPayment with the network taken
// out: the SDK (request path, retry wrapper, decoding) against the floor
// over the same in-memory transport. Diagnostic, not a target: the SDK
// gets the transport through WithHTTPClient, so it copies its headers per
// call as it does for every caller-supplied http.Client.
func BenchmarkClientOverheadGetPayment(b *testing.B) {
	benchClientOverhead(b, func(ctx context.Context, c *cryptopay.Client) error {
		_, err := c.GetPayment(ctx, benchPaymentID)
		return err
	}, benchCases["GetPayment"].floor)
}

// BenchmarkClientOverheadCreatePayment is CreatePayment with the network
// taken out, as BenchmarkClientOverheadGetPayment is for the read: the
// checks, the body, the request path and the decoding against the floor's
// marshal and decode over the same in-memory transport.
func BenchmarkClientOverheadCreatePayment(b *testing.B) {
	bc := benchCases["CreatePayment"]
	benchClientOverhead(b, bc.sdk, bc.floor)
}

// benchClientOverhead runs sdk and floor over the in-memory transport.
func benchClientOverhead(b *testing.B, sdk func(context.Context, *cryptopay.Client) error, floor func(context.Context, *benchfloor.Client) error) {
	hc := &http.Client{Transport: memTransport{}, Timeout: 30 * time.Second}
	b.Run("seq/sdk", func(b *testing.B) {
		c, err := cryptopay.NewClient("http://127.0.0.1:1", benchKey, cryptopay.WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := sdk(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("seq/floor", func(b *testing.B) {
		f := benchfloor.New(hc, "http://127.0.0.1:1", benchKey)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := floor(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
