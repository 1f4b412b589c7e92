package cryptopaytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// ControlHandler returns the control API, the HTTP form of the methods that
// drive the server, for programs that cannot call them (it is what
// cmd/cryptopay-fakeserver serves under /_control/). Bodies are JSON;
// amounts may be numbers or strings; errors are {code, message} with 400
// (bad input), 404 (unknown id or endpoint), 405 (a known path with another
// method; Allow names the right ones) or 409 (move not allowed).
//
//	POST   /_control/payments/{id}/pay      {"amount": "1.5"}          -> payment status JSON
//	POST   /_control/payments/{id}/status   {"status": "expired"}      -> payment status JSON
//	GET    /_control/payments/{id}                                     -> payment status JSON
//	POST   /_control/payouts/{id}/status    {"status": "paid"}         -> payout status JSON
//	GET    /_control/payouts/{id}                                      -> payout status JSON
//	GET    /_control/clock                                             -> {"now": ...}
//	POST   /_control/clock/advance          {"seconds": 3600} or {"duration": "1h"} -> {"now": ...}
//	POST   /_control/faults                 {"route": "POST /v1/payout", "fault": {...}} -> {"route", "pending"}
//	DELETE /_control/faults                                            -> 204
//	PUT    /_control/balances               {"currency", "network", "amount"} -> balances
//	GET    /_control/webhooks                                          -> delivery attempts the log holds
//	GET    /_control/state                                             -> counters (webhooks: every attempt) and balances
//	GET    /_control/payments                                          -> [{"id", "orderId", "status"}], oldest first
//	GET    /_control/payouts                                           -> [{"id", "orderId", "status"}], in creation order
//	POST   /_control/payouts/{id}/duplicate                            -> {"payoutId"}: DuplicatePayout
//	POST   /_control/payouts/{id}/amount    {"amount": "10.5"}         -> payout status JSON: SetPayoutAmount
//	POST   /_control/payouts/{id}/lose                                 -> 204: LosePayout
//	POST   /_control/payments/{id}/paid-amount {"amount": "7"}         -> payment status JSON: SetPaidAmount
//	POST   /_control/balances/debit         {"currency", "network", "amount"} -> balances: DebitBalance
//	GET    /_control/                                                  -> {"endpoints": [...]}: every endpoint above
//
// A fault is {"times", "process", "status", "body", "emptyBody", "contentType",
// "retryAfter", "delay" (a Go duration such as "250ms"), "drop",
// "truncate"}, as Fault. The control API needs no API key; it refuses
// requests that carry an Origin header or name a non-loopback Host (403), so
// a web page cannot drive it through the developer's browser.
func (s *Server) ControlHandler() http.Handler {
	mux := &controlMux{ServeMux: http.NewServeMux()}
	mux.HandleFunc("POST /_control/payments/{id}/pay", s.ctlPay)
	mux.HandleFunc("POST /_control/payments/{id}/status", s.ctlPaymentStatus)
	mux.HandleFunc("GET /_control/payments/{id}", s.ctlGetPayment)
	mux.HandleFunc("POST /_control/payouts/{id}/status", s.ctlPayoutStatus)
	mux.HandleFunc("GET /_control/payouts/{id}", s.ctlGetPayout)
	mux.HandleFunc("GET /_control/clock", s.ctlClock)
	mux.HandleFunc("POST /_control/clock/advance", s.ctlAdvance)
	mux.HandleFunc("POST /_control/faults", s.ctlAddFault)
	mux.HandleFunc("DELETE /_control/faults", s.ctlClearFaults)
	mux.HandleFunc("PUT /_control/balances", s.ctlSetBalance)
	mux.HandleFunc("GET /_control/webhooks", s.ctlWebhooks)
	mux.HandleFunc("GET /_control/state", s.ctlState)
	mux.HandleFunc("GET /_control/payments", s.ctlListPayments)
	mux.HandleFunc("GET /_control/payouts", s.ctlListPayouts)
	mux.HandleFunc("POST /_control/payouts/{id}/duplicate", s.ctlDuplicatePayout)
	mux.HandleFunc("POST /_control/payouts/{id}/amount", s.ctlPayoutAmount)
	mux.HandleFunc("POST /_control/payouts/{id}/lose", s.ctlLosePayout)
	mux.HandleFunc("POST /_control/payments/{id}/paid-amount", s.ctlPaidAmount)
	mux.HandleFunc("POST /_control/balances/debit", s.ctlDebitBalance)
	mux.HandleFunc("GET /_control/{$}", mux.index)
	return controlHandler{s, mux}
}

type controlHandler struct {
	s   *Server
	mux *controlMux
}

// controlMux is the control API's mux; it remembers its patterns, so the
// index at GET /_control/ lists every endpoint there is.
type controlMux struct {
	*http.ServeMux
	patterns []string
}

func (m *controlMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.ServeMux.HandleFunc(pattern, h)
	m.patterns = append(m.patterns, pattern)
}

// index answers GET /_control/ with the endpoints: {"endpoints": [...]}.
func (m *controlMux) index(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Endpoints []string `json:"endpoints"`
	}{m.patterns})
}

// controlObject is a payment or payout in the control API's lists.
type controlObject struct {
	ID      string `json:"id"`
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

func (s *Server) ctlListPayments(w http.ResponseWriter, _ *http.Request) {
	ps := s.Payments()
	out := make([]controlObject, len(ps))
	for i, p := range ps {
		out[i] = controlObject{p.ID, p.OrderID, string(p.Status)}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ctlListPayouts(w http.ResponseWriter, _ *http.Request) {
	ps := s.Payouts()
	out := make([]controlObject, len(ps))
	for i, p := range ps {
		out[i] = controlObject{p.ID, p.OrderID, string(p.Status)}
	}
	writeJSON(w, http.StatusOK, out)
}

func (c controlHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The control API has no key. A web page the developer visits could
	// still reach a loopback port (a cross-origin "simple" POST, or DNS
	// rebinding), so requests from a browser context or for a non-loopback
	// host name are refused; curl and test code send neither.
	if r.Header.Get("Origin") != "" || !isLoopbackHost(hostOnly(r.Host)) {
		writeError(w, http.StatusForbidden, "forbidden", "the control API only answers loopback clients without an Origin header")
		return
	}
	if !c.s.enter() {
		writeError(w, http.StatusServiceUnavailable, codeClosed, "the fake server is closed")
		return
	}
	defer c.s.inflight.Done()
	if h, pattern := c.mux.Handler(r); pattern == "" {
		noRoute(w, r, h)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// noRoute answers a control request that matches no endpoint: 405 with
// Allow when the path is known under another method, else 404, both with
// a {code, message} body. h is the mux's own answer, which decides which.
func noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &recorder{header: make(http.Header), status: http.StatusOK}
	h.ServeHTTP(rec, r)
	if rec.status == http.StatusMethodNotAllowed {
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path+"; use "+allow)
		return
	}
	writeError(w, http.StatusNotFound, codeNotFound, "no such control endpoint: "+r.Method+" "+r.URL.Path)
}

// decodeControl reads a strict JSON body (unknown keys are refused, so a
// typo is not silently ignored).
func decodeControl(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, "control body too large")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "bad control body: "+err.Error())
		return false
	}
	return true
}

func writeControlError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
	case errors.Is(err, ErrTransition):
		writeError(w, http.StatusConflict, codeConflict, err.Error())
	default:
		writeError(w, http.StatusBadRequest, codeInvalidRequest, err.Error())
	}
}

// ctlAmount reads a control body {"amount": ...}; false: it answered.
func ctlAmount(w http.ResponseWriter, r *http.Request) (decimal.Decimal, bool) {
	var in struct {
		Amount json.RawMessage `json:"amount"`
	}
	if !decodeControl(w, r, &in) {
		return decimal.Decimal{}, false
	}
	amount, err := parseAmount(in.Amount)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "amount "+err.Error())
		return decimal.Decimal{}, false
	}
	return amount, true
}

func (s *Server) ctlPay(w http.ResponseWriter, r *http.Request) {
	amount, ok := ctlAmount(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := s.Pay(id, amount); err != nil {
		writeControlError(w, err)
		return
	}
	s.ctlGetPayment(w, r)
}

func (s *Server) ctlPaymentStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status string `json:"status"`
	}
	if !decodeControl(w, r, &in) {
		return
	}
	if err := s.SetPaymentStatus(r.PathValue("id"), cryptopay.PaymentStatus(in.Status)); err != nil {
		writeControlError(w, err)
		return
	}
	s.ctlGetPayment(w, r)
}

func (s *Server) ctlGetPayment(w http.ResponseWriter, r *http.Request) {
	j, ok := s.paymentJSON(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "payment "+r.PathValue("id")+" not found")
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) ctlPayoutStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status string `json:"status"`
	}
	if !decodeControl(w, r, &in) {
		return
	}
	if err := s.SetPayoutStatus(r.PathValue("id"), cryptopay.PayoutStatus(in.Status)); err != nil {
		writeControlError(w, err)
		return
	}
	s.ctlGetPayout(w, r)
}

func (s *Server) ctlGetPayout(w http.ResponseWriter, r *http.Request) {
	s.getPayout(w, r.PathValue("id"))
}

type clockJSON struct {
	Now string `json:"now"`
}

func (s *Server) ctlClock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, clockJSON{wireTime(s.Now())})
}

func (s *Server) ctlAdvance(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Seconds  json.Number `json:"seconds"`
		Duration string      `json:"duration"`
	}
	if !decodeControl(w, r, &in) {
		return
	}
	var d time.Duration
	switch {
	case in.Seconds != "" && in.Duration != "":
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "give seconds or duration, not both")
		return
	case in.Seconds != "":
		secs, err := decimal.NewFromString(in.Seconds.String())
		if err != nil || secs.IsNegative() || secs.GreaterThan(decimal.NewFromInt(100*365*24*3600)) {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "seconds must be a number from 0 to 100 years")
			return
		}
		d = time.Duration(secs.Shift(9).IntPart())
	case in.Duration != "":
		var err error
		if d, err = time.ParseDuration(in.Duration); err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "duration must be a non-negative Go duration such as \"90m\"")
			return
		}
	default:
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "give seconds or duration")
		return
	}
	s.Advance(d)
	s.ctlClock(w, r)
}

// faultJSON is a Fault in the control API.
type faultJSON struct {
	Times       int    `json:"times"`
	Process     bool   `json:"process"`
	Status      int    `json:"status"`
	Body        string `json:"body"`
	EmptyBody   bool   `json:"emptyBody"`
	ContentType string `json:"contentType"`
	RetryAfter  string `json:"retryAfter"`
	Delay       string `json:"delay"`
	Drop        bool   `json:"drop"`
	Truncate    bool   `json:"truncate"`
}

func (s *Server) ctlAddFault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Route string    `json:"route"`
		Fault faultJSON `json:"fault"`
	}
	if !decodeControl(w, r, &in) {
		return
	}
	route := Route(in.Route)
	if route.index() < 0 {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("unknown route %q; routes: %q", in.Route, Routes()))
		return
	}
	f := in.Fault
	if f.Times < 0 || (f.Status != 0 && (f.Status < 100 || f.Status > 599)) {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "times must be >= 0 and status a valid HTTP status")
		return
	}
	var delay time.Duration
	if f.Delay != "" {
		var err error
		if delay, err = time.ParseDuration(f.Delay); err != nil || delay < 0 {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "delay must be a non-negative Go duration such as \"2s\"")
			return
		}
	}
	s.InjectFault(route, Fault{
		Times: f.Times, Process: f.Process, Status: f.Status, Body: f.Body, EmptyBody: f.EmptyBody, ContentType: f.ContentType,
		RetryAfter: f.RetryAfter, Delay: delay, Drop: f.Drop, Truncate: f.Truncate,
	})
	writeJSON(w, http.StatusOK, struct {
		Route   string `json:"route"`
		Pending int    `json:"pending"`
	}{string(route), s.PendingFaults(route)})
}

func (s *Server) ctlClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) ctlSetBalance(w http.ResponseWriter, r *http.Request) {
	if key, amount, ok := ctlBalanceBody(w, r, true); ok {
		s.SetBalance(key.Currency, key.Network, amount)
		s.getBalances(w)
	}
}

// ctlBalanceBody reads {"currency", "network", "amount"} (with
// nonNegative, an amount below zero is refused); false: it answered.
func ctlBalanceBody(w http.ResponseWriter, r *http.Request, nonNegative bool) (pair, decimal.Decimal, bool) {
	var in struct {
		Currency string          `json:"currency"`
		Network  string          `json:"network"`
		Amount   json.RawMessage `json:"amount"`
	}
	if !decodeControl(w, r, &in) {
		return pair{}, decimal.Decimal{}, false
	}
	amount, err := parseAmount(in.Amount)
	if err != nil || (nonNegative && amount.IsNegative()) || in.Currency == "" || in.Network == "" {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "want currency, network and a non-negative amount")
		return pair{}, decimal.Decimal{}, false
	}
	return pair{in.Currency, in.Network}, amount, true
}

// webhookJSON is a WebhookDelivery in the control API; the body is embedded
// as JSON when it is JSON.
type webhookJSON struct {
	Kind       string          `json:"kind"`
	ObjectID   string          `json:"objectId"`
	Status     string          `json:"status"`
	URL        string          `json:"url"`
	Attempt    int             `json:"attempt"`
	StatusCode int             `json:"statusCode"`
	Error      string          `json:"error,omitempty"`
	Delivered  bool            `json:"delivered"`
	Time       string          `json:"time"`
	Body       json.RawMessage `json:"body"`
}

func (s *Server) ctlWebhooks(w http.ResponseWriter, _ *http.Request) {
	list := s.Webhooks()
	out := make([]webhookJSON, 0, len(list))
	for _, d := range list {
		body := json.RawMessage(d.Body)
		if !json.Valid(body) {
			body, _ = json.Marshal(string(d.Body))
		}
		out = append(out, webhookJSON{
			Kind: d.Kind, ObjectID: d.ObjectID, Status: d.Status, URL: d.URL, Attempt: d.Attempt,
			StatusCode: d.StatusCode, Error: d.Err, Delivered: d.Delivered(), Time: wireTime(d.Time), Body: body,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ctlState(w http.ResponseWriter, _ *http.Request) {
	type stateJSON struct {
		Now               string         `json:"now"`
		Payments          int            `json:"payments"`
		Payouts           int            `json:"payouts"`
		Webhooks          int            `json:"webhooks"`
		ConnectionsOpened int64          `json:"connectionsOpened"`
		Requests          map[Route]int  `json:"requests"`
		Faults            map[Route]int  `json:"pendingFaults"`
		Balances          []balanceJSON  `json:"balances"`
		Currencies        []currencyJSON `json:"currencies"`
	}
	st := stateJSON{
		Now:               wireTime(s.Now()),
		Payments:          s.PaymentCount(),
		Payouts:           s.PayoutCount(),
		Webhooks:          s.WebhooksRecorded(),
		ConnectionsOpened: s.ConnectionsOpened(),
		Requests:          make(map[Route]int, numRoutes),
		Faults:            make(map[Route]int, numRoutes),
	}
	for _, rt := range Routes() {
		st.Requests[rt] = s.Requests(rt)
		st.Faults[rt] = s.PendingFaults(rt)
	}
	s.mu.RLock()
	for _, k := range s.balanceKey {
		st.Balances = append(st.Balances, balanceJSON{Currency: k.Currency, Network: k.Network, Amount: number(s.balances[k])})
	}
	s.mu.RUnlock()
	for _, c := range s.currencies {
		st.Currencies = append(st.Currencies, currencyJSON(c))
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) ctlDuplicatePayout(w http.ResponseWriter, r *http.Request) {
	id, err := s.DuplicatePayout(r.PathValue("id"))
	if err != nil {
		writeControlError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		PayoutID string `json:"payoutId"`
	}{id})
}

func (s *Server) ctlPayoutAmount(w http.ResponseWriter, r *http.Request) {
	if amount, ok := ctlAmount(w, r); ok {
		if err := s.SetPayoutAmount(r.PathValue("id"), amount); err != nil {
			writeControlError(w, err)
			return
		}
		s.ctlGetPayout(w, r)
	}
}

func (s *Server) ctlLosePayout(w http.ResponseWriter, r *http.Request) {
	if err := s.LosePayout(r.PathValue("id")); err != nil {
		writeControlError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) ctlPaidAmount(w http.ResponseWriter, r *http.Request) {
	if amount, ok := ctlAmount(w, r); ok {
		if err := s.SetPaidAmount(r.PathValue("id"), amount); err != nil {
			writeControlError(w, err)
			return
		}
		s.ctlGetPayment(w, r)
	}
}

func (s *Server) ctlDebitBalance(w http.ResponseWriter, r *http.Request) {
	if key, amount, ok := ctlBalanceBody(w, r, false); ok {
		s.DebitBalance(key.Currency, key.Network, amount)
		s.getBalances(w)
	}
}
