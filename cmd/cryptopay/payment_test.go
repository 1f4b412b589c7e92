package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func TestPaymentGet(t *testing.T) {
	f := setup(t)
	p := f.createPayment("o-get", "12345678901234567.000001", "")
	require.NoError(t, f.srv.Pay(p.ID, decimal.RequireFromString("3.3")))
	tests := []struct {
		name string
		tm   terms
		args []string
		json bool
	}{
		{"pipe: JSON", terms{}, []string{"payment", "get", p.ID}, true},
		{"terminal: table", terms{stdout: true}, []string{"payment", "get", p.ID}, false},
		{"terminal, --output json", terms{stdout: true}, []string{"payment", "get", p.ID, "--output", "json"}, true},
		{"pipe, --output table", terms{}, []string{"payment", "get", "--output", "table", p.ID}, false},
		{"global flag before the command", terms{}, []string{"--output=table", "payment", "get", p.ID}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.runCLI(tt.tm, "", tt.args...)
			require.Equal(t, 0, r.code, r.stderr)
			if tt.json {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
				assert.Equal(t, p.ID, m["paymentId"])
				assert.Equal(t, "paid_partial", m["status"])
				assert.Equal(t, "12345678901234567.000001", m["payAmount"], "money is an exact decimal string")
				assert.Equal(t, "3.3", m["paidAmount"])
				return
			}
			assert.Regexp(t, `Payment ID\s+`+p.ID, r.stdout)
			assert.Regexp(t, `Status\s+paid_partial \(terminal, not a success; needs a person\)`, r.stdout)
			assert.Regexp(t, `Pay amount\s+12345678901234567\.000001 usdt on tron`, r.stdout)
			assert.Regexp(t, `Paid amount\s+3\.3\n`, r.stdout)
		})
	}
	r := f.run("--output", "table", "payment", "get", "not-a-uuid")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "not a UUID")
}

func TestPaymentCreate(t *testing.T) {
	f := setup(t)
	args := []string{"payment", "create", "--amount", "0.000000000000000001", "--currency", "eth", "--network", "eth",
		"--customer-id", "cust-9", "--customer-ip", "198.51.100.2", "--order-id", "o-create", "--fee-by-user",
		"--additional-data", "note", "--webhook-url", "http://127.0.0.1:9/hook"}
	r := f.run(args...)
	require.Equal(t, 0, r.code, r.stderr)
	var p cryptopay.Payment
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	assert.Equal(t, "o-create", p.OrderID)
	assert.True(t, p.PlatformFeeByUser)
	assert.Equal(t, "note", p.AdditionalData)
	assert.Equal(t, "http://127.0.0.1:9/hook", p.WebhookURL)
	st, err := f.srv.PaymentStatus(p.ID)
	require.NoError(t, err)
	assert.Equal(t, cryptopay.PaymentWaiting, st)
	assert.Contains(t, r.stdout, `"payAmount": "0.00000000000000000101"`, "amount plus 1% fee, exact")

	r = f.runCLI(terms{stdout: true}, "", args...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Status\s+waiting \(in progress\)`, r.stdout)
	assert.Equal(t, 2, f.srv.PaymentCount())
}

func TestPaymentWait(t *testing.T) {
	tests := []struct {
		name     string
		act      func(f *fixture, id string) error
		wantCode int
		want     cryptopay.PaymentStatus
	}{
		{"paid", func(f *fixture, id string) error { return f.srv.Pay(id, decimal.RequireFromString("10")) }, 0, cryptopay.PaymentPaid},
		{"paid over", func(f *fixture, id string) error { return f.srv.Pay(id, decimal.RequireFromString("11")) }, 0, cryptopay.PaymentPaidOver},
		{"paid partial", func(f *fixture, id string) error { return f.srv.Pay(id, decimal.RequireFromString("1")) }, exitNo, cryptopay.PaymentPaidPartial},
		{"expired", func(f *fixture, id string) error { return f.srv.SetPaymentStatus(id, cryptopay.PaymentExpired) }, exitNo, cryptopay.PaymentExpired},
		{"rejected", func(f *fixture, id string) error { return f.srv.SetPaymentStatus(id, cryptopay.PaymentRejected) }, exitNo, cryptopay.PaymentRejected},
	}
	for _, tt := range tests {
		for _, asJSON := range []bool{false, true} {
			name := tt.name + " table"
			if asJSON {
				name = tt.name + " json"
			}
			t.Run(name, func(t *testing.T) {
				f := setup(t)
				p := f.createPayment("o-wait", "10", "")
				out := newLineWriter()
				done := make(chan result, 1)
				go func() {
					done <- f.runWith(t.Context(), terms{stdout: !asJSON}, strings.NewReader(""), out,
						"payment", "wait", p.ID, "--interval", "5ms", "--max-interval", "20ms")
				}()
				first := <-out.lines // the wait has read "waiting": change the status now
				require.NoError(t, tt.act(f, p.ID))
				r := <-done
				assert.Equal(t, tt.wantCode, r.code, r.stderr)
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				require.GreaterOrEqual(t, len(lines), 2, out.String())
				if asJSON {
					var a, b cryptopay.Payment
					require.NoError(t, json.Unmarshal([]byte(first), &a))
					require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &b))
					assert.Equal(t, cryptopay.PaymentWaiting, a.Status)
					assert.Equal(t, tt.want, b.Status, "the last JSON line is the final state")
					assert.Len(t, lines, 2, "one line per status change")
					return
				}
				assert.Regexp(t, `^\d\d:\d\d:\d\d  waiting\s+paid 0 of 10 usdt$`, first)
				assert.Contains(t, lines[1], string(tt.want))
				assert.Contains(t, lines[len(lines)-1], "payment "+p.ID)
				// The lifecycle table: a wait ends at paid_partial, expired
				// and paid, but they can still move; the last line says so.
				assert.Equal(t, !tt.want.IsFinal(), strings.Contains(lines[len(lines)-1], "not final"), lines[len(lines)-1])
			})
		}
	}
}

func TestPaymentWaitTimeout(t *testing.T) {
	f := setup(t)
	p := f.createPayment("o-timeout", "10", "")
	r := f.runCLI(terms{stdout: true}, "", "payment", "wait", p.ID, "--timeout", "100ms", "--interval", "10ms")
	assert.Equal(t, exitNotYet, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no terminal status after 100ms (last seen: waiting)")
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	require.True(t, sc.Scan())
	assert.Contains(t, sc.Text(), "waiting")

	r = f.run("payment", "wait", "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e", "--timeout", "5s")
	assert.Equal(t, exitFailed, r.code, "a payment that does not exist is an error, not a timeout")
	assert.Contains(t, r.stderr, "404")

	r = f.run("payment", "wait", p.ID, "--timeout", "0s")
	assert.Equal(t, exitUsage, r.code)
}

// TestPaymentCreateTooManyDecimals: an amount with more decimal places than
// the currency has on its network is refused before sending, with the flag
// to fix and the pair named.
func TestPaymentCreateTooManyDecimals(t *testing.T) {
	f := setup(t)
	r := f.run("payment", "create", "--amount", "0.0000001", "--currency", "usdt", "--network", "tron",
		"--customer-id", "cust-9", "--customer-ip", "198.51.100.2", "--order-id", "o-places")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--amount: has more decimal places than usdt on tron allows (6)")
	assert.Empty(t, f.srv.PaymentIDsWithOrderID("o-places"), "nothing sent")
}
