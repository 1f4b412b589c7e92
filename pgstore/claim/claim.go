package claim

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// DefaultStatusFor is how long the status link a claim leads to stays
// valid (Config.StatusFor).
const DefaultStatusFor = 180 * 24 * time.Hour

// maxBody bounds a claim's form: the token is in the URL, the body holds
// the address only.
const maxBody = 2 << 10

// Config configures New. Refunds and Key are required.
type Config struct {
	// Refunds holds the refunds claimed (pgstore.NewRefunds).
	Refunds *pgstore.Refunds
	// Key signs and checks the links (HMAC-SHA256): at least MinKeyLen
	// bytes of a secret from your configuration. Anyone with it can make
	// links; changing it voids every link out.
	Key []byte
	// StatusFor is how long the status link stays valid after a claim
	// (default DefaultStatusFor).
	StatusFor time.Duration
	// ClientIP returns the customer's address for the payout's
	// customerIp; default: the host of the request's RemoteAddr. Behind
	// a proxy, read the header your proxy sets (and only that proxy can).
	ClientIP func(*http.Request) string
	// Logger receives the database failures the page hides from the
	// customer (default slog.Default()).
	Logger *slog.Logger
}

// handler is the claim page.
type handler struct {
	cfg Config
}

// New returns the claim page: an http.Handler to mount where the claim
// links point (Link's base), behind TLS. A GET with a valid claim token
// shows the refund (amount, currency, network) and a form for the
// customer's address; the POST checks the address offline for the
// network, records the claim (pgstore.Refunds.Claim: the payout intent,
// held for approval) and sends the browser on to the status link, which
// shows the refund's progress (awaiting approval, being sent, sent, paid,
// failed) until StatusFor has passed, with no login. The token is checked
// before anything else (its length, then its MAC in constant time, then
// its time; the body is read only after, at most 2 KiB): a forged,
// expired or reused token, or an invalid address, is refused with a page
// and changes nothing. A page shows the one refund its token names. No
// script: every page works without JavaScript under a strict
// Content-Security-Policy.
func New(cfg Config) (http.Handler, error) {
	if cfg.Refunds == nil {
		return nil, errors.New("claim: Config.Refunds is nil")
	}
	if len(cfg.Key) < MinKeyLen {
		return nil, errors.New("claim: Config.Key is shorter than MinKeyLen")
	}
	if cfg.StatusFor <= 0 {
		cfg.StatusFor = DefaultStatusFor
	}
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteHost
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &handler{cfg: cfg}, nil
}

// remoteHost is the host of r.RemoteAddr.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// ServeHTTP answers one request; see New.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w.Header())
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		refuse(w, http.StatusMethodNotAllowed, "This page only shows a refund and takes its address.")
		return
	}
	if len(r.URL.RawQuery) > 2*maxToken {
		refuse(w, http.StatusForbidden, notValid)
		return
	}
	tok, err := verify(h.cfg.Key, r.URL.Query().Get("t"), time.Now())
	switch {
	case errors.Is(err, ErrExpired):
		refuse(w, http.StatusGone, expired)
		return
	case err != nil:
		refuse(w, http.StatusForbidden, notValid)
		return
	}
	f, err := h.cfg.Refunds.Get(r.Context(), tok.refundID)
	switch {
	case errors.Is(err, pgstore.ErrRefundNotFound):
		refuse(w, http.StatusForbidden, notValid)
		return
	case err != nil:
		h.unavailable(w, r.Context(), err)
		return
	}
	if r.Method == http.MethodPost {
		h.claim(w, r, tok, f)
		return
	}
	if f.State == pgstore.RefundAwaitingClaim {
		switch {
		case tok.purpose != purposeClaim:
			render(w, http.StatusOK, page{Title: "Your refund", Refund: f, Status: waiting})
		case !time.Now().Before(f.ClaimUntil):
			refuse(w, http.StatusGone, expired)
		default:
			render(w, http.StatusOK, page{Title: "Claim your refund", Refund: f, Form: true})
		}
		return
	}
	render(w, http.StatusOK, page{Title: "Your refund", Refund: f, Status: statusOf(f)})
}

// claim takes the customer's address for f, once.
func (h *handler) claim(w http.ResponseWriter, r *http.Request, tok *token, f *pgstore.Refund) {
	switch {
	case tok.purpose != purposeClaim:
		refuse(w, http.StatusForbidden, "This link only shows your refund.")
		return
	case r.Header.Get("Sec-Fetch-Site") == "cross-site":
		refuse(w, http.StatusForbidden, "The form must be sent from this page.")
		return
	case f.State != pgstore.RefundAwaitingClaim:
		refuse(w, http.StatusConflict, claimed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		if _, big := errors.AsType[*http.MaxBytesError](err); big {
			refuse(w, http.StatusRequestEntityTooLarge, "The form was too large.")
			return
		}
		refuse(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	addr := strings.TrimSpace(r.PostForm.Get("address"))
	_, err := h.cfg.Refunds.Claim(r.Context(), f.ID, addr, h.cfg.ClientIP(r))
	if ve, bad := errors.AsType[*cryptopay.ValidationError](err); bad {
		msg := "Enter the address of your wallet on " + f.Network + "."
		if addr != "" {
			msg = "That is not a valid " + f.Network + " address (" + ve.Reason + "). Check it and try again."
		}
		render(w, http.StatusUnprocessableEntity, page{Title: "Claim your refund", Refund: f, Form: true, Problem: msg, Address: addr})
		return
	}
	switch {
	case errors.Is(err, pgstore.ErrClaimClosed):
		if time.Now().Before(f.ClaimUntil) {
			refuse(w, http.StatusConflict, claimed)
		} else {
			refuse(w, http.StatusGone, expired)
		}
		return
	case err != nil:
		h.unavailable(w, r.Context(), err)
		return
	}
	next, err := sign(h.cfg.Key, purposeStatus, f.ID, time.Now().Add(h.cfg.StatusFor))
	if err != nil {
		h.unavailable(w, r.Context(), err)
		return
	}
	w.Header().Set("Location", "?t="+next)
	w.WriteHeader(http.StatusSeeOther)
}

// unavailable logs err (never shown: it is the database's) and answers
// 503.
func (h *handler) unavailable(w http.ResponseWriter, ctx context.Context, err error) {
	h.cfg.Logger.ErrorContext(ctx, "claim: the refunds could not be read or written", slog.String("error", err.Error()))
	refuse(w, http.StatusServiceUnavailable, "Your refund cannot be shown right now. Try again in a few minutes.")
}

// The refusals' words.
const (
	notValid = "This link is not valid. Use the link exactly as you received it."
	expired  = "This link has expired. Ask the merchant for a new one."
	claimed  = "This refund was claimed already. Follow it with the link you were sent to after claiming it."
)

var (
	waiting   = status{"Waiting for your address", "This refund has not been claimed yet."}
	approving = status{"Awaiting approval", "The merchant approves every refund before it is sent."}
	sending   = status{"Being sent", "Your refund is approved and being sent."}
	sent      = status{"Sent", "Your refund was sent; it is on its way to your wallet."}
	paid      = status{"Paid", "Your refund was paid to your wallet."}
	failed    = status{"Failed", "Your refund could not be sent. The merchant will contact you."}
)

// statusOf is f's progress, from its payout's state.
func statusOf(f *pgstore.Refund) status {
	switch f.PayoutState {
	case pgstore.StateNeedsApproval:
		return approving
	case pgstore.StateCreated:
		return sent
	case pgstore.StatePaid:
		return paid
	case pgstore.StateFailed, pgstore.StateRefused, pgstore.StateRejected, pgstore.StateBlocked:
		return failed
	case "":
		return waiting
	}
	return sending // queued, sending, reconciling, parked: approved, not yet created
}
