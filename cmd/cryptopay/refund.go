package main

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
)

// envClaimKey holds the claim links' signing key (pgstore/claim).
const envClaimKey = "CRYPTOPAY_CLAIM_KEY"

// refundsStore is the refunds' tables; a refund command opens the queue's
// and the tracker's on the same database too.
var refundsStore = store{"the refunds", "refunds", "refunds-table", pgstore.DefaultRefundsTable, "pgstore.RefundsConfig.Table", 4}

// openRefunds opens the refunds on the queue and the tracker of one
// database (db's tables), every table checked, as a move's stores; it
// returns the pool, for the caller to close.
func (a *app) openRefunds(db *dbFlags) (pgstore.Stores, *pgxpool.Pool, error) {
	var s pgstore.Stores
	rf, pool, err := openStore(a, db, refundsStore, func(pool *pgxpool.Pool, table string) (*pgstore.Refunds, error) {
		q, err := pgstore.NewQueue(a.ctx, pgstore.QueueConfig{Pool: pool, Table: db.table(queueStore)})
		if err != nil {
			return nil, err
		}
		tr, err := pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: db.table(trackerStore)})
		if err != nil {
			return nil, err
		}
		if err := errors.Join(q.CheckSchema(a.ctx), tr.CheckSchema(a.ctx)); err != nil {
			return nil, err
		}
		s.Queue, s.Tracker = q, tr
		return pgstore.NewRefunds(a.ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: table})
	})
	s.Refunds = rf
	return s, pool, err
}

// refundOut is a refund as the CLI writes it.
type refundOut struct {
	ID            string `json:"id"`
	OrderID       string `json:"orderId"`
	Rule          string `json:"rule"`
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	Network       string `json:"network"`
	WalletAddress string `json:"walletAddress,omitempty"`
	State         string `json:"state"`
	PayoutState   string `json:"payoutState,omitempty"`
	ClaimUntil    string `json:"claimUntil,omitempty"`
	ClaimLink     string `json:"claimLink,omitempty"`
	Created       bool   `json:"created"`
}

// refundCommand is the refund move's command: its flags are the move's
// fields (pgstore.Moves), with --claim-url and --claim-key-file.
var refundCommand = command{"payment refund", "ORDER_ID", "Refund a tracked payment (the moves table's refund, pgstore.Refunds): a payout intent in its\n" +
	"currency and network, held for approval (four eyes: your approval does not count), never above\n" +
	"what it paid, and the payment resolved as refunded, naming it. --rule excess refunds an\n" +
	"overpayment's excess, all_paid everything paid (paid_partial, expired or late), amount the\n" +
	"--amount given. With --wallet it is enqueued at once; without, it prints the claim link for the\n" +
	"customer (--claim-url, the key in $" + envClaimKey + " or --claim-key-file). The same\n" +
	"--idempotency-key again prints the same refund and its link, and creates nothing."}

// isRefund reports whether m is the payment's refund move.
func isRefund(m pgstore.Move) bool { return m.On == pgstore.ObjectPayment && m.Name == "refund" }

func (a *app) paymentRefund(m pgstore.Move, args []string) error {
	fs, db := a.newDBFlagSet(refundCommand, moveStores(m)...)
	values := moveFlags(fs, m)
	var keyFile, claimURL string
	fs.StringVar(&claimURL, "claim-url", "", "the `URL` the claim page is mounted at, for the link")
	fs.StringVar(&keyFile, "claim-key-file", "", "`file` holding the claim links' key (default $"+envClaimKey+")")
	actor := a.actorFlag(fs.FlagSet)
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	in, err := a.moveInput(refundCommand, m, pos[0], *actor, values)
	if err != nil {
		return err
	}
	key, err := a.claimKey(in.Values["wallet"], claimURL, keyFile)
	if err != nil {
		return err
	}
	s, pool, err := a.openRefunds(db)
	if err != nil {
		return err
	}
	defer pool.Close()
	moved, err := m.Do(a.ctx, s, in)
	if err != nil {
		return refundErr(err)
	}
	f := moved.Refund
	o := refundOut{ID: f.ID, OrderID: f.OrderID, Rule: string(f.Rule), Amount: money(f.Amount), Currency: f.Currency,
		Network: f.Network, WalletAddress: f.WalletAddress, State: string(f.State), PayoutState: string(f.PayoutState),
		ClaimUntil: when(f.ClaimUntil), Created: moved.RefundCreated}
	if f.State == pgstore.RefundAwaitingClaim && key != nil {
		if o.ClaimLink, err = claim.Link(claimURL, key, f.ID, f.ClaimUntil); err != nil {
			return err
		}
	}
	return a.printRefund(o, asJSON)
}

// claimKey reads and checks the claim links' key when the customer is to
// claim the refund (no wallet given): before the refund is made, so that
// a refund is never left without its link. Nil with a wallet.
func (a *app) claimKey(wallet, claimURL, keyFile string) ([]byte, error) {
	if wallet != "" {
		return nil, nil
	}
	if claimURL == "" {
		return nil, usageErr("payment refund: --claim-url is required without --wallet (the customer claims the refund there)")
	}
	key, err := a.secret(keyFile, envClaimKey, "claim key", "--claim-key-file")
	if err != nil {
		return nil, err
	}
	if _, err := claim.Link(claimURL, key, "refund-check", time.Now()); err != nil {
		return nil, usageErr("payment refund: %v", err)
	}
	return key, nil
}

// printRefund writes one refund as --output asks.
func (a *app) printRefund(o refundOut, asJSON bool) error {
	if asJSON {
		return a.printJSON(o)
	}
	return a.printRows([][2]string{
		{"Refund", o.ID}, {"Order ID", o.OrderID}, {"Rule", o.Rule}, {"Amount", o.Amount + " " + o.Currency + " on " + o.Network},
		{"Address", o.WalletAddress}, {"State", o.State}, {"Payout", o.PayoutState}, {"Claim until", o.ClaimUntil},
		{"Claim link", o.ClaimLink}, {"New", boolWord(o.Created)},
	})
}

// refundErr maps a refusal of Refunds to the CLI's exit codes: bad input
// is usage; a refund the payment cannot take is a negative answer.
func refundErr(err error) error {
	switch {
	case errors.Is(err, cryptopay.ErrInvalidParams), errors.Is(err, pgstore.ErrUnknownMove):
		return &exitError{exitUsage, err}
	case errors.Is(err, pgstore.ErrRefundExceedsPaid), errors.Is(err, pgstore.ErrNothingToRefund),
		errors.Is(err, pgstore.ErrRefundRule), errors.Is(err, pgstore.ErrRefundConflict), errors.Is(err, pgstore.ErrNotTracked),
		errors.Is(err, pgstore.ErrRefundNotFound):
		return &exitError{exitNo, err}
	}
	return err
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no (a refund with this key exists)"
}

func (a *app) paymentResolve(args []string) error {
	fs, db := a.newDBFlagSet(command{"payment resolve", "ORDER_ID", "Resolve a tracked payment that needed action (pgstore.Refunds.Resolve): --as refunded\n" +
		"(with --refund, one of its refunds), accepted (as paid) or written_off, with --note (required)\n" +
		"and --actor. Resolutions are appended, never changed: the last is in force."}, refundsStore, queueStore, trackerStore)
	as := fs.String("as", "", "how it was resolved: refunded, accepted or written_off (required)")
	refund := fs.String("refund", "", "the refund's `id`, with --as refunded")
	note := fs.String("note", "", "how and why (required)")
	a.writes(fs, outTable, outJSON) // a move's line by default; --output json
	actor := a.actorFlag(fs.FlagSet)
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	s, pool, err := a.openRefunds(db)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := s.Refunds.Resolve(a.ctx, pos[0], pgstore.ResolutionKind(*as), *refund, *actor, *note); err != nil {
		return refundErr(err)
	}
	return a.printDone(pos[0], "resolved as "+*as)
}
