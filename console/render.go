package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/ids"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/style.css
var styleSheet []byte

// funcs are the templates' helpers; every text from the database or the
// server goes through "v".
var funcs = template.FuncMap{
	"v":     visible,
	"lines": visibleLines,
	"when":  when,
	"money": func(d decimal.Decimal) string { return d.String() },
	"join":  func(s []string) string { return visible(strings.Join(s, ", ")) },
	"query": func(v url.Values) template.URL { return template.URL(v.Encode()) }, // percent-encoded by Encode
}

// pages holds one template per page, each with the shared layout.
var pages = parsePages("payouts", "payout", "confirm", "bulk", "payments", "payment", "refunded", "error")

func parsePages(names ...string) map[string]*template.Template {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	out := make(map[string]*template.Template, len(names))
	for _, n := range names {
		out[n] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+n+".html"))
	}
	return out
}

// visible is s as a person should see it: invalid UTF-8 replaced, and
// every control, format (bidi override, zero-width) or other invisible
// character written out as \uXXXX, so no text can hide or reorder what
// is around it. html/template escapes the result for HTML.
func visible(s string) string {
	if !strings.ContainsFunc(s, ids.Invisible) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\uFFFD' || !ids.Invisible(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// visibleLines is visible of each line of s (an operator's note, whose
// line breaks pgstore keeps as \n), the breaks kept: the page shows them
// with white-space: pre-line (class "note").
func visibleLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = visible(l)
	}
	return strings.Join(lines, "\n")
}

// when is a time as the console shows it: UTC, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// view is what every page's template gets.
type view struct {
	Base       string // the mount prefix, for every link
	Title      string
	Actor      Actor
	ReadOnly   bool
	Payouts    bool // a Queue is configured
	Payments   bool // a Tracker is configured
	Health     *health
	Flash      string
	CanApprove bool
	CanOperate bool
	Data       any
}

// newView fills in what every page shows.
func (c *console) newView(r *http.Request, title string, data any) view {
	return view{
		Base: prefix(r), Title: title, Actor: actorOf(r), ReadOnly: c.cfg.ReadOnly,
		Payouts: c.cfg.Queue != nil, Payments: c.cfg.Tracker != nil,
		CanApprove: c.may(r, RoleApprover), CanOperate: c.may(r, RoleOperator),
		Flash: flashes[r.URL.Query().Get("done")], Data: data,
	}
}

// flashes are the only messages a redirect can ask a page to show (a
// fixed set: a link cannot make the console say anything else).
var flashes = map[string]string{
	"approved":  "Your approval is recorded.",
	"rejected":  "Rejected: nothing will be sent.",
	"retried":   "Queued for a new attempt.",
	"resolved":  "Resolved: the payout is followed to its end.",
	"cancelled": "Cancelled: nothing will be sent.",
	"cleared":   "Anomaly cleared.",
}

// render writes a page with status, or the error page if it fails.
// A page that answers 200 shows the health summary; an error page reads
// nothing more from the database.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	if status == http.StatusOK {
		v.Health = c.health(r.Context())
	}
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.log.Error("console: rendering a page", "page", page, "err", err)
		http.Error(w, "the page could not be rendered (logged)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
