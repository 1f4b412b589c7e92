package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// trackedOut is a tracked payment as the CLI writes it: amounts as exact
// decimal strings, times in RFC 3339.
type trackedOut struct {
	OrderID     string      `json:"orderId"`
	PaymentID   string      `json:"paymentId,omitempty"`
	State       string      `json:"state"`
	Status      string      `json:"status,omitempty"`
	PaidAmount  string      `json:"paidAmount,omitempty"`
	PayAmount   string      `json:"payAmount,omitempty"`
	Currency    string      `json:"currency,omitempty"`
	Network     string      `json:"network,omitempty"`
	ExpiredAt   string      `json:"expiredAt,omitempty"`
	NeedsAction bool        `json:"needsAction"`
	Anomaly     string      `json:"anomaly,omitempty"`
	Note        string      `json:"note,omitempty"`
	Changes     int         `json:"changes"`
	NextAt      string      `json:"nextAt,omitempty"`
	TrackedAt   string      `json:"trackedAt"`
	UpdatedAt   string      `json:"updatedAt"`
	LastFailure *failureOut `json:"lastFailure,omitempty"`
	History     []changeOut `json:"history,omitempty"`
	Moves       []moveOut   `json:"moves,omitempty"`
}

// moveOut is one operator's move (pgstore.Tracker.Moves): who made it.
type moveOut struct {
	At      string `json:"at"`
	ActorID string `json:"actorId"`
	Action  string `json:"action"`
	Anomaly string `json:"anomaly,omitempty"`
	Note    string `json:"note,omitempty"`
}

// changeOut is one recorded change.
type changeOut struct {
	Seq      int    `json:"seq"`
	From     string `json:"from"`
	To       string `json:"to"`
	FromPaid string `json:"fromPaid,omitempty"`
	ToPaid   string `json:"toPaid,omitempty"`
	Late     bool   `json:"late"`
	At       string `json:"at"`
}

func newTrackedOut(tp *pgstore.TrackedPayment) trackedOut {
	return trackedOut{
		OrderID: tp.OrderID, PaymentID: tp.PaymentID, State: string(tp.State), Status: string(tp.Status),
		PaidAmount: nullMoney(tp.PaidAmount), PayAmount: nullMoney(tp.PayAmount), Currency: tp.Currency, Network: tp.Network,
		ExpiredAt: when(tp.ExpiredAt), NeedsAction: tp.NeedsAction, Anomaly: tp.Anomaly, Note: tp.Note, Changes: tp.Changes,
		NextAt: when(tp.NextAt), TrackedAt: when(tp.TrackedAt), UpdatedAt: when(tp.UpdatedAt),
		LastFailure: newFailureOut(tp.LastFailure),
	}
}

// trackStates are the tracker states and what an operator reads in each.
var trackStates = []pgstore.TrackState{pgstore.TrackUnmatched, pgstore.TrackOpen, pgstore.TrackLate, pgstore.TrackClosed}

func (a *app) trackedList(args []string) error {
	fs, db := a.newDBFlagSet(command{"payment tracked", "", "List the payment tracker's payments in orderId order (pgstore.Tracker):\n" +
		"unmatched (tracked by orderId alone, waiting for its first webhook), open (before expiredAt),\n" +
		"late (past expiredAt, read less often for late transfers), closed. Also\n" +
		"'payment tracked show ORDER_ID' for one payment and its history,\n" +
		"'payment tracked health' for a summary (due, overdue, failing, the commonest failure), and\n" +
		"'payment tracked clear-anomaly ORDER_ID --note TEXT' once a person has looked into one."}, trackerStore)
	action := fs.Bool("needs-action", false, "keep only payments a person should look at (locked, paid_partial, paid_over, or an anomaly)")
	list := a.registerList(fs, "payments")
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	filter := pgstore.TrackFilter{NeedsAction: *action, After: list.after, Limit: list.limit}
	if filter.States, err = parseList(fs.cmd.name, list, trackStates); err != nil {
		return err
	}
	tps, err := withStore(a, a.openTracker, db, func(tr *pgstore.Tracker) ([]pgstore.TrackedPayment, error) {
		return tr.List(a.ctx, filter)
	})
	if err != nil {
		return err
	}
	return printList(a, asJSON, tps, newTrackedOut,
		[]string{"ORDER ID", "STATE", "STATUS", "PAID", "OF", "CURRENCY", "NEEDS ACTION", "PAYMENT ID", "UPDATED", "FAILING", "ANOMALY"},
		func(tp *pgstore.TrackedPayment) []string {
			o := newTrackedOut(tp)
			return []string{o.OrderID, o.State, o.Status, o.PaidAmount, o.PayAmount, o.Currency, strconv.FormatBool(o.NeedsAction),
				o.PaymentID, o.UpdatedAt, failingCell(tp.LastFailure), o.Anomaly}
		})
}

func (a *app) trackedShow(args []string) error {
	fs, db := a.newDBFlagSet(command{"payment tracked show", "ORDER_ID", "Show one tracked payment: its state, status, amounts, anomaly and every\n" +
		"recorded change (oldest first; late ones came after expiredAt)."}, trackerStore)
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	tp, hist, err := readRecord[*pgstore.TrackedPayment, pgstore.PaymentChange](a, a.openTracker, db, pos[0])
	if err != nil {
		return err
	}
	o := newTrackedOut(tp)
	if o.Moves, err = withStore(a, a.openTracker, db, a.trackedMoves(pos[0])); err != nil {
		return err
	}
	for _, c := range hist {
		o.History = append(o.History, changeOut{Seq: c.Seq, From: string(c.From), To: string(c.To),
			FromPaid: nullMoney(c.FromPaid), ToPaid: nullMoney(c.ToPaid), Late: c.Late, At: when(c.At)})
	}
	if asJSON {
		return a.printJSON(o)
	}
	if err := a.printRows([][2]string{
		{"Order ID", o.OrderID},
		{"Payment ID", o.PaymentID},
		{"State", o.State},
		{"Status", o.Status},
		{"Paid", paidText(o)},
		{"Expires", o.ExpiredAt},
		{"Needs action", strconv.FormatBool(o.NeedsAction)},
		{"Anomaly", o.Anomaly},
		{"Last failure", failureLine(tp.LastFailure)},
		{"Operator's note", o.Note},
		{"Next read", o.NextAt},
		{"Tracked", o.TrackedAt},
		{"Updated", o.UpdatedAt},
	}); err != nil {
		return err
	}
	rows := make([][]string, len(o.History))
	for i, c := range o.History {
		late := ""
		if c.Late {
			late = "late"
		}
		rows[i] = []string{strconv.Itoa(c.Seq), c.At, c.From, c.To, c.ToPaid, late}
	}
	return errors.Join(a.printTable([]string{"#", "AT", "FROM", "TO", "PAID", "LATE"}, rows), a.printMoves(o.Moves))
}

// trackedMoves reads the operators' moves on a tracked payment.
func (a *app) trackedMoves(orderID string) func(*pgstore.Tracker) ([]moveOut, error) {
	return func(tr *pgstore.Tracker) ([]moveOut, error) {
		moves, err := tr.Moves(a.ctx, orderID)
		var out []moveOut
		for _, m := range moves {
			out = append(out, moveOut{At: when(m.At), ActorID: m.ActorID, Action: string(m.Action), Anomaly: m.Anomaly, Note: m.Note})
		}
		return out, err
	}
}

// printMoves prints the operators' moves, if any: who made each.
func (a *app) printMoves(moves []moveOut) error {
	if len(moves) == 0 {
		return nil
	}
	rows := make([][]string, len(moves))
	for i, m := range moves {
		rows[i] = []string{m.At, m.ActorID, m.Action, m.Note}
	}
	return a.printTable([]string{"AT", "ACTOR", "MOVE", "NOTE"}, rows)
}

// paidText is the Paid row of show: what was paid of what is asked, or, before
// the first read (no amount known yet), that nothing has been read.
func paidText(o trackedOut) string {
	asked := strings.TrimSpace(o.PayAmount + " " + o.Currency)
	if o.Network != "" {
		asked += " on " + o.Network
	}
	switch {
	case o.PaidAmount != "":
		return o.PaidAmount + " of " + asked
	case asked != "":
		return "not read yet (asks " + asked + ")"
	}
	return "not read yet"
}

// trackedHealth prints the tracker's health summary (Tracker.Health).
func (a *app) trackedHealth(args []string) error {
	return healthCommand(a, command{"payment tracked health", "", healthHelp("payments", "tracked payments not closed")}, trackerStore, args,
		a.openTracker, (*pgstore.Tracker).Health)
}
