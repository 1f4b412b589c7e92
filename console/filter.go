package console

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// payoutFilter is the payouts list's filter as the form carries it.
type payoutFilter struct {
	State, Currency, Network, Since, Until, Q string
	Held                                      bool
}

// badRequest is a filter or form the console refuses, in its words.
type badRequest string

func (b badRequest) Error() string { return string(b) }

// dateLayout is how the list's date filters are typed (UTC days).
const dateLayout = "2006-01-02"

// parsePayoutFilter reads the filter from a query or form, checked.
func parsePayoutFilter(v url.Values) (payoutFilter, pgstore.ListFilter, error) {
	f := payoutFilter{State: v.Get("state"), Currency: strings.TrimSpace(v.Get("currency")), Network: strings.TrimSpace(v.Get("network")),
		Since: v.Get("since"), Until: v.Get("until"), Q: strings.TrimSpace(v.Get("q")), Held: v.Get("held") == "1"}
	lf := pgstore.ListFilter{Held: f.Held, Currency: f.Currency, Network: f.Network, Search: f.Q, After: v.Get("after")}
	if f.State != "" {
		if !slices.Contains(pgstore.States(), pgstore.IntentState(f.State)) {
			return f, lf, badRequest(fmt.Sprintf("Unknown state %q.", f.State))
		}
		lf.States = []pgstore.IntentState{pgstore.IntentState(f.State)}
	}
	for _, d := range []struct {
		text string
		to   *time.Time
		add  int
	}{{f.Since, &lf.Since, 0}, {f.Until, &lf.Until, 1}} {
		if d.text == "" {
			continue
		}
		t, err := time.Parse(dateLayout, d.text)
		if err != nil {
			return f, lf, badRequest(fmt.Sprintf("A date is YYYY-MM-DD, not %q.", d.text))
		}
		*d.to = t.AddDate(0, 0, d.add) // until a day: up to its end
	}
	return f, lf, nil
}

// values is the filter as a query string's values.
func (f payoutFilter) values() url.Values {
	return queryOf(map[string]string{"state": f.State, "currency": f.Currency, "network": f.Network, "since": f.Since, "until": f.Until, "q": f.Q},
		map[string]bool{"held": f.Held})
}

// queryOf is a query of the texts that are set and the flags that are
// on (as "1").
func queryOf(texts map[string]string, flags map[string]bool) url.Values {
	v := url.Values{}
	for k, s := range texts {
		if s != "" {
			v.Set(k, s)
		}
	}
	for k, on := range flags {
		if on {
			v.Set(k, "1")
		}
	}
	return v
}

// onePage cuts rows (read with one more than size) to a page, and
// returns the query of the next page (filter with after: the page's last
// key), nil on the last page.
func onePage[T any](rows []T, size int, filter url.Values, key func(T) string) ([]T, url.Values) {
	if len(rows) <= size {
		return rows, nil
	}
	filter.Set("after", key(rows[size-1]))
	return rows[:size], filter
}
