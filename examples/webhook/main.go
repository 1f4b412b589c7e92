// Command webhook is a small merchant server that takes a payment and learns
// its outcome from the API's webhook: it serves a webhook.Handler,
// creates a payment whose webhookUrl points at itself (signed with
// webhook.URL), has the customer pay (simulated on the bundled fake
// server), prints what the callback received, and exits.
//
//	go run ./examples/webhook
//
// It talks to the in-process fake server unless CRYPTOPAY_BASE_URL and
// CRYPTOPAY_API_KEY are set. Against a real API it also needs
// CRYPTOPAY_WEBHOOK_PUBLIC_URL, a URL that reaches this process (for example
// a tunnel to CRYPTOPAY_WEBHOOK_ADDR, default 127.0.0.1:0), and waits for a
// real payment. The webhook secret comes from CRYPTOPAY_WEBHOOK_SECRET (at
// least 16 bytes; keep it stable, or the URLs of open payments stop
// verifying) or is generated for the demo.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
}

// apiEnv is what this program runs against: the real API when
// CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY are set, otherwise a fresh fake
// server from cryptopaytest, so it runs with no account.
type apiEnv struct {
	client *cryptopay.Client
	fake   *cryptopaytest.Server // nil against a real API: it plays the customer and the processor
	poll   time.Duration         // short on the fake, the default on a real API
}

func connect() (*apiEnv, error) {
	base, key := os.Getenv("CRYPTOPAY_BASE_URL"), os.Getenv("CRYPTOPAY_API_KEY")
	if base == "" && key == "" {
		fake := cryptopaytest.NewServer()
		return &apiEnv{client: fake.Client(), fake: fake, poll: 20 * time.Millisecond}, nil
	}
	if base == "" || key == "" {
		return nil, errors.New("set both CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY, or neither to use the fake server")
	}
	c, err := cryptopay.NewClient(base, key, cryptopay.WithHeader("User-Agent", "cryptopay-examples"))
	if err != nil {
		return nil, err
	}
	return &apiEnv{client: c, poll: cryptopay.DefaultPollInterval}, nil
}

// close stops the fake server, if any.
func (e *apiEnv) close() {
	if e.fake != nil {
		e.fake.Close()
	}
}

// newOrderID returns a fresh order id: unique per order, as reconciling a
// payout and signing a webhook URL require.
func newOrderID(prefix string) string { return prefix + "-" + uuid.NewString()[:8] }

// orders is the merchant's order book. Marking an order is idempotent, as a
// webhook callback must be: an event can arrive twice.
type orders struct {
	mu     sync.Mutex
	status map[string]cryptopay.PaymentStatus
}

func (o *orders) record(p *cryptopay.Payment) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.status[p.OrderID] = p.Status
}

func run(ctx context.Context, out io.Writer) error {
	env, err := connect()
	if err != nil {
		return err
	}
	defer env.close()
	secret, err := webhookSecret()
	if err != nil {
		return err
	}
	public := strings.TrimRight(os.Getenv("CRYPTOPAY_WEBHOOK_PUBLIC_URL"), "/")
	if env.fake == nil && public == "" {
		return errors.New("against a real API, set CRYPTOPAY_WEBHOOK_PUBLIC_URL to a URL that reaches this process")
	}

	ep, err := startEndpoint(ctx, env.client, secret, public)
	if err != nil {
		return err
	}
	defer ep.stop(ctx)
	fmt.Fprintf(out, "Webhook endpoint: %s\n", ep.url)

	payment, err := createPayment(ctx, out, env.client, secret, ep.url)
	if err != nil {
		return err
	}
	// Anyone can POST to the endpoint; without the token it is refused.
	forged := fmt.Sprintf(`{"paymentId":%q,"orderId":%q,"status":"paid"}`, payment.ID, payment.OrderID)
	if code, err := post(ctx, ep.url, forged); err == nil {
		fmt.Fprintf(out, "A forged \"paid\" event without a token is answered %d\n", code)
	}
	if err := waitWhilePaying(ctx, out, env, payment); err != nil {
		return err
	}
	return awaitOutcome(ctx, out, ep.events)
}

// endpoint is the merchant's webhook endpoint: a webhook.Handler
// on its own HTTP server.
type endpoint struct {
	url    string
	events chan *cryptopay.Payment // what the callback received
	srv    *http.Server
}

// startEndpoint serves the webhook handler on CRYPTOPAY_WEBHOOK_ADDR
// (default 127.0.0.1:0). Its URL is public, or the listener's address.
func startEndpoint(ctx context.Context, client *cryptopay.Client, secret []byte, public string) (*endpoint, error) {
	book := &orders{status: map[string]cryptopay.PaymentStatus{}}
	ep := &endpoint{events: make(chan *cryptopay.Payment, 16)}
	handler, err := webhook.NewHandler(webhook.Config{
		Secret: secret,
		Client: client, // every event is re-read through the API
		OnPayment: func(ctx context.Context, p *cryptopay.Payment) error {
			book.record(p)
			select {
			case ep.events <- p:
			default:
			}
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/cryptopay", handler)
	addr := os.Getenv("CRYPTOPAY_WEBHOOK_ADDR")
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ep.srv = newServer(mux)
	go func() { _ = ep.srv.Serve(ln) }()
	if public == "" {
		public = "http://" + ln.Addr().String()
	}
	ep.url = public + "/webhooks/cryptopay"
	return ep, nil
}

// newServer is an HTTP server for the webhook endpoint with every timeout
// set: a sender that is slow to send its headers, its body or to read the
// answer, or that keeps an idle connection, is cut off, and headers are
// capped. The handler bounds the body itself as well (Config.BodyReadTimeout
// and MinBodyRate), before the token is checked. WriteTimeout leaves room
// for the re-read through the API and the callback.
func newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

func (ep *endpoint) stop(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = ep.srv.Shutdown(sctx)
}

// createPayment creates a payment whose events come back to the endpoint.
func createPayment(ctx context.Context, out io.Writer, client *cryptopay.Client, secret []byte, endpoint string) (*cryptopay.Payment, error) {
	orderID := newOrderID("order")
	hookURL, err := webhook.URL(endpoint, secret, orderID)
	if err != nil {
		return nil, err
	}
	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount:     decimal.RequireFromString("25.75"),
		Currency:   "usdt",
		Network:    "tron",
		CustomerID: "customer-42",
		CustomerIP: "203.0.113.7",
		OrderID:    orderID,
		WebhookURL: hookURL,
	})
	if err != nil {
		return nil, fmt.Errorf("create payment: %w", err)
	}
	fmt.Fprintf(out, "Created payment %s for order %s (webhookUrl token not shown: it is a credential)\n", payment.ID, orderID)
	fmt.Fprintf(out, "  pay %s %s on %s to %s\n", payment.PayAmount, payment.Currency, payment.Network, payment.PayAddress)
	return payment, nil
}

// waitWhilePaying waits for the payment with the default intervals (2 s
// growing to 30 s) while the customer pays (on the fake: at once). The
// webhook wakes the wait the moment it arrives; polling is the fallback.
func waitWhilePaying(ctx context.Context, out io.Writer, env *apiEnv, payment *cryptopay.Payment) error {
	type result struct {
		p   *cryptopay.Payment
		err error
	}
	waited := make(chan result, 1)
	start := time.Now()
	go func() {
		p, err := env.client.WaitForPayment(ctx, cryptopay.WaitForPaymentParams{ID: payment.ID})
		waited <- result{p, err}
	}()
	if env.fake != nil {
		fmt.Fprintln(out, "Simulating the customer paying the full amount ...")
		if err := env.fake.Pay(payment.ID, payment.PayAmount); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "Waiting for the customer to pay (Ctrl-C to stop) ...")
	}
	r := <-waited
	if r.err != nil {
		return fmt.Errorf("wait for payment: %w", r.err)
	}
	fmt.Fprintf(out, "WaitForPayment returned %s after %s\n", r.p.Status, time.Since(start).Round(10*time.Microsecond))
	return nil
}

// awaitOutcome prints the callback's events until a terminal one, and what
// the merchant should do about it.
func awaitOutcome(ctx context.Context, out io.Writer, events <-chan *cryptopay.Payment) error {
	for {
		select {
		case p := <-events:
			paid := "nothing"
			if p.PaidAmount.Valid {
				paid = p.PaidAmount.Decimal.String() + " " + p.Currency
			}
			fmt.Fprintf(out, "Webhook callback received: payment %s of order %s is %s (paid %s, as read from the API)\n",
				p.ID, p.OrderID, p.Status, paid)
			if p.Status.IsTerminal() {
				fmt.Fprintln(out, verdict(p))
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// verdict says what to do with the order of a terminal payment.
func verdict(p *cryptopay.Payment) string {
	switch {
	case p.Status.IsSuccess() && !p.Status.NeedsAction():
		return fmt.Sprintf("Order %s can be fulfilled.", p.OrderID)
	case p.Status.NeedsAction():
		return fmt.Sprintf("Order %s needs a person to look at it.", p.OrderID)
	}
	return fmt.Sprintf("Order %s was not paid; do not fulfil it.", p.OrderID)
}

// webhookSecret reads CRYPTOPAY_WEBHOOK_SECRET or makes a random one.
func webhookSecret() ([]byte, error) {
	secret := []byte(strings.TrimSpace(os.Getenv("CRYPTOPAY_WEBHOOK_SECRET")))
	switch {
	case len(secret) == 0:
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // never fails (crypto/rand)
	case len(secret) < webhook.MinSecretLen:
		return nil, fmt.Errorf("CRYPTOPAY_WEBHOOK_SECRET must be at least %d bytes", webhook.MinSecretLen)
	}
	return secret, nil
}

func post(ctx context.Context, url, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
