package dashboard

import (
	"bytes"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// How many of the newest objects the panel lists; the counts say how many
// exist in all.
const (
	maxPayments = 30
	maxPayouts  = 50
	maxWebhooks = 40
)

// view is what the templates render.
type view struct {
	Origin        string
	Now           string
	Payments      []paymentView
	PaymentTotal  int
	Payouts       []payoutView
	PayoutTotal   int
	Webhooks      []webhookView
	WebhookTotal  int
	Balances      []cryptopaytest.BalanceSnapshot
	Faults        []faultView
	Routes        []cryptopaytest.Route
	Presets       []faultPreset
	PayoutTargets []cryptopay.PayoutStatus
}

type paymentView struct {
	cryptopaytest.PaymentSnapshot
	// Outstanding is PayAmount minus what was paid (zero or more).
	Outstanding decimal.Decimal
	CanPay      bool
	CanPayFull  bool
	CanExpire   bool
	Created     string
	Expires     string
}

type payoutView struct {
	cryptopaytest.PayoutSnapshot
	Open    bool // not final: the status can still be set
	Created string
}

type webhookView struct {
	cryptopaytest.WebhookDelivery
	OrderID   string
	When      string
	Answer    string
	Delivered bool
}

type faultView struct {
	Route   cryptopaytest.Route
	Pending int
}

// payoutTargets are the statuses a payout can be set to from the page; the
// server refuses a move its lifecycle does not allow, and the page says why.
var payoutTargets = []cryptopay.PayoutStatus{
	cryptopay.PayoutReview, cryptopay.PayoutProcessing, cryptopay.PayoutConfirming,
	cryptopay.PayoutPaid, cryptopay.PayoutFailed, cryptopay.PayoutCancelled,
}

func clockText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// buildView reads srv's state, newest objects first.
func (d *dash) buildView(r *http.Request) view {
	v := view{
		Origin:        "http://" + r.Host,
		Now:           clockText(d.srv.Now()) + " UTC",
		Balances:      d.srv.Balances(),
		Routes:        cryptopaytest.Routes(),
		Presets:       faultPresets,
		PayoutTargets: payoutTargets,
	}
	orders := make(map[string]string) // object id -> orderId, for the webhook log
	pays := d.srv.Payments()
	v.PaymentTotal = len(pays)
	for _, p := range slices.Backward(pays) {
		orders[p.ID] = p.OrderID
		if len(v.Payments) < maxPayments {
			v.Payments = append(v.Payments, newPaymentView(p))
		}
	}
	outs := d.srv.Payouts()
	v.PayoutTotal = len(outs)
	for _, p := range slices.Backward(outs) {
		orders[p.ID] = p.OrderID
		if len(v.Payouts) < maxPayouts {
			v.Payouts = append(v.Payouts, payoutView{PayoutSnapshot: p, Open: !p.Status.IsTerminal(), Created: clockText(p.CreatedAt)})
		}
	}
	hooks := d.srv.Webhooks()
	v.WebhookTotal = len(hooks)
	for _, h := range slices.Backward(hooks) {
		if len(v.Webhooks) == maxWebhooks {
			break
		}
		v.Webhooks = append(v.Webhooks, webhookView{WebhookDelivery: h, OrderID: orders[h.ObjectID],
			When: h.Time.UTC().Format("15:04:05.000"), Answer: answerText(h), Delivered: h.Delivered()})
	}
	for _, rt := range v.Routes {
		if n := d.srv.PendingFaults(rt); n > 0 {
			v.Faults = append(v.Faults, faultView{rt, n})
		}
	}
	return v
}

func newPaymentView(p cryptopaytest.PaymentSnapshot) paymentView {
	out := decimal.Max(p.PayAmount.Sub(p.PaidAmount.Decimal), decimal.Zero)
	closed := p.Status == cryptopay.PaymentFailed || p.Status == cryptopay.PaymentRejected
	return paymentView{
		PaymentSnapshot: p,
		Outstanding:     out,
		CanPay:          !closed,
		CanPayFull:      !closed && out.IsPositive(),
		CanExpire:       p.Status == cryptopay.PaymentWaiting,
		Created:         clockText(p.CreatedAt),
		Expires:         clockText(p.ExpiredAt),
	}
}

// answerText is what the receiver answered, or why there was no answer.
func answerText(h cryptopaytest.WebhookDelivery) string {
	if h.Err != "" {
		return h.Err
	}
	if t := http.StatusText(h.StatusCode); t != "" {
		return strconv.Itoa(h.StatusCode) + " " + t
	}
	return strconv.Itoa(h.StatusCode)
}

// shortID is the first block of a UUID, enough to tell objects apart on
// screen (the full id is in the element's title).
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// statusClass colours a status: ok (paid), warn (a person should look),
// bad (ended without success) or wait (still moving).
func statusClass(status string) string {
	pay, out := cryptopay.PaymentStatus(status), cryptopay.PayoutStatus(status)
	switch {
	case pay.NeedsAction() || out.NeedsAction():
		return "warn"
	case pay.IsSuccess() || out.IsSuccess():
		return "ok"
	case pay.IsTerminal() || out.IsTerminal():
		return "bad"
	}
	return "wait"
}

func (d *dash) servePage(w http.ResponseWriter, r *http.Request) {
	d.render(w, "page", d.buildView(r))
}

func (d *dash) servePanel(w http.ResponseWriter, r *http.Request) {
	d.render(w, "panel", d.buildView(r))
}

// render executes a template into a buffer first, so a failure is a clean
// 500 instead of half a page.
func (d *dash) render(w http.ResponseWriter, name string, v view) {
	var buf bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&buf, name, v); err != nil {
		http.Error(w, "dashboard: cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

// pageTemplates holds the page and the panel the page refreshes.
var pageTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"short":       shortID,
	"statusClass": statusClass,
}).ParseFS(files, "templates/*.html"))
