package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// The operators' moves as commands: 'payout queue NAME ORDER_ID' and
// 'payment tracked NAME ORDER_ID' for every move of pgstore.Moves, with
// a flag per field of the move, --actor, and the database flags.

// moveCommand is the command of m: its name, argument and help. A
// payment's refund is 'payment refund' (it prints the claim link).
func moveCommand(m pgstore.Move) command {
	name, help := "payout queue "+m.Name, m.Verb+" a payout intent"
	switch {
	case isRefund(m):
		return refundCommand
	case m.On == pgstore.ObjectPayment:
		name, help = "payment tracked "+m.Name, m.Verb+": a tracked payment "+m.Payments
	}
	if len(m.From) > 0 {
		help += " in " + strings.Join(names(m.From), " or ") + " (it moves to " + string(m.To) + ")"
	}
	help += ". " + m.Confirm + " --actor is recorded in the history; four eyes counts the operating system's user " +
		"and the database role too, whatever --actor says."
	if m.To.IsFinal() {
		help += " The CLI has no final callback: the intent is left with its callback due, and the " +
			"application's workers (those with OnFinal) run it once."
	}
	if m.NeedsAPI {
		help += " The payout is read through the API (--base-url, $CRYPTOPAY_API_KEY). Nothing is sent."
	}
	return command{name, "ORDER_ID", wrapText(help, 90)}
}

// wrapText breaks s into lines of at most width bytes, between words.
func wrapText(s string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case line+1+len(w) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// runMove runs the move m on the record its argument names, in the name
// of --actor, as the operating system's user.
func (a *app) runMove(m pgstore.Move, args []string) error {
	cmd := moveCommand(m)
	fs, db := a.newDBFlagSet(cmd, moveStores(m)...)
	if m.NeedsAPI {
		fs, db = a.newDBAPIFlagSet(cmd, moveStores(m)...)
	}
	a.writes(fs, outTable, outJSON) // a move's line by default; --output json
	values := moveFlags(fs, m)
	actor := a.actorFlag(fs.FlagSet)
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	in, err := a.moveInput(cmd, m, pos[0], *actor, values)
	if err != nil {
		return err
	}
	s, pool, err := a.openMoveStores(m, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	moved, err := m.Do(a.ctx, s, in)
	if err != nil {
		return operateExit(err)
	}
	line, code := movedLine(m, moved)
	if err := a.printDone(pos[0], a.safeText(line)); err != nil {
		return err
	}
	if code != exitOK {
		return quietExit(code)
	}
	return nil
}

// moveStores are the tables m moves (their flags).
func moveStores(m pgstore.Move) []store {
	switch {
	case m.NeedsRefunds:
		return []store{refundsStore, queueStore, trackerStore}
	case m.On == pgstore.ObjectPayment:
		return []store{trackerStore}
	}
	return []store{queueStore}
}

// moveFlags registers a flag per field of m.
func moveFlags(fs *cmdFlags, m pgstore.Move) map[string]*string {
	values := map[string]*string{}
	for _, f := range m.Fields {
		values[f.Name] = fs.String(f.Name, "", f.Usage)
	}
	return values
}

// moveInput is m's input from its flags' values, as actor; a required
// field not given is a usage error, before anything is opened.
func (a *app) moveInput(cmd command, m pgstore.Move, orderID, actor string, values map[string]*string) (pgstore.MoveInput, error) {
	in := pgstore.MoveInput{OrderID: orderID, By: pgstore.Operator{ID: actor, Login: a.login()}, Values: map[string]string{}}
	for _, f := range m.Fields {
		if in.Values[f.Name] = *values[f.Name]; f.Required && strings.TrimSpace(*values[f.Name]) == "" {
			return in, usageErr("%s: --%s is required", cmd.name, f.Name)
		}
	}
	return in, nil
}

// openMoveStores opens the store m moves (with an API client when it
// reads the API) and returns its pool, for the caller to close.
func (a *app) openMoveStores(m pgstore.Move, db *dbFlags) (pgstore.Stores, *pgxpool.Pool, error) {
	if m.NeedsRefunds {
		return a.openRefunds(db)
	}
	if m.On == pgstore.ObjectPayment {
		tr, pool, err := a.openTracker(db)
		return pgstore.Stores{Tracker: tr}, pool, err
	}
	var clients []*cryptopay.Client
	if m.NeedsAPI {
		client, err := a.client()
		if err != nil {
			return pgstore.Stores{}, nil, err
		}
		clients = append(clients, client)
	}
	q, pool, err := a.openQueue(db, pgstore.Guardrails{}, clients...)
	return pgstore.Stores{Queue: q}, pool, err
}

// movedLine says what a move changed, from what it returned, and the
// exit code (exitNo: nothing was there to change).
func movedLine(m pgstore.Move, moved pgstore.Moved) (string, int) {
	in := moved.Intent
	switch {
	case moved.Resolution != nil:
		return "resolved as " + string(moved.Resolution.Kind), exitOK
	case m.On == pgstore.ObjectPayment && moved.Cleared == "":
		return "no anomaly to clear", exitNo
	case m.On == pgstore.ObjectPayment:
		return "anomaly cleared: " + moved.Cleared, exitOK
	case in.State == pgstore.StateNeedsApproval:
		return fmt.Sprintf("approval %d of %d recorded: it waits for another person's approval", len(in.ApprovedBy), in.ApprovalsNeeded), exitOK
	case in.State == pgstore.StateQueued && m.Name == "approve":
		return "approved: queued to be sent", exitOK
	case in.State == pgstore.StateQueued:
		return "queued for a new attempt", exitOK
	case in.State == pgstore.StateCreated:
		return "created, payout " + in.PayoutID + ": the workers follow it to its end", exitOK
	case in.State == pgstore.StateRejected:
		return m.Done + ": nothing will be sent", exitOK
	}
	return m.Done + ": now " + string(in.State), exitOK
}

// operateExit maps an operator's refused move to its exit code: a
// payout id that is not the intent's is a negative answer, other bad
// input a usage error.
func operateExit(err error) error {
	var ve *cryptopay.ValidationError
	switch {
	case errors.As(err, &ve) && ve.Field == "payoutID":
		return &exitError{exitNo, err}
	case errors.As(err, &ve):
		return &exitError{exitUsage, err}
	case errors.Is(err, pgstore.ErrIntentState), errors.Is(err, pgstore.ErrApprovalNotCounted), errors.Is(err, pgstore.ErrChanged):
		return &exitError{exitNo, err}
	}
	return err
}

// actorFlag registers --actor: who makes the move, recorded in the
// history (default: the operating system's user).
func (a *app) actorFlag(fs *flag.FlagSet) *string {
	return fs.String("actor", a.login(), "`who` makes the move, recorded in the history (four eyes counts the operating system's user and the database role, whatever --actor says)")
}

// osLogin is the operating system's user the CLI runs as, from the
// system's user database (never $USER, which the caller sets): the login
// of every move's principal. Without a name, its uid.
func osLogin() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid-" + strconv.Itoa(os.Getuid())
}

// envClaimKey holds the claim links' signing key (pgstore/claim).
const envClaimKey = "CRYPTOPAY_CLAIM_KEY"

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
