package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// openQueue opens the payout queue (with no API client unless one is
// given: only resolve calls the API) and returns its pool, for the caller
// to close.
func (a *app) openQueue(f *dbFlags, g pgstore.Guardrails, client ...*cryptopay.Client) (*pgstore.Queue, *pgxpool.Pool, error) {
	return openStore(a, f, queueStore, func(pool *pgxpool.Pool, table string) (*pgstore.Queue, error) {
		qcfg := pgstore.QueueConfig{Pool: pool, Table: table, Guardrails: g}
		if len(client) > 0 {
			qcfg.Client = client[0]
		}
		return pgstore.NewQueue(a.ctx, qcfg)
	})
}

// openQueueReader opens the payout queue to read it or make an operator's
// move: no guardrails, no API client.
func (a *app) openQueueReader(f *dbFlags) (*pgstore.Queue, *pgxpool.Pool, error) {
	return a.openQueue(f, pgstore.Guardrails{})
}

// intentOut is an intent as the CLI writes it: amounts as exact decimal
// strings, times in RFC 3339, the create parameters under their wire names.
type intentOut struct {
	OrderID          string   `json:"orderId"`
	State            string   `json:"state"`
	Attempts         int      `json:"attempts"`
	AttemptedAt      string   `json:"attemptedAt,omitempty"`
	Verdict          string   `json:"verdict,omitempty"`
	LastError        string   `json:"lastError,omitempty"`
	PayoutID         string   `json:"payoutId,omitempty"`
	PayoutStatus     string   `json:"payoutStatus,omitempty"`
	Note             string   `json:"note,omitempty"`
	Hold             string   `json:"hold,omitempty"`
	CallbackDue      bool     `json:"callbackDue,omitempty"`
	EnqueuedBy       string   `json:"enqueuedBy,omitempty"`
	ApprovedBy       []string `json:"approvedBy,omitempty"`
	ApprovalsNeeded  int      `json:"approvalsNeeded,omitempty"`
	NextAt           string   `json:"nextAt,omitempty"`
	CreatedAt        string   `json:"createdAt"`
	UpdatedAt        string   `json:"updatedAt"`
	Amount           string   `json:"amount"`
	Currency         string   `json:"currency"`
	Network          string   `json:"network"`
	WalletAddress    string   `json:"walletAddress"`
	NetworkFeeByUser bool     `json:"networkFeeByUser"`
	CustomerID       string   `json:"customerId"`
	CustomerIP       string   `json:"customerIp"`
	AdditionalData   string   `json:"additionalData,omitempty"`
	WebhookURL       string   `json:"webhookUrl,omitempty"`
	// LastFailure is the latest failed read, send or OnFinal.
	LastFailure *failureOut `json:"lastFailure,omitempty"`
}

func newIntentOut(in *pgstore.Intent) intentOut {
	p := in.Params
	out := intentOut{
		OrderID: p.OrderID, State: string(in.State), Attempts: in.Attempts, AttemptedAt: when(in.AttemptedAt),
		Verdict: in.Verdict, LastError: in.LastError, PayoutID: in.PayoutID, PayoutStatus: string(in.PayoutStatus),
		Note: in.Note, Hold: in.Hold, CallbackDue: in.CallbackDue, CreatedAt: when(in.CreatedAt), UpdatedAt: when(in.UpdatedAt),
		EnqueuedBy: in.EnqueuedBy, ApprovedBy: in.ApprovedBy, ApprovalsNeeded: in.ApprovalsNeeded,
		Amount: money(p.Amount), Currency: p.Currency, Network: p.Network, WalletAddress: p.WalletAddress,
		NetworkFeeByUser: p.NetworkFeeByUser, CustomerID: p.CustomerID, CustomerIP: p.CustomerIP,
		AdditionalData: p.AdditionalData, WebhookURL: p.WebhookURL, LastFailure: newFailureOut(in.LastFailure),
	}
	if !in.State.IsFinal() {
		out.NextAt = when(in.NextAt)
	}
	return out
}

// eventOut is one entry of an intent's history as the CLI writes it.
type eventOut struct {
	At        string `json:"at"`
	Actor     string `json:"actor"`
	ActorID   string `json:"actorId,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	Attempts  int    `json:"attempts"`
	Verdict   string `json:"verdict,omitempty"`
	Error     string `json:"error,omitempty"`
	Note      string `json:"note,omitempty"`
	PayoutID  string `json:"payoutId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// intentDetail is what 'payout queue show' writes: the intent and its
// history, oldest first.
type intentDetail struct {
	intentOut
	History []eventOut `json:"history"`
}

// holdAdvice says what an operator does about a parked intent's hold.
var holdAdvice = map[string]string{
	pgstore.HoldServerActed: "the create request was answered 2xx but the answer could not be matched to it: the server acted. " +
		"Look for the payout under the ids in the last error (perhaps under an altered order id) before anything else; " +
		"the queue will not send it again by itself; if the dashboard shows the payout under this order id, 'payout queue resolve --payout-id'",
	pgstore.HoldMaxAttempts: "the queue sent its maximum of attempts and the payout list still shows none: ask the processor why " +
		"before a retry; the queue will not send it again by itself",
}

// stateAdvice says what an operator does about an intent in each state
// that asks for one.
var stateAdvice = map[pgstore.IntentState]string{
	pgstore.StateNeedsApproval: "waits for a person: 'payout queue approve' or 'payout queue reject'",
	pgstore.StateParked: "the queue could not tell whether the payout was created and will not resend on a guess; " +
		"look the order id up in the processor's dashboard; only if no payout exists, 'payout queue retry' (a retry of a payout that exists pays it twice)",
}

func (a *app) queueList(args []string) error {
	fs, db := a.newDBFlagSet(command{"payout queue list", "", "List the payout queue's intents in orderId order (also: 'payout queue' alone).\n" +
		"States: " + strings.Join(names(pgstore.States()), ", ") + "."}, queueStore)
	list := a.registerList(fs, "intents")
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	filter := pgstore.ListFilter{After: list.after, Limit: list.limit}
	if filter.States, err = parseList(fs.cmd.name, list, pgstore.States()); err != nil {
		return err
	}
	ins, err := withStore(a, a.openQueueReader, db, func(q *pgstore.Queue) ([]pgstore.Intent, error) {
		return q.List(a.ctx, filter)
	})
	if err != nil {
		return err
	}
	return printList(a, asJSON, ins, newIntentOut,
		[]string{"ORDER ID", "STATE", "AMOUNT", "CURRENCY", "NETWORK", "ATTEMPTS", "PAYOUT ID", "VERDICT", "UPDATED", "FAILING", "LAST ERROR"},
		func(in *pgstore.Intent) []string {
			p := in.Params
			return []string{p.OrderID, string(in.State), money(p.Amount), p.Currency, p.Network, strconv.Itoa(in.Attempts),
				in.PayoutID, in.Verdict, when(in.UpdatedAt), failingCell(in.LastFailure), in.LastError}
		})
}

func (a *app) queueShow(args []string) error {
	fs, db := a.newDBFlagSet(command{"payout queue show", "ORDER_ID", "Show one intent of the payout queue: its state, attempts, last error,\n" +
		"reconciliation verdict, payout id, hold, the operator's note, and its history:\n" +
		"every change and operator action, oldest first."}, queueStore)
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	in, hist, err := readRecord[*pgstore.Intent, pgstore.Event](a, a.openQueueReader, db, pos[0])
	if err != nil {
		return err
	}
	o := newIntentOut(in)
	d := intentDetail{intentOut: o, History: historyOut(hist)}
	if asJSON {
		return a.printJSON(d)
	}
	if err := a.printRows([][2]string{
		{"Order ID", o.OrderID},
		{"State", stateLine(in)},
		{"Attempts", strconv.Itoa(o.Attempts)},
		{"Last attempt", o.AttemptedAt},
		{"Verdict", o.Verdict},
		{"Last error", o.LastError},
		{"Last failure", failureLine(in.LastFailure)},
		{"Payout ID", o.PayoutID},
		{"Payout status", o.PayoutStatus},
		{"Note", o.Note},
		{"Hold", o.Hold},
		{"Enqueued by", o.EnqueuedBy},
		{"Approvals", approvalsText(in)},
		{"Next look", o.NextAt},
		{"Amount", o.Amount + " " + o.Currency + " on " + o.Network},
		{"Wallet address", o.WalletAddress},
		{"Network fee paid by user", strconv.FormatBool(o.NetworkFeeByUser)},
		{"Customer", o.CustomerID + " (" + o.CustomerIP + ")"},
		{"Additional data", o.AdditionalData},
		{"Webhook URL", o.WebhookURL},
		{"Enqueued", o.CreatedAt},
		{"Updated", o.UpdatedAt},
	}); err != nil {
		return err
	}
	rows := make([][]string, len(d.History))
	for i, e := range d.History {
		from := e.From
		if from == "" {
			from = "(enqueued)"
		}
		rows[i] = []string{e.At, e.Actor, e.ActorID, from + " -> " + e.To, strconv.Itoa(e.Attempts), e.Verdict, e.RequestID, e.Note, e.Error}
	}
	a.printLine("")
	a.printLine("History:")
	return a.printTable([]string{"AT", "BY", "WHO", "CHANGE", "ATTEMPTS", "VERDICT", "REQUEST ID", "NOTE", "ERROR"}, rows)
}

// stateLine is show's state of in, with what to do when it waits for a
// person and whether its final callback is still due.
func stateLine(in *pgstore.Intent) string {
	state := string(in.State)
	if advice, ok := holdAdvice[in.Hold]; ok && in.State == pgstore.StateParked {
		state += " (" + advice + ")"
	} else if advice, ok := stateAdvice[in.State]; ok {
		state += " (" + advice + ")"
	}
	if in.CallbackDue {
		state += " (final; the application's OnFinal has not run yet: a worker with OnFinal runs it)"
	}
	return state
}

// historyOut is an intent's history as the CLI writes it.
func historyOut(hist []pgstore.Event) []eventOut {
	out := make([]eventOut, len(hist))
	for i, e := range hist {
		out[i] = eventOut{At: when(e.At), Actor: e.Actor, ActorID: e.ActorID, From: string(e.From), To: string(e.To), Attempts: e.Attempts,
			Verdict: e.Verdict, Error: e.Error, Note: e.Note, PayoutID: e.PayoutID, RequestID: e.RequestID}
	}
	return out
}

// approvalsText is "1 of 2: alice" for an intent held for approval ("" for
// any other).
func approvalsText(in *pgstore.Intent) string {
	if in.State != pgstore.StateNeedsApproval {
		return ""
	}
	s := fmt.Sprintf("%d of %d", len(in.ApprovedBy), in.ApprovalsNeeded)
	if len(in.ApprovedBy) > 0 {
		s += ": " + strings.Join(in.ApprovedBy, ", ")
	}
	return s
}

func (a *app) queueApprove(args []string) error {
	return a.queueOperate(command{"payout queue approve", "ORDER_ID", "Approve an intent that waits for approval (needs_approval). Four eyes: it is queued\n" +
		"and sent (still subject to the workers' other guardrails) once the number of distinct\n" +
		"people the queue requires have approved it (default 2); --actor's approval counts once,\n" +
		"and not at all if --actor enqueued it."}, "note", false, args,
		(*pgstore.Queue).Approve, "")
}

func (a *app) queueReject(args []string) error {
	return a.queueOperate(command{"payout queue reject", "ORDER_ID", "Reject an intent that waits for approval (needs_approval): final, nothing is\n" +
		"sent. The CLI has no final callback: the intent is left with its callback due, and the\n" +
		"application's workers (those with OnFinal) run it once."}, "reason", true, args,
		(*pgstore.Queue).Reject, "rejected: nothing will be sent")
}

func (a *app) queueRetry(args []string) error {
	return a.queueOperate(command{"payout queue retry", "ORDER_ID", "Queue a parked intent for a new attempt. Only after you checked with the processor\n" +
		"(its dashboard, by order id) that NO payout exists for it: the queue could not tell,\n" +
		"and retrying a payout that exists pays it twice. --note records who checked and how."}, "note", true, args,
		(*pgstore.Queue).Retry, "queued for a new attempt")
}

// queueResolve binds a parked intent to the payout the operator found at
// the processor (Queue.Resolve): the one queue command that calls the API,
// to read that payout and check it is the intent's.
func (a *app) queueResolve(args []string) error {
	cmd := command{"payout queue resolve", "ORDER_ID", "Record, for a parked intent, the payout you found in the processor's dashboard: its\n" +
		"payout id is read through the API (--base-url, $CRYPTOPAY_API_KEY), and accepted only if it\n" +
		"names this order id, amount, currency, network and wallet address and no other intent holds\n" +
		"it. The intent becomes created; the application's workers follow it to its final status and\n" +
		"run its callback. Nothing is sent. --note records who checked and how."}
	fs, db := a.newDBAPIFlagSet(cmd, queueStore)
	payoutID := fs.String("payout-id", "", "the payout's `id` in the processor's dashboard (required)")
	note := fs.String("note", "", "what is recorded with the intent: who, and why (required)")
	a.writes(fs, outTable, outJSON) // a move's line by default; --output json
	actor := a.actorFlag(fs.FlagSet)
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *payoutID == "" || strings.TrimSpace(*note) == "" {
		return usageErr("%s: --payout-id and --note are required", cmd.name)
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	q, pool, err := a.openQueue(db, pgstore.Guardrails{}, client)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := q.Resolve(a.ctx, pos[0], *payoutID, *actor, *note); err != nil {
		if errors.Is(err, pgstore.ErrIntentState) || errors.Is(err, cryptopay.ErrInvalidParams) {
			return &exitError{exitNo, err}
		}
		return err
	}
	return a.printDone(pos[0], "created, payout "+*payoutID+": the workers follow it to its end")
}

// queueOperate runs an operator's move (approve, reject, retry) with its
// note flag, required or not, in the name of --actor. An empty done is
// an approval's: the line says whether it queued the intent.
func (a *app) queueOperate(cmd command, noteFlag string, noteRequired bool, args []string,
	op func(*pgstore.Queue, context.Context, string, string, string) error, done string) error {
	fs, db := a.newDBFlagSet(cmd, queueStore)
	a.writes(fs, outTable, outJSON) // a move's line by default; --output json
	actor := a.actorFlag(fs.FlagSet)
	usage := "what is recorded with the intent: who, and why"
	if noteRequired {
		usage += " (required)"
	}
	note := fs.String(noteFlag, "", usage)
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if noteRequired && strings.TrimSpace(*note) == "" {
		return usageErr("%s: --%s is required", cmd.name, noteFlag)
	}
	q, pool, err := a.openQueueReader(db)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := op(q, a.ctx, pos[0], *actor, *note); err != nil {
		return operateExit(err)
	}
	if done == "" {
		done, err = approvalLine(a.ctx, q, pos[0])
	}
	return errors.Join(a.printDone(pos[0], done), err)
}

// operateExit maps an operator's refused move to its exit code.
func operateExit(err error) error {
	var ve *cryptopay.ValidationError
	switch {
	case errors.As(err, &ve):
		return &exitError{exitUsage, err}
	case errors.Is(err, pgstore.ErrIntentState), errors.Is(err, pgstore.ErrApprovalNotCounted):
		return &exitError{exitNo, err}
	}
	return err
}

// approvalLine says what an approval did: queued the intent, or recorded
// one approval of the number it needs.
func approvalLine(ctx context.Context, q *pgstore.Queue, orderID string) (string, error) {
	in, err := q.Get(ctx, orderID)
	if err != nil {
		return "approved", err
	}
	if in.State != pgstore.StateNeedsApproval {
		return "approved: queued to be sent", nil
	}
	return fmt.Sprintf("approval %d of %d recorded: it waits for another person's approval", len(in.ApprovedBy), in.ApprovalsNeeded), nil
}

// actorFlag registers --actor: who makes the move, recorded in the
// intent's history (default: the operating system's user).
func (a *app) actorFlag(fs *flag.FlagSet) *string {
	def := a.getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		def = u.Username
	}
	return fs.String("actor", def, "`who` makes the move, recorded in the history (four eyes: two approvals need two actors)")
}

// queueHealth prints the queue's health summary (Queue.Health).
func (a *app) queueHealth(args []string) error {
	return healthCommand(a, command{"payout queue health", "", healthHelp("payouts", "intents not final")}, queueStore, args,
		a.openQueueReader, (*pgstore.Queue).Health)
}
