package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/claim"
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
// Unresolved (needs Config.Refunds) lists the payments needing action
// that have no resolution, alone: the other filters do not apply to it.
type paymentFilter struct {
	State, Q                         string
	NeedsAction, Anomaly, Unresolved bool
}

func (f paymentFilter) values() url.Values {
	return queryOf(map[string]string{"state": f.State, "q": f.Q},
		map[string]bool{"needs_action": f.NeedsAction, "anomaly": f.Anomaly, "unresolved": f.Unresolved})
}

// paymentsPage is the payments list's data.
type paymentsPage struct {
	Filter paymentFilter
	States []pgstore.TrackState
	Rows   []paymentRow
	Next   url.Values
	// Refunds: the console has Config.Refunds (the unresolved filter).
	Refunds bool
}

// paymentRow is one payment of the list with the moves this actor may
// make on it now (a payment needing action: refund, accept, write off).
type paymentRow struct {
	pgstore.TrackedPayment
	Actions []pgstore.Move
}

func (c *console) paymentList(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	f := paymentFilter{State: v.Get("state"), Q: strings.TrimSpace(v.Get("q")), NeedsAction: v.Get("needs_action") == "1",
		Anomaly: v.Get("anomaly") == "1", Unresolved: v.Get("unresolved") == "1"}
	tf := pgstore.TrackFilter{NeedsAction: f.NeedsAction, Anomaly: f.Anomaly, Search: f.Q, After: v.Get("after"), Limit: c.cfg.PageSize + 1}
	if f.State != "" {
		if !slices.Contains(trackStates, pgstore.TrackState(f.State)) {
			c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown state %q.", f.State))
			return
		}
		tf.States = []pgstore.TrackState{pgstore.TrackState(f.State)}
	}
	if f.Unresolved && c.cfg.Refunds == nil {
		c.fail(w, r, http.StatusBadRequest, "This console has no refunds store (Config.Refunds): it cannot list unresolved payments.")
		return
	}
	rows, err := c.listPayments(r, f.Unresolved, tf)
	if err != nil {
		c.failDB(w, r, "listing payments", err)
		return
	}
	p := paymentsPage{Filter: f, States: trackStates, Refunds: c.cfg.Refunds != nil}
	rows, p.Next = onePage(rows, c.cfg.PageSize, f.values(), func(tp pgstore.TrackedPayment) string { return tp.OrderID })
	moves := c.movesOn(r, pgstore.ObjectPayment)
	for _, tp := range rows {
		p.Rows = append(p.Rows, paymentRow{TrackedPayment: tp, Actions: applying(moves, &tp)})
	}
	c.render(w, r, http.StatusOK, "payments", c.newView(r, "Payments", p))
}

// listPayments reads a page of the list (tf.Limit rows at most): with
// unresolved, Refunds.UnresolvedPayments after tf.After (one query, an
// index scan of the payments needing action).
func (c *console) listPayments(r *http.Request, unresolved bool, tf pgstore.TrackFilter) ([]pgstore.TrackedPayment, error) {
	if unresolved {
		return c.cfg.Refunds.UnresolvedPayments(r.Context(), tf.After, tf.Limit)
	}
	return c.cfg.Tracker.List(r.Context(), tf)
}

// applying are the moves of ms that apply to p now.
func applying(ms []pgstore.Move, p *pgstore.TrackedPayment) []pgstore.Move {
	var out []pgstore.Move
	for _, m := range ms {
		if m.AppliesToPayment(p) {
			out = append(out, m)
		}
	}
	return out
}

// paymentPage is a payment's detail page.
type paymentPage struct {
	P       *pgstore.TrackedPayment
	History []pgstore.PaymentChange
	Moves   []pgstore.OperatorMove // who cleared what
	Actions []pgstore.Move         // the moves this actor may make on it now
	// Refunds and Resolutions are the payment's (with Config.Refunds);
	// Links the claim links of the refunds awaiting their claim (with
	// Config.ClaimURL), by refund id.
	Refunds     []pgstore.Refund
	Resolutions []pgstore.Resolution
	Links       map[string]string
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
	page := paymentPage{P: p, Actions: applying(c.movesOn(r, pgstore.ObjectPayment), p)}
	var err error
	if page.History, err = c.cfg.Tracker.History(r.Context(), p.OrderID); err != nil {
		c.failDB(w, r, "reading the payment's history", err)
		return
	}
	if page.Moves, err = c.cfg.Tracker.Moves(r.Context(), p.OrderID); err != nil {
		c.failDB(w, r, "reading the operators' moves on the payment", err)
		return
	}
	if err := c.refundsOf(r, &page); err != nil {
		c.failDB(w, r, "reading the payment's refunds", err)
		return
	}
	c.render(w, r, http.StatusOK, "payment", c.newView(r, "Payment "+p.OrderID, page))
}

// refundsOf reads page's payment's refunds and resolutions, and the
// claim links of those awaiting a claim (with Config.Refunds).
func (c *console) refundsOf(r *http.Request, page *paymentPage) error {
	if c.cfg.Refunds == nil {
		return nil
	}
	var err error
	if page.Refunds, err = c.cfg.Refunds.List(r.Context(), page.P.OrderID); err != nil {
		return err
	}
	if page.Resolutions, err = c.cfg.Refunds.Resolutions(r.Context(), page.P.OrderID); err != nil {
		return err
	}
	page.Links = map[string]string{}
	for i := range page.Refunds {
		if link := c.claimLink(&page.Refunds[i]); link != "" {
			page.Links[page.Refunds[i].ID] = link
		}
	}
	return nil
}

// claimLink is f's claim link, if it awaits its claim and the console
// has Config.ClaimURL ("" otherwise).
func (c *console) claimLink(f *pgstore.Refund) string {
	if c.cfg.ClaimURL == "" || f.State != pgstore.RefundAwaitingClaim || !f.ClaimUntil.After(time.Now()) {
		return ""
	}
	link, err := claim.Link(c.cfg.ClaimURL, c.cfg.ClaimKey, f.ID, f.ClaimUntil)
	if err != nil { // New checked the URL and key
		c.log.Error("console: making a claim link", "refund", f.ID, "err", err)
		return ""
	}
	return link
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
	if !m.AppliesToPayment(p) {
		c.fail(w, r, http.StatusConflict, fmt.Sprintf("%s applies to a payment %s; this one is not: nothing to do.",
			m.Verb, strings.TrimSpace(strings.Split(m.Payments, "→")[0])))
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
	moved, ok := c.doMove(w, r, m, id)
	if !ok {
		return
	}
	if moved.Refund != nil {
		c.refunded(w, r, moved)
		return
	}
	http.Redirect(w, r, prefix(r)+"/payment?"+url.Values{"id": {id}, "done": {m.Done}}.Encode(), http.StatusSeeOther)
}

// refundedPage is what a refund move made.
type refundedPage struct {
	F       *pgstore.Refund
	Created bool
	// Link is its claim link (Config.ClaimURL); CLI, without one, the
	// command that prints it (the same idempotency key makes nothing new).
	Link, CLI string
}

// refunded shows the refund a move made, with its claim link if it
// awaits one.
func (c *console) refunded(w http.ResponseWriter, r *http.Request, moved pgstore.Moved) {
	f := moved.Refund
	p := refundedPage{F: f, Created: moved.RefundCreated, Link: c.claimLink(f)}
	if f.State == pgstore.RefundAwaitingClaim && p.Link == "" {
		args := []string{"cryptopay", "payment", "refund", f.OrderID, "--rule", string(f.Rule), "--idempotency-key", f.Key,
			"--customer-id", f.CustomerID}
		if f.Rule == pgstore.RefundAmount {
			args = append(args, "--amount", f.Amount.String())
		}
		for i, a := range args {
			args[i] = shellQuote(a)
		}
		p.CLI = strings.Join(args, " ") + " --claim-url URL"
	}
	c.render(w, r, http.StatusOK, "refunded", c.newView(r, "Refund of "+f.OrderID, p))
}

// shellQuote is s quoted for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@=", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
