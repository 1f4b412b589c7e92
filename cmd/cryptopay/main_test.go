package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestHelp(t *testing.T) {
	f := setup(t)
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"--help"}, 0, "Exit codes:"},
		{[]string{"-h"}, 0, "payout export"},
		{[]string{"help"}, 0, "CRYPTOPAY_API_KEY"},
		{[]string{"payment", "--help"}, 0, "payment wait ID"},
		{[]string{"payment", "get", "--help"}, 0, "Usage: cryptopay payment get [flags] ID"},
		{[]string{"payment", "wait", "-h"}, 0, "-max-interval"},
		{[]string{"payout", "create", "--help"}, 0, "-yes"},
		{[]string{"payout", "find", "--help"}, 0, "-attempted-at"},
		{[]string{"payout", "export", "--help"}, 0, "Output (--output): csv, jsonl"},
		{[]string{"webhook", "send", "--help"}, 0, "-allow-remote"},
		{[]string{"balances", "--help"}, 0, "-base-url"},
		{[]string{"fake", "-h"}, 0, "-webhook-attempts"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := f.run(tt.args...)
			assert.Equal(t, tt.wantCode, r.code, r.stderr)
			assert.Contains(t, r.stdout, tt.wantOut)
			assert.Empty(t, r.stderr)
			assert.Equal(t, 1, strings.Count(r.stdout, "Usage"), "printed once")
		})
	}
}

func TestUsageErrors(t *testing.T) {
	f := setup(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no command", nil, "Usage: cryptopay"},
		{"unknown command", []string{"refund"}, `unknown command "refund"`},
		{"unknown subcommand", []string{"payment", "delete"}, `unknown command "payment delete"`},
		{"group alone", []string{"payout"}, ""},
		{"unknown flag", []string{"balances", "--colour"}, "cryptopay: balances: flag provided but not defined: -colour (see 'cryptopay balances --help')"},
		{"unknown flag of a subcommand", []string{"payout", "get", "x", "--colur"}, "cryptopay: payout get: flag provided but not defined"},
		{"missing id", []string{"payment", "get"}, "want 1 argument(s), got 0"},
		{"extra arg", []string{"balances", "x"}, "want 0 argument(s), got 1"},
		{"bad output", []string{"currencies", "--output", "xml"}, `currencies: --output "xml": want json, table, csv`},
		{"bad amount", []string{"payment", "create", "--amount", "ten"}, "not a decimal: want a plain decimal"},
		{"invalid params", []string{"payment", "create", "--amount", "1", "--customer-id", "c", "--customer-ip", "1.2.3.4"}, "cryptopay: --currency: must not be empty"},
		{"missing currency", []string{"payment", "create", "--amount", "10"}, "cryptopay: --currency: must not be empty"},
		{"missing wallet", []string{"payout", "create", "--amount", "1", "--currency", "usdt", "--customer-id", "c", "--customer-ip", "1.2.3.4", "--yes"}, "cryptopay: --wallet: must not be empty"},
		{"zero amount", []string{"payout", "create", "--amount", "0", "--yes"}, "cryptopay: --amount: must be greater than 0"},
		{"bad payment id", []string{"payment", "get", "nope"}, "cryptopay: the ID argument: payment id is not a UUID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.run(tt.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tt.wantErr)
			assert.NotContains(t, r.stderr, "cryptopay: cryptopay")
			assert.NotRegexp(t, `invalid [A-Z]`, r.stderr, "a flag's name, not the SDK's Go field")
			if tt.args != nil && tt.name != "group alone" {
				assert.Empty(t, r.stdout, "no usage on stdout")
				assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			}
			assert.Equal(t, 0, f.srv.PaymentCount()+f.srv.PayoutCount(), "nothing created")
		})
	}
}

func TestConfiguration(t *testing.T) {
	f := setup(t)
	keyFile := writeFile(t, "key", f.srv.APIKey+"\n")

	t.Run("key from a file", func(t *testing.T) {
		delete(f.env, envAPIKey)
		defer func() { f.env[envAPIKey] = f.srv.APIKey }()
		r := f.run("currencies", "--api-key-file", keyFile)
		assert.Equal(t, 0, r.code, r.stderr)
		r = f.run("--api-key-file", keyFile, "currencies")
		assert.Equal(t, 0, r.code, r.stderr, "a global flag before the command")
	})
	t.Run("no key", func(t *testing.T) {
		delete(f.env, envAPIKey)
		defer func() { f.env[envAPIKey] = f.srv.APIKey }()
		r := f.run("currencies")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "no API key: set CRYPTOPAY_API_KEY or pass --api-key-file")
	})
	t.Run("empty or missing key file", func(t *testing.T) {
		r := f.run("currencies", "--api-key-file", writeFile(t, "empty", "\n"))
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "the file is empty")
		r = f.run("currencies", "--api-key-file", "/nonexistent/key")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "--api-key-file /nonexistent/key: no such file")
	})
	t.Run("a key given as the key file", func(t *testing.T) {
		for _, arg := range []string{f.srv.APIKey, "sk_live_0123456789abcdefABCDEF", "q8Zk3+vY/9aQ0w1Lr2Ht7Xc5Vb4Nm6Js8Pd0Fg2Ke1o="} {
			r := f.run("currencies", "--api-key-file", arg)
			assert.Equal(t, exitUsage, r.code)
			assert.NotContains(t, r.stderr, arg)
			assert.Contains(t, r.stderr, "looks like a key")
			assert.Contains(t, r.stderr, "no such file")
		}
	})
	t.Run("plain http to a remote host", func(t *testing.T) {
		for _, base := range []string{"http://api.example.com", "http://user:pw@192.0.2.1:8080"} {
			r := f.run("balances", "--base-url", base)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, "use its https:// URL")
			assert.NotContains(t, r.stderr, "WithInsecureHTTP", "a CLI user cannot set an SDK option")
			assert.NotContains(t, r.stderr, "pw@")
		}
	})
	t.Run("base URL flag beats the environment", func(t *testing.T) {
		f.env[envBaseURL] = "http://127.0.0.1:1"
		defer func() { f.env[envBaseURL] = f.srv.URL }()
		r := f.run("currencies", "--base-url", f.srv.URL)
		assert.Equal(t, 0, r.code, r.stderr)
		r = f.run("currencies", "--request-timeout", "2s")
		assert.Equal(t, exitFailed, r.code, "the environment's URL is used without the flag")
	})
	t.Run("no base URL", func(t *testing.T) {
		delete(f.env, envBaseURL)
		defer func() { f.env[envBaseURL] = f.srv.URL }()
		r := f.run("balances")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "no API base URL: set CRYPTOPAY_BASE_URL or pass --base-url")
	})
}

// TestKeyNeverOnArgv: no flag takes the API key or the webhook secret, and
// an attempt to pass one is refused without echoing the value.
func TestKeyNeverOnArgv(t *testing.T) {
	f := setup(t)
	const secretValue = "sk_live_SHOULD_NOT_BE_ECHOED"
	for _, args := range [][]string{
		{"--api-key", secretValue, "balances"},
		{"--api-key=" + secretValue, "balances"},
		{"balances", "-api-key", secretValue},
		{"payout", "create", "--key=" + secretValue},
		{"webhook", "url", "--order-id", "o", "--base", "http://127.0.0.1/h", "--secret", secretValue},
		{"webhook", "send", "--webhook-secret=" + secretValue},
	} {
		r := f.run(args...)
		assert.Equal(t, exitUsage, r.code, "%v", args)
		assert.Contains(t, r.stderr, "not accepted on the command line")
		assert.NotContains(t, r.stderr+r.stdout, secretValue)
	}
	for _, name := range []string{"api-key", "apikey", "key", "secret", "webhook-secret"} {
		assert.NotContains(t, helpText, "--"+name+" ", "no such flag is documented")
	}
	// The fake's own -api-key is the test key it accepts, not a secret.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := f.runWith(ctx, terms{}, strings.NewReader(""), &bytes.Buffer{}, "fake", "-addr", "127.0.0.1:0", "-api-key", "fake_key")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "API key:     fake_key")
}

// TestAPIErrorLine: an API error is one line on stderr with the request
// id, without the key, exit 3.
func TestAPIErrorLine(t *testing.T) {
	f := setup(t)
	r := f.run("payment", "get", "6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e")
	assert.Equal(t, exitFailed, r.code)
	assert.Regexp(t, regexp.MustCompile(`^cryptopay: GET /v1/payment/6f1c0f9e-7d43-4b8e-9a8e-1f2a3b4c5d6e/status: 404 not_found: .* \(request id req_[0-9a-f]+_\d+\)\n$`), r.stderr)
	assert.Empty(t, r.stdout)

	f.env[envAPIKey] = "wrong_key_0123456789"
	r = f.run("balances")
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	assert.Contains(t, r.stderr, "401")
	assert.Contains(t, r.stderr, "request id")
	assert.NotContains(t, r.stderr, "wrong_key_0123456789")

	f.env[envAPIKey] = f.srv.APIKey
	f.srv.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Times: 10, Status: 503})
	r = f.run("balances", "--request-timeout", "1s")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "503")
}

func TestRunEntryPoint(t *testing.T) {
	f := setup(t)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"currencies"}, strings.NewReader(""), &out, &errOut, func(k string) string { return f.env[k] })
	require.Equal(t, 0, code, errOut.String())
	assert.True(t, strings.HasPrefix(out.String(), "["), "JSON when stdout is not a terminal")
	assert.False(t, isTerminal(&out))
}

func TestInterrupted(t *testing.T) {
	f := setup(t)
	p := f.createPayment("o-int", "1", "")
	ctx, cancel := context.WithCancel(t.Context())
	out := newLineWriter()
	done := make(chan result, 1)
	go func() {
		done <- f.runWith(ctx, terms{stdout: true}, strings.NewReader(""), out, "payment", "wait", p.ID, "--interval", "10ms")
	}()
	select {
	case <-out.lines: // the first status is shown: the wait is running
	case <-time.After(10 * time.Second):
		t.Fatal("no status line")
	}
	cancel()
	r := <-done
	assert.Equal(t, exitInterrupted, r.code, r.stderr)
	assert.Equal(t, "cryptopay: interrupted\n", r.stderr)

	// Ctrl-C at the confirmation prompt sends nothing.
	pr, pw := io.Pipe()
	defer pw.Close()
	stdin := &readSignal{r: pr, reading: make(chan struct{})}
	ctx, cancel = context.WithCancel(t.Context())
	errOut := make(chan result, 1)
	go func() {
		errOut <- f.runWith(ctx, terms{stdin: true}, stdin, &bytes.Buffer{}, payoutCreateArgs...)
	}()
	<-stdin.reading // the prompt is shown and the answer awaited
	cancel()
	r = <-errOut
	assert.Equal(t, exitInterrupted, r.code, r.stderr)
	assert.Contains(t, r.stderr, "Type yes to create this payout: \ncryptopay: interrupted\n")
	assert.Equal(t, 0, f.srv.PayoutCount())
}

func TestFake(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := newLineWriter()
	done := make(chan result, 1)
	go func() {
		done <- f.runWith(ctx, terms{}, strings.NewReader(""), out, "fake", "-addr", "127.0.0.1:0", "-balance", "usdt/tron=0.000000000000000001")
	}()
	var base string
	select {
	case line := <-out.lines:
		m := regexp.MustCompile(`^cryptopay fake listening on (http://127\.0\.0\.1:\d+)$`).FindStringSubmatch(line)
		require.NotNil(t, m, line)
		base = m[1]
	case <-time.After(10 * time.Second):
		t.Fatal("the fake did not start")
	}
	f.env[envBaseURL], f.env[envAPIKey] = base, cryptopaytest.DefaultAPIKey
	r := f.run("balances", "--output", "table")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `usdt\s+tron\s+0\.000000000000000001\n`, r.stdout)
	cancel()
	r = <-done
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, out.String(), "cryptopay fake: shutting down")

	r = f.run("fake", "-addr", "0.0.0.0:0")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "not loopback")
}

// readSignal closes reading on its first Read.
type readSignal struct {
	r       io.Reader
	once    sync.Once
	reading chan struct{}
}

func (s *readSignal) Read(p []byte) (int, error) {
	s.once.Do(func() { close(s.reading) })
	return s.r.Read(p)
}
