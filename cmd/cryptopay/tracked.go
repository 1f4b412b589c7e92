package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// trackerFlags name the payment tracker: its database and table.
type trackerFlags struct {
	databaseURL string
	table       string
}

func (f *trackerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL connection `string` of the payment tracker (default $"+envDatabaseURL+");\n"+
		"without a password (ps shows flags): put it in $"+envDatabaseURL+", $PGPASSWORD or ~/.pgpass")
	fs.StringVar(&f.table, "tracker-table", pgstore.DefaultTrackerTable, "the tracker's `table` (\"name\" or \"schema.name\"), as in pgstore.TrackerConfig.Table")
}

// openTracker connects to the tracker's database and returns the tracker
// (with no API client: listing and showing never call the API) and its
// pool, for the caller to close. The connection string and its password
// are kept among the secrets: no error prints them.
func (a *app) openTracker(f trackerFlags) (*pgstore.Tracker, *pgxpool.Pool, error) {
	pool, err := a.openPool(f.databaseURL, 2)
	if err != nil {
		return nil, nil, err
	}
	tr, err := pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: f.table})
	if err == nil {
		err = tr.CheckSchema(a.ctx)
	}
	if err != nil {
		pool.Close()
		return nil, nil, storeErr(err)
	}
	return tr, pool, nil
}

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

func trackStateNames() []string {
	out := make([]string, len(trackStates))
	for i, s := range trackStates {
		out[i] = string(s)
	}
	return out
}

func (a *app) paymentTracked(args []string) error {
	if len(args) > 0 && args[0] == "show" {
		return a.trackedShow(args[1:])
	}
	if len(args) > 0 && args[0] == "clear-anomaly" {
		return a.trackedClear(args[1:])
	}
	if len(args) > 0 && args[0] == "health" {
		return a.trackedHealth(args[1:])
	}
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	return a.trackedList(args)
}

func (a *app) trackedList(args []string) error {
	fs := a.newFlagSet(command{"payment tracked", "", "List the payment tracker's payments in orderId order (pgstore.Tracker):\n" +
		"unmatched (tracked by orderId alone, waiting for its first webhook), open (before expiredAt),\n" +
		"late (past expiredAt, read less often for late transfers), closed. Also\n" +
		"'payment tracked show ORDER_ID' for one payment and its history,\n" +
		"'payment tracked health' for a summary (due, overdue, failing, the commonest failure), and\n" +
		"'payment tracked clear-anomaly ORDER_ID --note TEXT' once a person has looked into one."})
	var tf trackerFlags
	tf.register(fs.FlagSet)
	states := fs.String("state", "", "keep payments in these `states` (comma-separated; default all)")
	action := fs.Bool("needs-action", false, "keep only payments a person should look at (locked, paid_partial, paid_over, or an anomaly)")
	after := fs.String("after", "", "page: only orderIds after this `orderId` (the last one of the previous page)")
	limit := fs.Int("limit", 100, "at most `n` payments (up to 10000)")
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	if *limit <= 0 || *limit > 10000 {
		return usageErr("payment tracked: --limit must be 1 to 10000")
	}
	filter := pgstore.TrackFilter{NeedsAction: *action, After: *after, Limit: *limit}
	if *states != "" {
		for s := range strings.SplitSeq(*states, ",") {
			st := pgstore.TrackState(strings.TrimSpace(s))
			if !isTrackState(st) {
				return usageErr("payment tracked: --state %q: want one of %s", s, strings.Join(trackStateNames(), ", "))
			}
			filter.States = append(filter.States, st)
		}
	}
	tr, pool, err := a.openTracker(tf)
	if err != nil {
		return err
	}
	defer pool.Close()
	tps, err := tr.List(a.ctx, filter)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]trackedOut, len(tps))
		for i := range tps {
			out[i] = newTrackedOut(&tps[i])
		}
		return a.printJSON(out)
	}
	rows := make([][]string, len(tps))
	for i, tp := range tps {
		o := newTrackedOut(&tp)
		rows[i] = []string{o.OrderID, o.State, o.Status, o.PaidAmount, o.PayAmount, o.Currency, strconv.FormatBool(o.NeedsAction),
			o.PaymentID, o.UpdatedAt, failingCell(tp.LastFailure), o.Anomaly}
	}
	return a.printTable([]string{"ORDER ID", "STATE", "STATUS", "PAID", "OF", "CURRENCY", "NEEDS ACTION", "PAYMENT ID", "UPDATED", "FAILING", "ANOMALY"}, rows)
}

func (a *app) trackedShow(args []string) error {
	fs := a.newFlagSet(command{"payment tracked show", "ORDER_ID", "Show one tracked payment: its state, status, amounts, anomaly and every\n" +
		"recorded change (oldest first; late ones came after expiredAt)."})
	var tf trackerFlags
	tf.register(fs.FlagSet)
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	tr, pool, err := a.openTracker(tf)
	if err != nil {
		return err
	}
	defer pool.Close()
	tp, err := tr.Get(a.ctx, pos[0])
	if err != nil {
		return err
	}
	hist, err := tr.History(a.ctx, pos[0])
	if err != nil {
		return err
	}
	o := newTrackedOut(tp)
	if o.Moves, err = a.trackedMoves(tr, pos[0]); err != nil {
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
		{"Paid", o.PaidAmount + " of " + o.PayAmount + " " + o.Currency + " on " + o.Network},
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
func (a *app) trackedMoves(tr *pgstore.Tracker, orderID string) ([]moveOut, error) {
	moves, err := tr.Moves(a.ctx, orderID)
	var out []moveOut
	for _, m := range moves {
		out = append(out, moveOut{At: when(m.At), ActorID: m.ActorID, Action: string(m.Action), Anomaly: m.Anomaly, Note: m.Note})
	}
	return out, err
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

// trackedClear clears a tracked payment's anomaly with the operator's
// required note (pgstore.Tracker.ClearAnomaly): nothing is recorded or
// credited; the payment is only no longer flagged for the anomaly.
func (a *app) trackedClear(args []string) error {
	fs := a.newDBFlagSet(command{"payment tracked clear-anomaly", "ORDER_ID", "Clear a tracked payment's anomaly once a person has looked into it (compare with\n" +
		"the processor's dashboard): it only stops flagging it; no status is recorded and\n" +
		"nothing is credited. A webhook for another payment of the order means the customer\n" +
		"may have paid that one: settle it before clearing. --note records who looked and what they found."})
	var tf trackerFlags
	tf.register(fs.FlagSet)
	note := fs.String("note", "", "what is recorded with the payment: who looked, and what they found (required)")
	actor := a.actorFlag(fs.FlagSet)
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*note) == "" {
		return usageErr("payment tracked clear-anomaly: --note is required")
	}
	tr, pool, err := a.openTracker(tf)
	if err != nil {
		return err
	}
	defer pool.Close()
	cleared, err := tr.ClearAnomaly(a.ctx, pos[0], *actor, *note)
	var ve *cryptopay.ValidationError
	if errors.As(err, &ve) {
		return &exitError{exitUsage, err}
	}
	if err != nil {
		return err
	}
	if cleared == "" {
		a.printLine("%s: no anomaly to clear", pos[0])
		return quietExit(exitNo)
	}
	a.printLine("%s: anomaly cleared: %s", pos[0], cleared)
	return nil
}

// trackedHealth prints the tracker's health summary (Tracker.Health).
func (a *app) trackedHealth(args []string) error {
	var tf trackerFlags
	return a.healthCommand(command{"payment tracked health", "", healthHelp("payments", "tracked payments not closed")}, args, tf.register,
		func() (healthFunc, *pgxpool.Pool, error) {
			tr, pool, err := a.openTracker(tf)
			if err != nil {
				return nil, nil, err
			}
			return tr.Health, pool, nil
		})
}

func isTrackState(s pgstore.TrackState) bool {
	for _, t := range trackStates {
		if t == s {
			return true
		}
	}
	return false
}
