package cryptopay

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateRefusedOrUnknown: only a 4xx other than 408 refuses a create
// request; every other answer (1xx as the final answer, 3xx, 408, 5xx, a
// code outside 100..599) and a broken connection after the headers leave
// its outcome unknown, with the orderId. A redirect is never followed and
// nothing is resent. A read answered the same way is a plain APIError.
func TestCreateRefusedOrUnknown(t *testing.T) {
	tests := []struct {
		status  int
		unknown bool
	}{
		{101, true}, {199, true}, // 199 is not final: the connection then closes
		{301, true}, {302, true}, {303, true}, {307, true}, {308, true},
		{408, true}, {500, true}, {503, true}, {999, true},
		{400, false}, {401, false}, {404, false}, {409, false}, {422, false}, {429, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+" "+decimal.NewFromInt(int64(tt.status)).String(), func(t *testing.T) {
			base, counts := hostileServer(t, func(string) hostileAnswer {
				return hostileAnswer{status: tt.status, reason: "whatever", headers: []string{"Location: /v1/elsewhere"}}
			})
			c, err := NewClient(base, testKey, WithRetryPolicy(fastRetry))
			require.NoError(t, err)
			creates := map[string]func() error{
				"payout": func() error { _, err := c.CreatePayout(context.Background(), validPayoutParams()); return err },
				"payment": func() error {
					_, err := c.CreatePayment(context.Background(), validPaymentParams())
					return err
				},
			}
			for name, create := range creates {
				err := create()
				require.Error(t, err, name)
				assert.Equal(t, tt.unknown, errors.Is(err, ErrOutcomeUnknown), "%s: %v", name, err)
				var ou *OutcomeUnknownError
				if tt.unknown && assert.ErrorAs(t, err, &ou) {
					assert.NotEmpty(t, ou.OrderID)
				}
			}
			posts, _ := counts.Load("POST")
			assert.Equal(t, int64(2), posts.(*atomic.Int64).Load(), "each create sent once, never resent")
			_, gets := counts.Load("GET")
			assert.False(t, gets, "no redirect followed")

			_, err = c.GetBalances(context.Background())
			assert.NotErrorIs(t, err, ErrOutcomeUnknown, "a read is never an unknown outcome")
		})
	}
}

// TestCreateOutcomeUnknownRule: the rule itself, for every code class and
// for transport errors.
func TestCreateOutcomeUnknownRule(t *testing.T) {
	for code := 100; code <= 999; code++ {
		want := !(code >= 400 && code <= 499 && code != 408)
		assert.Equal(t, want, createOutcomeUnknown(code, nil, false), "%d", code)
	}
	assert.True(t, createOutcomeUnknown(0, errors.New("connection reset"), false))
	assert.False(t, createOutcomeUnknown(0, errors.New("connection reset"), true), "nothing written")
}

// TestCreateAnswerForAnotherOrder: a 2xx to a create request that carries
// another orderId than the request's (a caching proxy or gateway answering
// with another request's response) is not this order's object: the call
// is an unknown outcome, never a success the caller would record against
// the wrong order. An answer without an orderId (a cache replaying another
// request's answer with it removed) is not matched to the request either.
// The error says a 2xx was read (the server acted) and which ids the
// answer named, so a caller never resends on a list search's "not
// created" after it.
func TestCreateAnswerForAnotherOrder(t *testing.T) {
	tests := []struct {
		name, payment, payout string
		unknown               bool
		reason                string
		orderIDs              [2]string // the answer's orderId: payment, payout
	}{
		{"same orderId", paymentCreated, payoutBody, false, "", [2]string{}},
		{"another orderId",
			strings.Replace(paymentCreated, `"orderId": "order-1"`, `"orderId": "order-2"`, 1),
			strings.Replace(payoutBody, `"orderId": "wd-1"`, `"orderId": "wd-2"`, 1), true, "another orderId", [2]string{"order-2", "wd-2"}},
		{"orderId differing in case",
			strings.Replace(paymentCreated, `"orderId": "order-1"`, `"orderId": "ORDER-1"`, 1),
			strings.Replace(payoutBody, `"orderId": "wd-1"`, `"orderId": "WD-1"`, 1), true, "another orderId", [2]string{"ORDER-1", "WD-1"}},
		{"no orderId",
			strings.Replace(paymentCreated, `"orderId": "order-1",`, ``, 1),
			strings.Replace(payoutBody, `"orderId": "wd-1",`, ``, 1), true, "names no orderId", [2]string{}},
		{"empty orderId",
			strings.Replace(paymentCreated, `"orderId": "order-1"`, `"orderId": ""`, 1),
			strings.Replace(payoutBody, `"orderId": "wd-1"`, `"orderId": ""`, 1), true, "names no orderId", [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var hits atomic.Int32
			mux.HandleFunc("POST /v1/payment", serveJSON(201, tt.payment, nil, &hits))
			mux.HandleFunc("POST /v1/payout", serveJSON(200, tt.payout, nil, &hits))
			p, perr := c.CreatePayment(context.Background(), validPaymentParams())
			o, oerr := c.CreatePayout(context.Background(), validPayoutParams())
			assert.Equal(t, int32(2), hits.Load(), "each create sent once")
			if !tt.unknown {
				require.NoError(t, perr)
				require.NoError(t, oerr)
				assert.NotNil(t, p)
				assert.NotNil(t, o)
				return
			}
			for i, err := range []error{perr, oerr} {
				assert.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.ErrorIs(t, err, ErrUnexpectedResponse)
				assert.ErrorContains(t, err, tt.reason)
				var ou *OutcomeUnknownError
				require.ErrorAs(t, err, &ou)
				assert.True(t, ou.ServerActed(), "a 2xx was read")
				assert.Equal(t, []int{201, 200}[i], ou.StatusCode)
				assert.Equal(t, tt.orderIDs[i], ou.AnswerOrderID)
			}
			var ou *OutcomeUnknownError
			require.ErrorAs(t, oerr, &ou)
			assert.Equal(t, "po_77", ou.AnswerID, "the payout id the answer named, for a person to look at")
			assert.Nil(t, p)
			assert.Nil(t, o)
		})
	}
}

// TestReadAnswerForAnotherID: a 2xx to a read by id that names another
// object (a cache or gateway answering with another object's status) is
// an unexpected response, never that object's status reported as the one
// asked for; a payment id differing only in letter case is the same UUID.
func TestReadAnswerForAnotherID(t *testing.T) {
	t.Parallel()
	const other = "0b7c9f2e-1d3a-4c5b-8e6f-7a8b9c0d1e2f"
	tests := []struct {
		name, payment, payout string
		ok                    bool
	}{
		{"same id", paymentStatus, payoutBody, true},
		{"payment id in upper case", strings.Replace(paymentStatus, paymentID, strings.ToUpper(paymentID), 1), payoutBody, true},
		{"another id",
			strings.Replace(paymentStatus, paymentID, other, 1),
			strings.Replace(payoutBody, `"po_77"`, `"po_78"`, 1), false},
		{"payout id in another case", paymentStatus, strings.Replace(payoutBody, `"po_77"`, `"PO_77"`, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, mux := setup(t)
			mux.HandleFunc("GET /v1/payment/{id}/status", serveJSON(200, tt.payment, nil, nil))
			mux.HandleFunc("GET /v1/payout/{id}/status", serveJSON(200, tt.payout, nil, nil))
			p, perr := c.GetPayment(context.Background(), paymentID)
			// A wait that sees its own id ends at the first read: its bound
			// only has to outlast a slow machine. One that sees another id
			// keeps reading until its context ends.
			bound := time.Second
			if tt.ok {
				bound = 30 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			w, werr := c.WaitForPayment(ctx, WaitForPaymentParams{ID: paymentID})
			o, oerr := c.GetPayout(context.Background(), "po_77")
			if tt.ok {
				require.NoError(t, perr)
				require.NoError(t, werr)
				assert.Equal(t, PaymentStatus("paid"), w.Status)
				if !strings.Contains(tt.name, "payout") {
					require.NoError(t, oerr)
					assert.Equal(t, "po_77", o.ID)
				}
				assert.NotNil(t, p)
				return
			}
			if tt.name == "another id" {
				assert.ErrorIs(t, perr, ErrUnexpectedResponse)
				assert.ErrorContains(t, perr, "another id")
				assert.Error(t, werr, "a wait does not report another payment's status")
				assert.Nil(t, p)
				assert.Nil(t, w)
			}
			assert.ErrorIs(t, oerr, ErrUnexpectedResponse)
			assert.Nil(t, o)
		})
	}
}

// TestCreateAnswerCutOff: a 2xx to a create whose body breaks off (the
// connection closes before Content-Length bytes) is still an answer: the
// outcome is unknown, and ServerActed says the server acted, so a caller
// never resends it on a list's "not created" (the server may have stored
// another orderId). Before, a broken 2xx body was reported like no answer
// at all (StatusCode 0).
func TestCreateAnswerCutOff(t *testing.T) {
	for _, status := range []int{200, 201} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			c, mux := setup(t)
			var hits atomic.Int32
			mux.HandleFunc("POST /v1/payout", func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "4096")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"payoutId": "po_77", "orderId": "wd-1", "sta`))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the connection closes mid-body
			})
			_, err := c.CreatePayout(context.Background(), validPayoutParams())
			assert.Equal(t, int32(1), hits.Load(), "sent once")
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			var ou *OutcomeUnknownError
			require.ErrorAs(t, err, &ou)
			assert.Equal(t, status, ou.StatusCode)
			assert.True(t, ou.ServerActed(), "a 2xx was read, though not its whole body")
		})
	}
}
