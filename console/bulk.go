package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// bulkPage is the bulk confirmation page's data, and its result's.
type bulkPage struct {
	Action  pgstore.Move
	Filter  payoutFilter
	Hidden  url.Values // the filter, carried by the form
	Count   int
	Totals  []total
	TooMany bool
	Result  *pgstore.BulkResult
}

// total is one currency's sum of the matched amounts.
type total struct {
	Currency string
	Amount   decimal.Decimal
}

// matching reads the bulk action's filter from v and returns the
// orderIds of every intent it matches (at most BulkMax+1) and their
// totals per currency.
func (c *console) matching(r *http.Request, v url.Values) (pgstore.Move, payoutFilter, []string, []total, error) {
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
	var ids []string
	sums := map[string]decimal.Decimal{}
	for lf.Limit = 10000; len(ids) <= c.cfg.BulkMax; {
		rows, err := c.cfg.Queue.List(r.Context(), lf)
		if err != nil {
			return act, f, nil, nil, err
		}
		for _, in := range rows {
			ids = append(ids, in.Params.OrderID)
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
	return act, f, ids, totals, nil
}

func (c *console) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	act, f, ids, totals, err := c.matching(r, r.URL.Query())
	if err != nil {
		c.bulkFailed(w, r, err)
		return
	}
	if !c.require(w, r, Role(act.Role)) {
		return
	}
	p := bulkPage{Action: act, Filter: f, Hidden: f.values(), Count: len(ids), Totals: totals, TooMany: len(ids) > c.cfg.BulkMax}
	c.render(w, r, http.StatusOK, "bulk", c.newView(r, act.Verb+" in bulk", p))
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
	act, f, ids, totals, err := c.matching(r, r.PostForm)
	if err != nil {
		c.bulkFailed(w, r, err)
		return
	}
	if !c.require(w, r, Role(act.Role)) {
		return
	}
	typed, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("count")))
	switch {
	case len(ids) > c.cfg.BulkMax:
		c.fail(w, r, http.StatusConflict, fmt.Sprintf("More than %d intents match: narrow the filter. Nothing was done.", c.cfg.BulkMax))
		return
	case err != nil || typed != len(ids):
		c.fail(w, r, http.StatusConflict, fmt.Sprintf("%d intents match now, and the count typed was %q: nothing was done. Look at the list again.", len(ids), r.PostFormValue("count")))
		return
	}
	who := actorOf(r).ID
	res, err := act.DoMany(r.Context(), c.stores(), ids, pgstore.Operator{ID: who, Login: who},
		map[string]string{"note": strings.TrimSpace(r.PostFormValue("note"))})
	if err != nil {
		c.refused(w, r, err, "moving payouts in bulk")
		return
	}
	p := bulkPage{Action: act, Filter: f, Hidden: f.values(), Count: len(ids), Totals: totals, Result: &res}
	c.render(w, r, http.StatusOK, "bulk", c.newView(r, act.Verb+" in bulk: done", p))
}
