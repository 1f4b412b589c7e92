// Package fakeserve runs the cryptopaytest fake of the cryptopay API as a
// standalone server. It is shared by cmd/cryptopay-fakeserver and the
// `cryptopay fake` command, so both take the same flags and behave alike.
//
// The server listens on a loopback address only. Next to the API (/v1/) it
// serves the control API (/_control/, see cryptopaytest.Server.ControlHandler)
// that pays payments, moves payouts along, advances the clock and injects
// faults, and at / the sandbox dashboard, a web page showing the same state
// with buttons for the same actions. It holds everything in memory and
// handles no real money.
package fakeserve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/cmd/internal/dashboard"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// DefaultAddr is the listen address when -addr is not given.
const DefaultAddr = "127.0.0.1:8080"

// Config is a parsed command line: where to listen and how the fake behaves.
type Config struct {
	// Addr is the listen address; its host must be loopback.
	Addr string
	// Options configure the fake (key, fees, balances, webhooks).
	Options []cryptopaytest.ServerOption
	// Log, when set, receives a line per request and webhook attempt (-v).
	Log io.Writer
}

// Run parses args (the flags listed by -h, under the program name name),
// starts the fake, prints its URL, key and control API on stdout, and
// serves until ctx ends; then it stops the server and returns nil. Flag
// errors are printed on stderr with the usage and returned; -h returns
// flag.ErrHelp.
func Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	cfg, err := Parse(name, args, stderr)
	if err != nil {
		return err
	}
	return Serve(ctx, name, cfg, stdout)
}

// Serve starts the fake described by cfg, prints its URL, key and control
// API on stdout under the program name name, and serves until ctx ends.
func Serve(ctx context.Context, name string, cfg Config, stdout io.Writer) error {
	inst, err := Start(cfg)
	if err != nil {
		return err
	}
	// One write, so a reader that sees the URL sees the whole banner.
	fmt.Fprintf(stdout, "%s listening on %s\n"+
		"  API key:     %s\n"+
		"  control API: %s/_control/ (GET it for the list of endpoints; payouts: GET /_control/payouts)\n"+
		"  dashboard:   %s/\n"+
		"  try:         curl -H 'x-api-key: %s' %s/v1/currencies\n",
		name, inst.URL, inst.Server.APIKey, inst.URL, inst.URL, inst.Server.APIKey, inst.URL)
	<-ctx.Done()
	fmt.Fprintf(stdout, "%s: shutting down\n", name)
	inst.Close()
	return nil
}

// Instance is a running fake: the cryptopaytest.Server holding the state,
// served on its own loopback listener at URL through Mux.
type Instance struct {
	// URL is "http://host:port" of the listener, without a trailing slash.
	URL string
	// Server is the fake's state; drive it directly in tests.
	Server *cryptopaytest.Server

	httpSrv *http.Server
	done    chan struct{}
}

// Start starts the fake described by cfg on cfg.Addr.
func Start(cfg Config) (*Instance, error) {
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, err
	}
	// The Server's own listener stays on a free port of 127.0.0.1; the
	// runner serves the same handlers on cfg.Addr next to whatever Mux adds.
	opts := append(cfg.Options[:len(cfg.Options):len(cfg.Options)], cryptopaytest.WithAddr("127.0.0.1:0"))
	if cfg.Log != nil {
		opts = append(opts, cryptopaytest.WithLogger(slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	srv, err := cryptopaytest.StartServer(opts...)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	inst := &Instance{
		URL:    "http://" + ln.Addr().String(),
		Server: srv,
		done:   make(chan struct{}),
	}
	inst.httpSrv = &http.Server{
		Handler:           Mux(srv),
		ConnState:         srv.ConnState, // the state's connectionsOpened counts this listener
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(inst.done)
		_ = inst.httpSrv.Serve(ln) // http.ErrServerClosed on Close
	}()
	return inst, nil
}

// Close stops the listener, cuts open connections, and closes the fake.
func (i *Instance) Close() {
	_ = i.httpSrv.Close()
	<-i.done
	i.Server.Close()
}

// Mux routes the runner's listener: the API under /v1/, the control API
// under /_control/, and the sandbox dashboard (package dashboard) at "/".
func Mux(srv *cryptopaytest.Server) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/v1/", srv.Handler())
	mux.Handle("/_control/", srv.ControlHandler())
	mux.Handle("/", dashboard.Handler(srv))
	return mux
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", cryptopaytest.ErrInvalid, addr, err)
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%w: listen address %q is not loopback (use 127.0.0.1, ::1 or localhost)", cryptopaytest.ErrInvalid, addr)
	}
	return nil
}

// balanceFlag collects -balance currency/network=amount.
type balanceFlag []cryptopaytest.ServerOption

func (b *balanceFlag) String() string { return "" }

func (b *balanceFlag) Set(v string) error {
	pairPart, amount, ok := strings.Cut(v, "=")
	cur, net, ok2 := strings.Cut(pairPart, "/")
	if !ok || !ok2 || cur == "" || net == "" {
		return errors.New("want currency/network=amount, for example usdt/tron=1000")
	}
	d, err := decimal.NewFromString(amount)
	if err != nil || d.IsNegative() {
		return errors.New("amount must be a non-negative decimal")
	}
	*b = append(*b, cryptopaytest.WithBalance(cur, net, d))
	return nil
}

// decimalFlag is a decimal flag value.
type decimalFlag struct{ d *decimal.Decimal }

func (f decimalFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f decimalFlag) Set(v string) error {
	d, err := decimal.NewFromString(v)
	if err != nil {
		return errors.New("not a decimal number")
	}
	*f.d = d
	return nil
}

// Parse turns the command line into a Config. Usage and flag errors go to
// stderr, and so does the request log of -v (Config.Log).
func Parse(name string, args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr           = fs.String("addr", DefaultAddr, "listen `address`; loopback only (127.0.0.1, ::1, localhost)")
		apiKey         = fs.String("api-key", cryptopaytest.DefaultAPIKey, "API `key` the server accepts in x-api-key (a test value, not a secret)")
		fee            = decimal.NewFromInt(1)
		networkFee     = decimal.New(5, -1)
		ttl            = fs.Duration("payment-ttl", cryptopaytest.DefaultPaymentTTL, "`duration` before an unpaid payment expires")
		unpaid         = fs.String("unpaid-fields", "zero", "status-only fields before payment: zero (schema-valid), null or omit")
		attempts       = fs.Int("webhook-attempts", 6, "delivery attempts per webhook event")
		backoff        = fs.Duration("webhook-backoff", time.Second, "wait before the first webhook retry; doubles each time")
		anyHost        = fs.Bool("webhook-any-host", false, "send webhooks to any host, not only loopback")
		verbose        = fs.Bool("v", false, "log every request to stderr")
		balances       balanceFlag
		feeFlag        = decimalFlag{&fee}
		networkFeeFlag = decimalFlag{&networkFee}
	)
	fs.Var(feeFlag, "fee-percent", "payment fee in `percent`")
	fs.Var(networkFeeFlag, "network-fee-percent", "payout network fee in `percent`")
	fs.Var(&balances, "balance", "starting balance as `currency/network=amount`; repeatable")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	mode, err := cryptopaytest.ParseUnpaidFields(*unpaid)
	if err != nil {
		return Config{}, err
	}
	opts := []cryptopaytest.ServerOption{
		cryptopaytest.WithAPIKey(*apiKey),
		cryptopaytest.WithFeePercent(fee),
		cryptopaytest.WithNetworkFeePercent(networkFee),
		cryptopaytest.WithPaymentTTL(*ttl),
		cryptopaytest.WithUnpaidFields(mode),
		cryptopaytest.WithWebhookRetry(*attempts, *backoff),
	}
	if *anyHost {
		opts = append(opts, cryptopaytest.WithWebhookAnyHost())
	}
	cfg := Config{Addr: *addr, Options: append(opts, balances...)}
	if *verbose {
		cfg.Log = stderr
	}
	return cfg, nil
}
