package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// trackStates are the tracker's states, in their usual order.
var trackStates = []pgstore.TrackState{pgstore.TrackUnmatched, pgstore.TrackOpen, pgstore.TrackLate, pgstore.TrackClosed}

func (c *console) paymentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /payments", c.paymentList)
	mux.HandleFunc("GET /payment", c.paymentDetail)
	mux.HandleFunc("GET /payment/confirm", c.paymentConfirm)
	mux.HandleFunc("POST /payment/{action}", c.paymentAct)
}

// paymentFilter is the payments list's filter as the form carries it.
type paymentFilter struct {
	State, Q             string
	NeedsAction, Anomaly bool
}

func (f paymentFilter) values() url.Values {
	return queryOf(map[string]string{"state": f.State, "q": f.Q}, map[string]bool{"needs_action": f.NeedsAction, "anomaly": f.Anomaly})
}

// paymentsPage is the payments list's data.
type paymentsPage struct {
	Filter paymentFilter
	States []pgstore.TrackState
	Rows   []pgstore.TrackedPayment
	Next   url.Values
}

func (c *console) paymentList(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	f := paymentFilter{State: v.Get("state"), Q: strings.TrimSpace(v.Get("q")), NeedsAction: v.Get("needs_action") == "1", Anomaly: v.Get("anomaly") == "1"}
	tf := pgstore.TrackFilter{NeedsAction: f.NeedsAction, Anomaly: f.Anomaly, Search: f.Q, After: v.Get("after"), Limit: c.cfg.PageSize + 1}
	if f.State != "" {
		if !slices.Contains(trackStates, pgstore.TrackState(f.State)) {
			c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown state %q.", f.State))
			return
		}
		tf.States = []pgstore.TrackState{pgstore.TrackState(f.State)}
	}
	rows, err := c.cfg.Tracker.List(r.Context(), tf)
	if err != nil {
		c.failDB(w, r, "listing payments", err)
		return
	}
	p := paymentsPage{Filter: f, States: trackStates}
	p.Rows, p.Next = onePage(rows, c.cfg.PageSize, f.values(), func(tp pgstore.TrackedPayment) string { return tp.OrderID })
	c.render(w, r, http.StatusOK, "payments", c.newView(r, "Payments", p))
}

// paymentPage is a payment's detail page.
type paymentPage struct {
	P       *pgstore.TrackedPayment
	History []pgstore.PaymentChange
	Moves   []pgstore.OperatorMove // who cleared what
	Actions []pgstore.Move         // the moves this actor may make on it now
}

// payment reads the tracked payment named id, or answers the request.
func (c *console) payment(w http.ResponseWriter, r *http.Request, id string) (*pgstore.TrackedPayment, bool) {
	p, err := c.cfg.Tracker.Get(r.Context(), id)
	if err != nil {
		c.refused(w, r, err, "reading a payment")
		return nil, false
	}
	return p, true
}

func (c *console) paymentDetail(w http.ResponseWriter, r *http.Request) {
	p, ok := c.payment(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	hist, err := c.cfg.Tracker.History(r.Context(), p.OrderID)
	if err != nil {
		c.failDB(w, r, "reading the payment's history", err)
		return
	}
	moves, err := c.cfg.Tracker.Moves(r.Context(), p.OrderID)
	if err != nil {
		c.failDB(w, r, "reading the operators' moves on the payment", err)
		return
	}
	page := paymentPage{P: p, History: hist, Moves: moves}
	if p.Anomaly != "" { // the one payment move: clearing it
		page.Actions = c.movesOn(r, pgstore.ObjectPayment)
	}
	c.render(w, r, http.StatusOK, "payment", c.newView(r, "Payment "+p.OrderID, page))
}

func (c *console) paymentConfirm(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("action")
	if name == "" { // the one payment move, linked before moves had names
		name = "clear-anomaly"
	}
	m, ok := c.move(w, r, pgstore.ObjectPayment, name)
	if !ok {
		return
	}
	p, ok := c.payment(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	if p.Anomaly == "" {
		c.fail(w, r, http.StatusConflict, "This payment has no anomaly to clear: nothing to do.")
		return
	}
	page := confirmPage{P: p, Move: m, Seen: map[string]string{"anomaly": p.Anomaly}}
	c.render(w, r, http.StatusOK, "confirm", c.newView(r, m.Verb+" of "+p.OrderID, page))
}

func (c *console) paymentAct(w http.ResponseWriter, r *http.Request) {
	m, ok := c.move(w, r, pgstore.ObjectPayment, r.PathValue("action"))
	if !ok {
		return
	}
	id := r.PostFormValue("id")
	if !c.doMove(w, r, m, id) {
		return
	}
	http.Redirect(w, r, prefix(r)+"/payment?"+url.Values{"id": {id}, "done": {m.Done}}.Encode(), http.StatusSeeOther)
}
