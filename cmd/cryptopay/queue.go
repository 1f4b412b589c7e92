package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// intentOut is an intent as the CLI writes it: amounts as exact decimal
// strings, times in RFC 3339, the create parameters under their wire names.
type intentOut struct {
	OrderID      string   `json:"orderId"`
	State        string   `json:"state"`
	Attempts     int      `json:"attempts"`
	AttemptedAt  string   `json:"attemptedAt,omitempty"`
	Verdict      string   `json:"verdict,omitempty"`
	LastError    string   `json:"lastError,omitempty"`
	PayoutID     string   `json:"payoutId,omitempty"`
	PayoutStatus string   `json:"payoutStatus,omitempty"`
	Note         string   `json:"note,omitempty"`
	Hold         string   `json:"hold,omitempty"`
	CallbackDue  bool     `json:"callbackDue,omitempty"`
	EnqueuedBy   string   `json:"enqueuedBy,omitempty"`
	ApprovedBy   []string `json:"approvedBy,omitempty"`
	// ApprovedPrincipals are who approved it as the database and the tool
	// established (login and database role), one per approval.
	ApprovedPrincipals []string `json:"approvedPrincipals,omitempty"`
	ApprovalsNeeded    int      `json:"approvalsNeeded,omitempty"`
	NextAt             string   `json:"nextAt,omitempty"`
	CreatedAt          string   `json:"createdAt"`
	UpdatedAt          string   `json:"updatedAt"`
	Amount             string   `json:"amount"`
	Currency           string   `json:"currency"`
	Network            string   `json:"network"`
	WalletAddress      string   `json:"walletAddress"`
	NetworkFeeByUser   bool     `json:"networkFeeByUser"`
	CustomerID         string   `json:"customerId"`
	CustomerIP         string   `json:"customerIp"`
	AdditionalData     string   `json:"additionalData,omitempty"`
	WebhookURL         string   `json:"webhookUrl,omitempty"`
	// LastFailure is the latest failed read, send or OnFinal.
	LastFailure *failureOut `json:"lastFailure,omitempty"`
}

func newIntentOut(in *pgstore.Intent) intentOut {
	p := in.Params
	out := intentOut{
		OrderID: p.OrderID, State: string(in.State), Attempts: in.Attempts, AttemptedAt: when(in.AttemptedAt),
		Verdict: in.Verdict, LastError: in.LastError, PayoutID: in.PayoutID, PayoutStatus: string(in.PayoutStatus),
		Note: in.Note, Hold: in.Hold, CallbackDue: in.CallbackDue, CreatedAt: when(in.CreatedAt), UpdatedAt: when(in.UpdatedAt),
		EnqueuedBy: in.EnqueuedBy, ApprovedBy: in.ApprovedBy, ApprovedPrincipals: in.ApprovedPrincipals, ApprovalsNeeded: in.ApprovalsNeeded,
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

// queueHealth prints the queue's health summary (Queue.Health).
func (a *app) queueHealth(args []string) error {
	return healthCommand(a, command{"payout queue health", "", healthHelp("payouts", "intents not final")}, queueStore, args,
		a.openQueueReader, (*pgstore.Queue).Health)
}
