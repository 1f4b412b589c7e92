package main

import (
	"errors"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
)

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
