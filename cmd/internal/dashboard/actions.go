package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// maxActionBody caps an action's JSON body.
const maxActionBody = 4 << 10

// maxAdvance caps one clock advance.
const maxAdvance = 366 * 24 * time.Hour

type actionReply struct {
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeReply(w, status, actionReply{Error: msg})
}

func writeReply(w http.ResponseWriter, status int, v actionReply) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func done(w http.ResponseWriter, format string, args ...any) {
	writeReply(w, http.StatusOK, actionReply{Message: fmt.Sprintf(format, args...)})
}

// fail answers with the status that matches one of the fake's errors.
func fail(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, cryptopaytest.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, cryptopaytest.ErrTransition):
		status = http.StatusConflict
	}
	writeError(w, status, err.Error())
}

// decode reads a small strict JSON body into v; an empty body is {}.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActionBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "action body too large")
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		writeError(w, http.StatusBadRequest, "bad action body: want one JSON object with the documented keys")
		return false
	}
	return true
}

// payAmount is what "full", "part" and "over" send to payment p: the
// outstanding amount, half of it, or it plus a tenth of payAmount.
func payAmount(p cryptopaytest.PaymentSnapshot, how string) (decimal.Decimal, error) {
	rest := decimal.Max(p.PayAmount.Sub(p.PaidAmount.Decimal), decimal.Zero)
	switch how {
	case "full", "part":
		if !rest.IsPositive() {
			return decimal.Zero, fmt.Errorf("%w: payment %s is already paid in full", cryptopaytest.ErrTransition, p.ID)
		}
		if how == "part" {
			return rest.Mul(decimal.New(5, -1)), nil
		}
		return rest, nil
	case "over":
		return rest.Add(p.PayAmount.Mul(decimal.New(1, -1))), nil
	}
	return decimal.Zero, fmt.Errorf("%w: how must be full, part or over, not %q", cryptopaytest.ErrInvalid, how)
}

func (d *dash) pay(w http.ResponseWriter, r *http.Request) {
	var in struct {
		How string `json:"how"`
	}
	if !decode(w, r, &in) {
		return
	}
	id := r.PathValue("id")
	d.act.Lock()
	defer d.act.Unlock()
	p, err := d.srv.Payment(id)
	if err != nil {
		fail(w, err)
		return
	}
	amount, err := payAmount(p, in.How)
	if err == nil {
		err = d.srv.Pay(id, amount)
	}
	if err != nil {
		fail(w, err)
		return
	}
	p, _ = d.srv.Payment(id)
	done(w, "payment %s received %s %s: now %s", shortID(id), amount, p.Currency, p.Status)
}

func (d *dash) expire(w http.ResponseWriter, r *http.Request) {
	if !decode(w, r, &struct{}{}) {
		return
	}
	id := r.PathValue("id")
	d.act.Lock()
	defer d.act.Unlock()
	if err := d.srv.SetPaymentStatus(id, cryptopay.PaymentExpired); err != nil {
		fail(w, err)
		return
	}
	done(w, "payment %s expired", shortID(id))
}

func (d *dash) payoutStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status string `json:"status"`
	}
	if !decode(w, r, &in) {
		return
	}
	id := r.PathValue("id")
	d.act.Lock()
	defer d.act.Unlock()
	if err := d.srv.SetPayoutStatus(id, cryptopay.PayoutStatus(in.Status)); err != nil {
		fail(w, err)
		return
	}
	done(w, "payout %s is now %s", shortID(id), in.Status)
}

func (d *dash) advance(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Duration string `json:"duration"`
	}
	if !decode(w, r, &in) {
		return
	}
	dur, err := time.ParseDuration(in.Duration)
	if err != nil || dur <= 0 || dur > maxAdvance {
		writeError(w, http.StatusBadRequest, "duration must be a Go duration from 1s to 8784h, such as 30m or 24h")
		return
	}
	d.act.Lock()
	defer d.act.Unlock()
	d.srv.Advance(dur)
	done(w, "clock advanced by %s: now %s UTC", dur, clockText(d.srv.Now()))
}

func (d *dash) addFault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Route  string `json:"route"`
		Preset string `json:"preset"`
		Times  int    `json:"times"`
	}
	if !decode(w, r, &in) {
		return
	}
	route := cryptopaytest.Route(in.Route)
	if !slices.Contains(cryptopaytest.Routes(), route) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown route %q", in.Route))
		return
	}
	i := slices.IndexFunc(faultPresets, func(p faultPreset) bool { return p.Name == in.Preset })
	if i < 0 || in.Times < 1 || in.Times > 100 {
		writeError(w, http.StatusBadRequest, "want a known fault preset and times from 1 to 100")
		return
	}
	f := faultPresets[i].Fault
	f.Times = in.Times
	d.srv.InjectFault(route, f)
	done(w, "the next %d %s request(s) will get: %s", in.Times, route, faultPresets[i].Label)
}

func (d *dash) clearFaults(w http.ResponseWriter, r *http.Request) {
	if !decode(w, r, &struct{}{}) {
		return
	}
	d.srv.ClearFaults()
	done(w, "every queued fault was removed")
}
