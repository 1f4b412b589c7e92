// Command refunds runs an overpayment and an underpayment through the
// refund flow, end to end, on the bundled fake API and your PostgreSQL:
//
//	CRYPTOPAY_DATABASE_URL=postgres://shop@127.0.0.1/shop go run ./examples/refunds
//
// (from the pgstore directory). It needs a database it may create tables
// in (the queue's, the tracker's and the refunds', with their default
// names): it cannot start PostgreSQL by itself. Its test runs it on a
// throwaway server.
//
// The overpayment: the customer pays 10.5 of 10 usdt; the tracker records
// paid_over; an operator refunds the excess; the customer opens the claim
// link and gives their address on the claim page (a plain HTTP client
// here: the page needs no JavaScript); two other people approve; the
// queue's worker sends the payout; the fake pays it; the claim page says
// Paid; the payment is resolved as refunded. The underpayment: 4 of 10
// usdt, paid_partial; the operator has the customer's address, refunds
// all that was paid, two people approve, it is paid and resolved. Last,
// the books check ties each payment's money in with its refunds out.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Getenv("CRYPTOPAY_DATABASE_URL"), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "refunds:", err)
		os.Exit(1)
	}
}

// The customer's wallet on tron (the fake's payments are usdt on tron).
const customerWallet = "TMGN4ZGYBvvqVAX3BXXHwrxtzreXVDLJ2G"

// shop is the merchant's side: the fake API, the queue and the tracker
// running, the refunds, and the claim page on loopback.
type shop struct {
	fake     *cryptopaytest.Server
	client   *cryptopay.Client
	pool     *pgxpool.Pool
	queue    *pgstore.Queue
	tracker  *pgstore.Tracker
	refunds  *pgstore.Refunds
	claimURL string
	claimKey []byte
	out      io.Writer
	run      string // this run's suffix of orderIds and keys
}

// run plays both stories on the database dsn and prints what happens.
func run(ctx context.Context, dsn string, out io.Writer) error {
	if dsn == "" {
		return errors.New("set CRYPTOPAY_DATABASE_URL to a PostgreSQL database it may create tables in")
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return errors.New("CRYPTOPAY_DATABASE_URL: not a connection string") // its text may hold the password
	}
	defer pool.Close()
	s, stop, err := start(ctx, pool, out)
	if err != nil {
		return err
	}
	defer stop()
	if err := s.overpayment(ctx); err != nil {
		return fmt.Errorf("overpayment: %w", err)
	}
	if err := s.underpayment(ctx); err != nil {
		return fmt.Errorf("underpayment: %w", err)
	}
	if err := s.books(ctx); err != nil {
		return fmt.Errorf("books: %w", err)
	}
	return nil
}

// books runs the books check with the refunds section and prints this
// run's refunded payments: each one's paid amount (ours) against its
// refunds' payouts on the provider's list (theirs).
func (s *shop) books(ctx context.Context) error {
	b, err := pgstore.NewBooks(pgstore.BooksConfig{Client: s.client, Queue: s.queue, Tracker: s.tracker, Refunds: s.refunds,
		SettleTime: time.Millisecond})
	if err != nil {
		return err
	}
	var lines []string
	sum, err := b.Check(ctx, func(it pgstore.BooksItem) error {
		if it.Section == "refunds" && strings.HasSuffix(it.OrderID, s.run) {
			lines = append(lines, fmt.Sprintf("  %s: %s, paid in %s, refunded out %s\n", it.OrderID, it.Class, it.Ours.Decimal, it.Theirs.Decimal))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if why := sum.Unfinished["refunds"]; why != "" {
		return errors.New("the refunds section did not finish: " + why)
	}
	slices.Sort(lines)
	fmt.Fprintf(s.out, "books, refunds section:\n%s", strings.Join(lines, ""))
	return nil
}

// start builds the shop and runs its workers and claim page until stop.
func start(ctx context.Context, pool *pgxpool.Pool, out io.Writer) (*shop, func(), error) {
	fake := cryptopaytest.NewServer(cryptopaytest.WithBalance("usdt", "tron", decimal.NewFromInt(1000)))
	s := &shop{fake: fake, client: fake.Client(), pool: pool, out: out, claimKey: make([]byte, 32), run: randomHex(4)}
	_, _ = rand.Read(s.claimKey) // a real shop reads it from its configuration
	var err error
	s.queue, err = pgstore.NewQueue(ctx, pgstore.QueueConfig{Pool: pool, Client: s.client, CreateTable: true,
		PollInterval: 20 * time.Millisecond, FollowEvery: 20 * time.Millisecond, Lease: 4 * time.Second, SendTimeout: time.Second,
		ReconcileSettleTime: 300 * time.Millisecond, ReconcileClockSkew: time.Second})
	if err == nil {
		s.tracker, err = pgstore.NewTracker(ctx, pgstore.TrackerConfig{Pool: pool, Client: s.client, CreateTable: true,
			OpenEvery: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	}
	if err == nil {
		s.refunds, err = pgstore.NewRefunds(ctx, pgstore.RefundsConfig{Queue: s.queue, Tracker: s.tracker, CreateTable: true})
	}
	var page http.Handler
	if err == nil {
		page, err = claim.New(claim.Config{Refunds: s.refunds, Key: s.claimKey})
	}
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		fake.Close()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/refund", page)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.claimURL = "http://" + ln.Addr().String() + "/refund"
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = s.queue.Run(wctx); done <- struct{}{} }()
	go func() { _ = s.tracker.Run(wctx); done <- struct{}{} }()
	return s, func() {
		cancel()
		<-done
		<-done
		_ = srv.Close()
		fake.Close()
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pay creates a payment of 10 usdt for orderID, tracks it, has the
// customer pay paid, and waits for the tracker to record want.
func (s *shop) pay(ctx context.Context, orderID, paid string, want cryptopay.PaymentStatus) error {
	p, err := s.client.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.NewFromInt(10), Currency: "usdt",
		Network: "tron", CustomerID: "cust-" + orderID, CustomerIP: "203.0.113.7", OrderID: orderID})
	if err != nil {
		return err
	}
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { _, err := s.tracker.Track(ctx, tx, p); return err }); err != nil {
		return err
	}
	if err := s.fake.Pay(p.ID, decimal.RequireFromString(paid)); err != nil {
		return err
	}
	return until(ctx, "the tracker records "+string(want), func() (bool, error) {
		tp, err := s.tracker.Get(ctx, orderID)
		return err == nil && tp.Status == want, err
	})
}

// approveAndPay has two people approve the refund's payout, waits for the
// worker to create it, pays it at the fake and waits for paid.
func (s *shop) approveAndPay(ctx context.Context, id string) error {
	for _, who := range []string{"bob", "carol"} {
		if err := s.queue.Approve(ctx, id, who, "checked the ticket"); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.out, "  approved by bob and carol (four eyes)\n")
	if err := until(ctx, "the payout is created", func() (bool, error) {
		in, err := s.queue.Get(ctx, id)
		return err == nil && in.State == pgstore.StateCreated, err
	}); err != nil {
		return err
	}
	in, err := s.queue.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.fake.SetPayoutStatus(in.PayoutID, cryptopay.PayoutProcessing); err != nil {
		return err
	}
	if err := s.fake.SetPayoutStatus(in.PayoutID, cryptopay.PayoutPaid); err != nil {
		return err
	}
	return until(ctx, "the payout is paid", func() (bool, error) {
		in, err := s.queue.Get(ctx, id)
		return err == nil && in.State == pgstore.StatePaid, err
	})
}

func (s *shop) overpayment(ctx context.Context) error {
	order := "order-over-" + s.run
	fmt.Fprintf(s.out, "overpayment %s: 10.5 paid of 10 usdt\n", order)
	if err := s.pay(ctx, order, "10.5", cryptopay.PaymentPaidOver); err != nil {
		return err
	}
	f, _, err := s.refunds.Create(ctx, pgstore.RefundParams{OrderID: order, Key: "ticket-1-" + s.run, Rule: pgstore.RefundExcess,
		CustomerID: "cust-" + order, Actor: "alice", Note: "customer overpaid"})
	if err != nil {
		return err
	}
	link, err := claim.Link(s.claimURL, s.claimKey, f.ID, f.ClaimUntil)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  refund %s of %s %s, awaiting the customer's claim\n", f.ID, f.Amount, f.Currency)
	status, err := s.customerClaims(ctx, link, customerWallet)
	if err != nil {
		return err
	}
	page, err := get(ctx, status)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  the customer claimed it; their page says: %s\n", statusOf(page))
	if err := s.approveAndPay(ctx, f.ID); err != nil {
		return err
	}
	if page, err = get(ctx, status); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  their page says: %s\n", statusOf(page))
	return s.resolve(ctx, order, f.ID)
}

func (s *shop) underpayment(ctx context.Context) error {
	order := "order-under-" + s.run
	fmt.Fprintf(s.out, "underpayment %s: 4 paid of 10 usdt\n", order)
	if err := s.pay(ctx, order, "4", cryptopay.PaymentPaidPartial); err != nil {
		return err
	}
	f, _, err := s.refunds.Create(ctx, pgstore.RefundParams{OrderID: order, Key: "ticket-2-" + s.run, Rule: pgstore.RefundAllPaid,
		WalletAddress: customerWallet, CustomerID: "cust-" + order, CustomerIP: "203.0.113.7", Actor: "alice",
		Note: "customer cancelled the order"})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  refund %s of %s %s to the address on file, held for approval\n", f.ID, f.Amount, f.Currency)
	if err := s.approveAndPay(ctx, f.ID); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  paid\n")
	return s.resolve(ctx, order, f.ID)
}

// resolve records the payment as refunded and prints what the payment's
// refunds add up to.
func (s *shop) resolve(ctx context.Context, order, refundID string) error {
	if err := s.refunds.Resolve(ctx, order, pgstore.ResolutionRefunded, refundID, "alice", "refund paid"); err != nil {
		return err
	}
	fs, err := s.refunds.List(ctx, order)
	if err != nil {
		return err
	}
	sum := decimal.Zero
	for _, f := range fs {
		sum = sum.Add(f.Amount)
	}
	fmt.Fprintf(s.out, "  resolved as refunded; refunds of %s: %d, %s usdt\n", order, len(fs), sum)
	return nil
}

// customerClaims opens the claim link, posts the address in its form, and
// returns the status link the page sends the browser on to.
func (s *shop) customerClaims(ctx context.Context, link, wallet string) (string, error) {
	if _, err := get(ctx, link); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, link, strings.NewReader(url.Values{"address": {wallet}}.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("the claim page answered %s", resp.Status)
	}
	next, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil {
		return "", err
	}
	return next.String(), nil
}

// get returns the page at link (200 only).
func get(ctx context.Context, link string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the claim page answered %s", resp.Status)
	}
	return string(b), err
}

var statusRe = regexp.MustCompile(`id="status">([^<]*)<`)

// statusOf is the status word on a claim page.
func statusOf(page string) string {
	if m := statusRe.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return "(no status)"
}

// until polls cond every 20 ms until it holds, fails or 30 s pass.
func until(ctx context.Context, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}
