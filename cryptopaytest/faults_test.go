package cryptopaytest_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestCreatePayoutAmbiguousFaults is the no-double-payout contract: when
// the answer to POST /v1/payout is lost or is a 5xx, the SDK must not resend
// and must say the outcome is unknown, naming the orderId.
func TestCreatePayoutAmbiguousFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   cryptopaytest.Fault
		created int // payouts that exist afterwards
		timeout time.Duration
		is      []error
	}{
		{"process then drop", cryptopaytest.Fault{Process: true, Drop: true}, 1, 0, nil},
		{"process then 500", cryptopaytest.Fault{Process: true, Status: 500}, 1, 0, []error{cryptopay.ErrServer}},
		{"process then 502 html", cryptopaytest.Fault{Process: true, Status: 502, Body: "<html><body>Bad gateway</body></html>", ContentType: "text/html"}, 1, 0, []error{cryptopay.ErrServer}},
		{"process then truncated body", cryptopaytest.Fault{Process: true, Truncate: true}, 1, 0, nil},
		{"process then garbage 200", cryptopaytest.Fault{Process: true, Body: "{not json"}, 1, 0, []error{cryptopay.ErrUnexpectedResponse}},
		{"process then stall past the timeout", cryptopaytest.Fault{Process: true, Delay: time.Hour}, 1, 100 * time.Millisecond, nil},
		{"503 without processing", cryptopaytest.Fault{Status: 503, RetryAfter: "0"}, 0, 0, []error{cryptopay.ErrServer}},
		{"drop without processing", cryptopaytest.Fault{Drop: true}, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			opts := []cryptopay.Option{}
			if tt.timeout > 0 {
				opts = append(opts, cryptopay.WithTimeout(tt.timeout))
			}
			c := s.Client(opts...)
			s.InjectFault(cryptopaytest.RouteCreatePayout, tt.fault)

			p, err := c.CreatePayout(ctx(t), payoutParams("po-ambiguous"))
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			var ou *cryptopay.OutcomeUnknownError
			require.ErrorAs(t, err, &ou)
			assert.Equal(t, "po-ambiguous", ou.OrderID)

			assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCreatePayout), "never resent")
			assert.Equal(t, tt.created, s.PayoutsWithOrderID("po-ambiguous"))
			assert.Equal(t, 0, s.PendingFaults(cryptopaytest.RouteCreatePayout))

			// Reconciling finds exactly what the server holds.
			_, found, err := findPayout(c, ctx(t), "po-ambiguous")
			require.NoError(t, err)
			assert.Equal(t, tt.created == 1, found)
		})
	}
}

func TestDelayWithoutProcessingCreatesNothing(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := s.Client(cryptopay.WithTimeout(50 * time.Millisecond))
	s.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Delay: time.Hour})
	_, err := c.CreatePayout(ctx(t), payoutParams("po-slow"))
	assert.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown)
	// The handler notices the client left and returns without processing.
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 0, s.PayoutCount())

	// A delay that ends in time is only slow.
	s.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Delay: 5 * time.Millisecond})
	_, err = s.Client().CreatePayout(ctx(t), payoutParams("po-slow"))
	require.NoError(t, err)
	assert.Equal(t, 1, s.PayoutsWithOrderID("po-slow"))
}

// TestReadFaultsRetried: GETs survive transient faults through the SDK's
// retries, and every attempt is counted.
func TestReadFaultsRetried(t *testing.T) {
	tests := []struct {
		name     string
		fault    cryptopaytest.Fault
		requests int
	}{
		{"503 twice with Retry-After", cryptopaytest.Fault{Times: 2, Status: 503, RetryAfter: "0"}, 3},
		{"429", cryptopaytest.Fault{Status: 429, RetryAfter: "0"}, 2},
		{"dropped", cryptopaytest.Fault{Drop: true}, 2},
		{"processed then dropped", cryptopaytest.Fault{Process: true, Drop: true}, 2},
		{"truncated", cryptopaytest.Fault{Process: true, Truncate: true}, 2},
		{"truncated fault body", cryptopaytest.Fault{Status: 200, Truncate: true}, 2},
		{"slow", cryptopaytest.Fault{Delay: 10 * time.Millisecond}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			id := createPayment(t, s, paymentBody)
			c := s.Client()
			s.InjectFault(cryptopaytest.RouteGetPayment, tt.fault)
			p, err := c.GetPayment(ctx(t), id)
			require.NoError(t, err)
			assert.Equal(t, id, p.ID)
			assert.Equal(t, tt.requests, s.Requests(cryptopaytest.RouteGetPayment))
		})
	}
}

func TestReadFaultsSurfaced(t *testing.T) {
	tests := []struct {
		name     string
		fault    cryptopaytest.Fault
		is       error
		requests int
		msg      string
	}{
		{"html 502 every time", cryptopaytest.Fault{Times: 10, Status: 502, Body: "<html><h1>502 Bad Gateway</h1></html>", ContentType: "text/html"}, cryptopay.ErrServer, 4, "502 Bad Gateway"},
		{"garbage 200", cryptopaytest.Fault{Status: 200, Body: "{not json"}, cryptopay.ErrUnexpectedResponse, 1, ""},
		{"wrong shape 200", cryptopaytest.Fault{Status: 200, Body: `{"id":"x","state":"paid"}`}, cryptopay.ErrUnexpectedResponse, 1, "paymentId"},
		{"empty 200", cryptopaytest.Fault{Status: 200, EmptyBody: true}, cryptopay.ErrUnexpectedResponse, 1, "empty body"},
		{"processed, empty 200", cryptopaytest.Fault{Process: true, EmptyBody: true}, cryptopay.ErrUnexpectedResponse, 1, "empty body"},
		{"fault 404", cryptopaytest.Fault{Status: 404}, cryptopay.ErrNotFound, 1, "fault_injected"},
		{"401 after processing", cryptopaytest.Fault{Process: true, Status: 401}, cryptopay.ErrUnauthorized, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			id := createPayment(t, s, paymentBody)
			s.InjectFault(cryptopaytest.RouteGetPayment, tt.fault)
			_, err := s.Client().GetPayment(ctx(t), id)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, tt.requests, s.Requests(cryptopaytest.RouteGetPayment))
			s.ClearFaults()
		})
	}
}

func TestFaultEmptyBody200(t *testing.T) {
	// Status 200 with an empty Body sends the default fault body, which is
	// not a payment: the SDK must notice.
	s := newServer(t)
	id := createPayment(t, s, paymentBody)
	s.InjectFault(cryptopaytest.RouteGetPayment, cryptopaytest.Fault{Status: 200})
	r := call(t, s, "GET", "/v1/payment/"+id+"/status", "")
	assert.Equal(t, 200, r.Status)
	assert.Equal(t, "fault_injected", r.obj(t)["code"])
}

func TestFaultQueue(t *testing.T) {
	s := newServer(t)
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Times: 2, Status: 418})
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Status: 409})
	assert.Equal(t, 3, s.PendingFaults(cryptopaytest.RouteBalance))
	assert.Equal(t, 0, s.PendingFaults(cryptopaytest.RouteCurrencies))
	var got []int
	for range 4 {
		got = append(got, call(t, s, "GET", "/v1/balance", "").Status)
	}
	assert.Equal(t, []int{418, 418, 409, 200}, got)
	assert.Equal(t, 4, s.Requests(cryptopaytest.RouteBalance))

	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Times: 5, Status: 500})
	s.ClearFaults()
	assert.Equal(t, 0, s.PendingFaults(cryptopaytest.RouteBalance))
	assert.Equal(t, 200, call(t, s, "GET", "/v1/balance", "").Status)

	assert.Panics(t, func() { s.InjectFault("GET /v2/nothing", cryptopaytest.Fault{}) })
	assert.Equal(t, 0, s.PendingFaults("GET /v2/nothing"))
}

func TestFaultWireDetails(t *testing.T) {
	s := newServer(t)
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Status: 503, RetryAfter: "7"})
	r := call(t, s, "GET", "/v1/currencies", "", "x-api-key", "")
	assert.Equal(t, 503, r.Status, "faults apply before authentication")
	assert.Equal(t, "7", r.Header.Get("Retry-After"))
	assert.NotEmpty(t, r.Header.Get("X-Request-Id"))
	m := r.obj(t)
	assert.Equal(t, "fault_injected", m["code"])
	assert.NotEmpty(t, m["message"])

	// Truncate: the declared length is the whole body; half arrives.
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Process: true, Truncate: true, RetryAfter: "1"})
	resp, body := rawGet(t, s, "/v1/currencies")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.NotEmpty(t, resp.Header.Get("X-Request-Id"))
	assert.Greater(t, resp.ContentLength, int64(len(body)))
	full := call(t, s, "GET", "/v1/currencies", "").Body
	assert.Equal(t, string(full[:len(full)/2]), string(body))
	assert.Equal(t, int64(len(full)), resp.ContentLength)

	// Drop: no response at all.
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Drop: true})
	req, _ := http.NewRequest("GET", s.URL+"/v1/currencies", nil)
	_, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.Error(t, err)
}

// rawGet reads a response over a bare connection so a short body is seen
// as sent.
func rawGet(t *testing.T, s *cryptopaytest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: "+s.APIKey+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	return resp, body
}

func TestDelayEndsOnClose(t *testing.T) {
	s := cryptopaytest.NewServer()
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Delay: time.Hour})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Client(cryptopay.WithRetryPolicy(cryptopay.RetryPolicy{})).GetBalances(context.Background())
		errc <- err
	}()
	require.Eventually(t, func() bool { return s.Requests(cryptopaytest.RouteBalance) == 1 }, 30*time.Second, time.Millisecond)
	closeReturns(t, s) // with a response delayed by an hour
	select {
	case err := <-errc:
		assert.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled request did not end")
	}
	// After Close the handler refuses politely.
	rec := newRecorder()
	req, _ := http.NewRequest("GET", "/v1/balance", nil)
	s.Handler().ServeHTTP(rec, req)
	assert.Equal(t, 503, rec.code)
}

func TestInProcessHandlerDropAborts(t *testing.T) {
	// Without a hijackable connection, Drop aborts the handler instead.
	s := newServer(t)
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Drop: true})
	req, _ := http.NewRequest("GET", "/v1/balance", nil)
	defer func() {
		r := recover()
		assert.True(t, errors.Is(r.(error), http.ErrAbortHandler))
	}()
	s.Handler().ServeHTTP(newRecorder(), req)
	t.Fatal("Drop should abort")
}

func TestFaultsWithRequestLogging(t *testing.T) {
	// The request log wraps the ResponseWriter; Drop and Truncate must still
	// reach the connection underneath.
	var logs strings.Builder
	var mu sync.Mutex
	s := newServer(t, cryptopaytest.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))))
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Process: true, Truncate: true})
	_, body := rawGet(t, s, "/v1/currencies")
	assert.NotEmpty(t, body)
	s.InjectFault(cryptopaytest.RouteCurrencies, cryptopaytest.Fault{Drop: true})
	req, _ := http.NewRequest("GET", s.URL+"/v1/currencies", nil)
	_, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.Error(t, err)
	call(t, s, "GET", "/v1/currencies", "")
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "route=\"GET /v1/currencies\"")
	assert.NotContains(t, logs.String(), s.APIKey)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
