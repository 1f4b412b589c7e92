package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

var payoutCreateArgs = []string{"payout", "create", "--amount", "12.000001", "--currency", "usdt", "--network", "tron",
	"--wallet", "TWKNLFcssxbG2nuRTfFZU48fPuw8R9Hf3r", "--customer-id", "cust-3", "--customer-ip", "198.51.100.3", "--order-id", "po-7"}

func TestPayoutCreateConfirmation(t *testing.T) {
	tests := []struct {
		name       string
		tm         terms
		stdin      string
		yes        bool
		wantCode   int
		wantCreate bool
		wantErr    string
	}{
		{"terminal, yes", terms{stdin: true, stdout: true}, "yes\n", false, 0, true, ""},
		{"terminal, YES without newline", terms{stdin: true}, "YES", false, 0, true, ""},
		{"terminal, no", terms{stdin: true}, "no\n", false, exitNotConfirmed, false, "not confirmed; nothing was sent"},
		{"terminal, y is not yes", terms{stdin: true}, "y\n", false, exitNotConfirmed, false, "not confirmed"},
		{"terminal, empty answer", terms{stdin: true}, "", false, exitNotConfirmed, false, "not confirmed"},
		{"not a terminal, no --yes", terms{}, "yes\n", false, exitNotConfirmed, false, "stdin is not a terminal"},
		{"not a terminal, --yes", terms{}, "", true, 0, true, ""},
		{"terminal, --yes does not ask", terms{stdin: true}, "", true, 0, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			args := payoutCreateArgs
			if tt.yes {
				args = append(args[:len(args):len(args)], "--yes")
			}
			r := f.runCLI(tt.tm, tt.stdin, args...)
			assert.Equal(t, tt.wantCode, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.wantErr)
			asked := strings.Contains(r.stderr, "Type yes to create this payout")
			assert.Equal(t, tt.tm.stdin && !tt.yes, asked, "asks only on a terminal without --yes")
			if asked {
				assert.Contains(t, r.stderr, "About to send 12.000001 usdt on tron\n  to wallet   TWKNLFcssxbG2nuRTfFZU48fPuw8R9Hf3r\n  order       po-7")
			}
			if !tt.wantCreate {
				assert.Equal(t, 0, f.srv.PayoutCount())
				assert.Empty(t, r.stdout)
				return
			}
			require.Equal(t, 1, f.srv.PayoutCount())
			id := f.srv.PayoutIDsWithOrderID("po-7")[0]
			assert.Contains(t, r.stdout, id)
			if tt.tm.stdout {
				assert.Regexp(t, `Amount\s+12\.000001 usdt on tron`, r.stdout)
			} else {
				var p cryptopay.Payout
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
				assert.Equal(t, "12.000001", p.Amount.String())
				assert.Contains(t, r.stdout, `"amount": "12.000001"`)
			}
		})
	}
}

func TestPayoutCreateOutcomeUnknown(t *testing.T) {
	f := setup(t)
	f.srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Process: true, Status: 502})
	r := f.run(append(payoutCreateArgs, "--yes")...)
	assert.Equal(t, exitOutcomeUnknown, r.code, r.stderr)
	assert.Equal(t, 1, f.srv.PayoutCount(), "the server acted")
	assert.Equal(t, 1, f.srv.Requests(cryptopaytest.RouteCreatePayout), "never resent")
	assert.Regexp(t, `do NOT resend: run 'cryptopay payout find --order-id po-7 --attempted-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ'\n$`, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line")

	// The command it prints finds the payout the server did create.
	m := regexp.MustCompile(`run 'cryptopay (payout find .*)'`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m)
	r = f.run(strings.Fields(m[1])...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"verdict": "exists"`)

	f.srv.InjectFault(cryptopaytest.RouteCreatePayout, cryptopaytest.Fault{Status: 400, Body: `{"code":"insufficient_funds","message":"no"}`})
	r = f.run(append(payoutCreateArgs, "--yes")...)
	assert.Equal(t, exitFailed, r.code, "a refusal is not an unknown outcome")
	assert.Contains(t, r.stderr, "insufficient_funds")
}

func TestPayoutGet(t *testing.T) {
	f := setup(t)
	p := f.createPayout("po-get", "0.5")
	require.NoError(t, f.srv.SetPayoutStatus(p.ID, cryptopay.PayoutProcessing))
	require.NoError(t, f.srv.SetPayoutStatus(p.ID, cryptopay.PayoutPaid))

	r := f.run("payout", "get", p.ID)
	require.Equal(t, 0, r.code, r.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	assert.Equal(t, "paid", m["status"])
	assert.Equal(t, "0.5", m["amount"])
	assert.Equal(t, "0.5025", m["merchantAmount"], "amount plus the 0.5% network fee, exact")

	r = f.runCLI(terms{stdout: true}, "", "payout", "get", p.ID)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Status\s+paid \(terminal, success\)`, r.stdout)
	assert.Regexp(t, `Merchant amount\s+0\.5025\n`, r.stdout)

	r = f.run("payout", "get", "no-such-payout")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "404")
	assert.Contains(t, r.stderr, "request id")
}

// TestCreateAnsweredSeeOther: a 303 is the usual answer after a POST was
// processed, so for a create it is an unknown outcome: exit 4 with the
// reconcile hint, never "request failed" (exit 3) that invites a resend.
func TestCreateAnsweredSeeOther(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		route cryptopaytest.Route
		count func(*cryptopaytest.Server) int
		hint  string
	}{
		{"payout", append(payoutCreateArgs, "--yes"), cryptopaytest.RouteCreatePayout, (*cryptopaytest.Server).PayoutCount, "do NOT resend: run 'cryptopay payout find"},
		{"payment", paymentCreateArgs, cryptopaytest.RouteCreatePayment, (*cryptopaytest.Server).PaymentCount, "may exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			f.srv.InjectFault(tt.route, cryptopaytest.Fault{Process: true, Status: http.StatusSeeOther, Body: `{"code":"see_other","message":"created"}`})
			r := f.run(tt.args...)
			assert.Equal(t, exitOutcomeUnknown, r.code, r.stderr)
			assert.Equal(t, 1, tt.count(f.srv), "the server acted")
			assert.Equal(t, 1, f.srv.Requests(tt.route), "never resent")
			assert.Contains(t, r.stderr, tt.hint)
		})
	}
}

// TestPayoutCreateRefusesBadAddress: an address that fails its network's
// offline check, or that hides a character, is refused with exit 64 and
// the flag named, before a request is sent (the fake counts none), even
// with --yes.
func TestPayoutCreateRefusesBadAddress(t *testing.T) {
	for _, tc := range []struct{ network, wallet, want string }{
		{"erc20", "TWKNLFcssxbG2nuRTfFZU48fPuw8R9Hf3r", `--wallet: is not a valid "erc20" address: is a TRON address, not an EVM (0x) one`},
		{"tron", "TWKNLFcssxbG2nuRTfFZU48fPuw8R9Hf3R", "base58check checksum"},
		{"eth", "0xC335e3f92368E663751a56cDC130D59132C76c86", "EIP-55"},
		{"tron", "TWKNLFcss\u200bxbG2nuRTfFZU48fPuw8R9Hf3r", `--wallet: contains the invisible or control character '\u200b' at byte 9`},
		{"TRON", "TWKNLFcssxbG2nuRTfFZU48fPuw8R9Hf3r", `--network: "TRON" is not canonical: use "tron"`},
	} {
		t.Run(tc.network+" "+tc.want, func(t *testing.T) {
			f := setup(t)
			args := append([]string(nil), payoutCreateArgs...)
			args[7], args[9] = tc.network, tc.wallet
			r := f.run(append(args, "--yes")...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tc.want)
			assert.Zero(t, f.srv.Requests(cryptopaytest.RouteCreatePayout))
		})
	}
}
