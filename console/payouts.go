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
	Next       url.Values // the next page's query; nil on the last page
	BulkFilter url.Values // the filter, for the bulk links
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
	p.Rows, p.Next = onePage(rows, c.cfg.PageSize, f.values(), func(in pgstore.Intent) string { return in.Params.OrderID })
	c.render(w, r, http.StatusOK, "payouts", c.newView(r, "Payouts", p))
}

// payoutPage is the detail page's data.
type payoutPage struct {
	In      *pgstore.Intent
	History []pgstore.Event
	// Approve, Reject, Retry, Resolve: the actions this actor may take now.
	Approve, Reject, Retry, Resolve bool
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
	held, parked := in.State == pgstore.StateNeedsApproval, in.State == pgstore.StateParked
	switch {
	case held && in.EnqueuedBy == me:
		p.NoApproval = "You enqueued this payout: another person must approve it."
	case held && slices.Contains(in.ApprovedBy, me):
		p.NoApproval = "You approved it already: it waits for another person's approval."
	}
	p.Approve = held && c.may(r, RoleApprover) && p.NoApproval == ""
	p.Reject = held && c.may(r, RoleApprover)
	p.Retry = parked && c.may(r, RoleOperator)
	p.Resolve = p.Retry
	c.render(w, r, http.StatusOK, "payout", c.newView(r, "Payout "+in.Params.OrderID, p))
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

// payoutAction is one move an operator confirms on a page of its own.
type payoutAction struct {
	Name, Verb string
	Role       Role
	From       pgstore.IntentState
	// Field is the text field's name ("note" or "reason"); Required: it
	// must not be empty. PayoutID asks for the payout's id too.
	Field    string
	Required bool
	PayoutID bool
	// Warn is shown on the confirmation page.
	Warn string
	Done string // the flash the detail page shows after it
}

var payoutActions = map[string]payoutAction{
	"approve": {Name: "approve", Verb: "Approve", Role: RoleApprover, From: pgstore.StateNeedsApproval, Field: "note", Done: "approved",
		Warn: "Four eyes: the payout is sent once the required number of different people have approved it."},
	"reject": {Name: "reject", Verb: "Reject", Role: RoleApprover, From: pgstore.StateNeedsApproval, Field: "reason", Required: true, Done: "rejected",
		Warn: "Rejecting is final: nothing will be sent."},
	"retry": {Name: "retry", Verb: "Retry", Role: RoleOperator, From: pgstore.StateParked, Field: "note", Required: true, Done: "retried",
		Warn: "Only after checking with the processor (its dashboard, by orderId) that NO payout exists for this order: retrying a payout that exists pays it twice."},
	"resolve": {Name: "resolve", Verb: "Resolve", Role: RoleOperator, From: pgstore.StateParked, Field: "note", Required: true, PayoutID: true, Done: "resolved",
		Warn: "Give the id of the payout you found at the processor for this orderId; it is read through the API and must match this intent."},
}

// confirmPage is a confirmation page's data.
type confirmPage struct {
	In     *pgstore.Intent
	Action payoutAction
}

func (c *console) payoutConfirm(w http.ResponseWriter, r *http.Request) {
	act, ok := payoutActions[r.URL.Query().Get("action")]
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "Unknown action.")
		return
	}
	if !c.require(w, r, act.Role) {
		return
	}
	in, ok := c.intent(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	c.render(w, r, http.StatusOK, "confirm", c.newView(r, act.Verb+" "+in.Params.OrderID, confirmPage{In: in, Action: act}))
}

func (c *console) payoutAct(w http.ResponseWriter, r *http.Request) {
	act, ok := payoutActions[r.PathValue("action")]
	if !ok {
		c.fail(w, r, http.StatusNotFound, "Unknown action.")
		return
	}
	if !c.require(w, r, act.Role) {
		return
	}
	id, text := r.PostFormValue("id"), strings.TrimSpace(r.PostFormValue(act.Field))
	if act.Required && text == "" {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The %s is required: nothing was done.", act.Field))
		return
	}
	q, who := c.cfg.Queue, actorOf(r).ID
	var err error
	switch act.Name {
	case "approve":
		err = q.Approve(r.Context(), id, who, text)
	case "reject":
		err = q.Reject(r.Context(), id, who, text)
	case "retry":
		err = q.Retry(r.Context(), id, who, text)
	case "resolve":
		err = q.Resolve(r.Context(), id, strings.TrimSpace(r.PostFormValue("payout_id")), who, text)
	}
	if err != nil {
		c.refused(w, r, err, "moving a payout")
		return
	}
	http.Redirect(w, r, prefix(r)+"/payout?"+url.Values{"id": {id}, "done": {act.Done}}.Encode(), http.StatusSeeOther)
}
