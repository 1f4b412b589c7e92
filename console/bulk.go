package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// bulkPage is the bulk confirmation page's data, and its result's.
type bulkPage struct {
	Action pgstore.Move
	Filter payoutFilter
	Hidden url.Values // the filter, carried by the form
	// Set is what the filter matches now: the exact set the form carries
	// (each orderId, and Totals), and the only intents it can move.
	Set     []pgstore.Intent
	Count   int
	Totals  []total
	TooMany bool
	// Changed: the set confirmed is not the set that matches now (409):
	// the page shows the new one.
	Changed bool
	// NoteRequired: the move needs a note (a retry: who checked, and how).
	NoteRequired bool
	Result       *pgstore.BulkResult
}

// total is one currency's sum of the matched amounts.
type total struct {
	Currency string
	Amount   decimal.Decimal
}

// String is the total as the form carries it: "usdt 2502.5".
func (t total) String() string { return t.Currency + " " + t.Amount.String() }

// matching reads the bulk action's filter from v and returns every
// intent it matches (at most BulkMax+1) and their totals per currency.
func (c *console) matching(r *http.Request, v url.Values) (pgstore.Move, payoutFilter, []pgstore.Intent, []total, error) {
	act, ok := pgstore.MoveNamed(pgstore.ObjectPayout, v.Get("action"))
	if !ok || !act.Bulk {
		return act, payoutFilter{}, nil, nil, badRequest("Unknown bulk action.")
	}
	v.Set("state", string(act.From[0])) // a bulk move takes only what it can move
	v.Del("after")
	f, lf, err := parsePayoutFilter(v)
	if err != nil {
		return act, f, nil, nil, err
	}
	var set []pgstore.Intent
	sums := map[string]decimal.Decimal{}
	for lf.Limit = 10000; len(set) <= c.cfg.BulkMax; {
		rows, err := c.cfg.Queue.List(r.Context(), lf)
		if err != nil {
			return act, f, nil, nil, err
		}
		for _, in := range rows {
			set = append(set, in)
			sums[in.Params.Currency] = sums[in.Params.Currency].Add(in.Params.Amount)
		}
		if len(rows) < lf.Limit {
			break
		}
		lf.After = rows[len(rows)-1].Params.OrderID
	}
	totals := make([]total, 0, len(sums))
	for cur, sum := range sums {
		totals = append(totals, total{cur, sum})
	}
	sort.Slice(totals, func(i, j int) bool { return totals[i].Currency < totals[j].Currency })
	return act, f, set, totals, nil
}

// mayBulk answers 403, before any work, unless the request's actor has
// the role of the bulk action v names (an unknown action is matching's to
// refuse); it reports whether the caller may go on.
func (c *console) mayBulk(w http.ResponseWriter, r *http.Request, v url.Values) bool {
	act, ok := pgstore.MoveNamed(pgstore.ObjectPayout, v.Get("action"))
	return !ok || !act.Bulk || c.require(w, r, Role(act.Role))
}

func (c *console) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	if !c.mayBulk(w, r, r.URL.Query()) {
		return
	}
	act, f, set, totals, err := c.matching(r, r.URL.Query())
	if err != nil {
		c.bulkFailed(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "bulk", c.newView(r, act.Verb+" in bulk", c.confirmSet(act, f, set, totals)))
}

// confirmSet is the confirmation page of the set that matches.
func (c *console) confirmSet(act pgstore.Move, f payoutFilter, set []pgstore.Intent, totals []total) bulkPage {
	return bulkPage{Action: act, Filter: f, Hidden: f.values(), Set: set, Count: len(set), Totals: totals, TooMany: len(set) > c.cfg.BulkMax,
		NoteRequired: slices.ContainsFunc(act.Fields, func(f pgstore.MoveField) bool { return f.Name == "note" && f.Required })}
}

// sameSet reports whether the form confirmed exactly set and its totals.
func sameSet(form url.Values, set []pgstore.Intent, totals []total) bool {
	ids := slices.Clone(form["ids"])
	slices.Sort(ids)
	if len(slices.Compact(ids)) != len(set) || len(form["total"]) != len(totals) {
		return false
	}
	for _, in := range set {
		if _, found := slices.BinarySearch(ids, in.Params.OrderID); !found {
			return false
		}
	}
	for i, t := range totals {
		if form["total"][i] != t.String() {
			return false
		}
	}
	return true
}

// bulkFailed answers a filter the console refuses, or a database error.
func (c *console) bulkFailed(w http.ResponseWriter, r *http.Request, err error) {
	var bad badRequest
	if errors.As(err, &bad) {
		c.fail(w, r, http.StatusBadRequest, string(bad))
		return
	}
	c.failDB(w, r, "listing payouts", err)
}

func (c *console) bulkAct(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read: nothing was done.")
		return
	}
	if !c.mayBulk(w, r, r.PostForm) {
		return
	}
	act, f, set, totals, err := c.matching(r, r.PostForm)
	if err != nil {
		c.bulkFailed(w, r, err)
		return
	}
	typed, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("count")))
	switch {
	case len(set) > c.cfg.BulkMax:
		c.fail(w, r, http.StatusConflict, fmt.Sprintf("More than %d intents match: narrow the filter. Nothing was done.", c.cfg.BulkMax))
		return
	case !sameSet(r.PostForm, set, totals):
		p := c.confirmSet(act, f, set, totals)
		p.Changed = true
		c.render(w, r, http.StatusConflict, "bulk", c.newView(r, act.Verb+" in bulk: the set changed", p))
		return
	case err != nil || typed != len(set):
		c.fail(w, r, http.StatusConflict, fmt.Sprintf("%d intents match now, and the count typed was %q: nothing was done. Look at the list again.", len(set), r.PostFormValue("count")))
		return
	}
	ids := make([]string, len(set))
	for i, in := range set {
		ids[i] = in.Params.OrderID
	}
	who := actorOf(r).ID
	res, err := act.DoMany(r.Context(), c.stores(), ids, pgstore.Operator{ID: who, Login: who},
		map[string]string{"note": strings.TrimSpace(r.PostFormValue("note"))})
	if err != nil {
		c.refused(w, r, err, "moving payouts in bulk")
		return
	}
	p := c.confirmSet(act, f, set, totals)
	p.Result = &res
	c.render(w, r, http.StatusOK, "bulk", c.newView(r, act.Verb+" in bulk: done", p))
}
