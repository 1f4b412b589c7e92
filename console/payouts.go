package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

func (c *console) payoutRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /payouts", c.payoutList)
	mux.HandleFunc("GET /payout", c.payoutDetail)
	mux.HandleFunc("GET /payout/confirm", c.payoutConfirm)
	mux.HandleFunc("POST /payout/{action}", c.payoutAct)
	mux.HandleFunc("GET /payouts/bulk", c.bulkConfirm)
	mux.HandleFunc("POST /payouts/bulk", c.bulkAct)
}

// payoutsPage is the list page's data.
type payoutsPage struct {
	Filter     payoutFilter
	States     []pgstore.IntentState
	Rows       []pgstore.Intent
	Next       url.Values     // the next page's query; nil on the last page
	BulkFilter url.Values     // the filter, for the bulk links
	Bulk       []pgstore.Move // the bulk moves this actor may make
}

func (c *console) payoutList(w http.ResponseWriter, r *http.Request) {
	f, lf, err := parsePayoutFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	lf.Limit = c.cfg.PageSize + 1
	rows, err := c.cfg.Queue.List(r.Context(), lf)
	if err != nil {
		c.failDB(w, r, "listing payouts", err)
		return
	}
	p := payoutsPage{Filter: f, States: pgstore.States(), BulkFilter: f.values()}
	for _, m := range c.movesOn(r, pgstore.ObjectPayout) {
		if m.Bulk {
			p.Bulk = append(p.Bulk, m)
		}
	}
	p.Rows, p.Next = onePage(rows, c.cfg.PageSize, f.values(), func(in pgstore.Intent) string { return in.Params.OrderID })
	c.render(w, r, http.StatusOK, "payouts", c.newView(r, "Payouts", p))
}

// payoutPage is the detail page's data.
type payoutPage struct {
	In      *pgstore.Intent
	History []pgstore.Event
	// Actions are the moves this actor may make on it now, in the
	// table's order.
	Actions []pgstore.Move
	// NoApproval says why this actor's approval would not count ("").
	NoApproval string
}

func (c *console) payoutDetail(w http.ResponseWriter, r *http.Request) {
	in, ok := c.intent(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	hist, err := c.cfg.Queue.History(r.Context(), in.Params.OrderID)
	if err != nil {
		c.failDB(w, r, "reading the payout's history", err)
		return
	}
	p := payoutPage{In: in, History: hist}
	me, _ := pgstore.CanonicalActor(actorOf(r).ID)
	switch {
	case in.State != pgstore.StateNeedsApproval:
	case in.EnqueuedBy == me:
		p.NoApproval = "You enqueued this payout: another person must approve it."
	case slices.Contains(in.ApprovedBy, me):
		p.NoApproval = "You approved it already: it waits for another person's approval."
	}
	for _, m := range c.movesOn(r, pgstore.ObjectPayout) {
		if m.AppliesToIntent(in) && (m.Name != "approve" || p.NoApproval == "") {
			p.Actions = append(p.Actions, m)
		}
	}
	c.render(w, r, http.StatusOK, "payout", c.newView(r, "Payout "+in.Params.OrderID, p))
}

// movesOn are the moves on what (pgstore.ObjectPayout, ObjectPayment)
// the request's actor may make with the console's stores.
func (c *console) movesOn(r *http.Request, what string) []pgstore.Move {
	var out []pgstore.Move
	for _, m := range pgstore.Moves() {
		if m.On == what && c.may(r, Role(m.Role)) && m.Available(c.stores()) {
			out = append(out, m)
		}
	}
	return out
}

// intent reads the intent named id, or answers the request itself.
func (c *console) intent(w http.ResponseWriter, r *http.Request, id string) (*pgstore.Intent, bool) {
	in, err := c.cfg.Queue.Get(r.Context(), id)
	switch {
	case errors.Is(err, pgstore.ErrIntentNotFound):
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("No payout intent has the orderId %q.", id))
		return nil, false
	case err != nil:
		c.failDB(w, r, "reading a payout", err)
		return nil, false
	}
	return in, true
}

// confirmPage is a confirmation page's data: a payout's or a payment's.
type confirmPage struct {
	In   *pgstore.Intent
	P    *pgstore.TrackedPayment
	Move pgstore.Move
	// Seen are the values of the move's Seen fields: what the page shows.
	Seen map[string]string
}

// move is the move the request names on what, once the actor's role for
// it is checked; or it answers the request itself.
func (c *console) move(w http.ResponseWriter, r *http.Request, what, name string) (pgstore.Move, bool) {
	m, ok := pgstore.MoveNamed(what, name)
	if !ok {
		c.fail(w, r, http.StatusNotFound, "Unknown action.")
		return m, false
	}
	return m, c.require(w, r, Role(m.Role))
}

func (c *console) payoutConfirm(w http.ResponseWriter, r *http.Request) {
	m, ok := c.move(w, r, pgstore.ObjectPayout, r.URL.Query().Get("action"))
	if !ok {
		return
	}
	in, ok := c.intent(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	c.render(w, r, http.StatusOK, "confirm", c.newView(r, m.Verb+" "+in.Params.OrderID, confirmPage{In: in, Move: m,
		Seen: map[string]string{"listed": in.LastError}})) // what the books check said of the payout listed for it
}

func (c *console) payoutAct(w http.ResponseWriter, r *http.Request) {
	m, ok := c.move(w, r, pgstore.ObjectPayout, r.PathValue("action"))
	if !ok {
		return
	}
	id := r.PostFormValue("id")
	if _, ok := c.doMove(w, r, m, id); !ok {
		return
	}
	http.Redirect(w, r, prefix(r)+"/payout?"+url.Values{"id": {id}, "done": {m.Done}}.Encode(), http.StatusSeeOther)
}

// doMove makes m on the record id with the form's fields, as the
// request's actor (their signed-in id is the login of the move's
// principal), or answers why not; it returns what moved, and whether.
func (c *console) doMove(w http.ResponseWriter, r *http.Request, m pgstore.Move, id string) (pgstore.Moved, bool) {
	values := map[string]string{}
	seen := true
	for _, f := range m.Fields {
		values[f.Name] = strings.TrimSpace(r.PostFormValue(f.Name))
		switch {
		case f.Required && values[f.Name] == "":
			c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The %s is required: nothing was done.", strings.ToLower(f.Label)))
			return pgstore.Moved{}, false
		case f.Seen && values[f.Name] == "":
			seen = false
		}
	}
	if !seen {
		c.fail(w, r, http.StatusConflict, "The form does not say what you were shown: nothing was done. Open the page again.")
		return pgstore.Moved{}, false
	}
	who := actorOf(r).ID
	moved, err := m.Do(r.Context(), c.stores(), pgstore.MoveInput{OrderID: id, By: pgstore.Operator{ID: who, Login: who}, Values: values})
	if err != nil {
		c.refused(w, r, err, "moving a "+m.On)
		return moved, false
	}
	return moved, true
}
