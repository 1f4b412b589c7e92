package dashboard

import (
	"net"
	"net/http"
	"strings"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// contentSecurityPolicy allows the page's own script, style and images and
// nothing else: no inline script, no framing, no posting elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Handler returns the dashboard of srv, to be mounted at "/" of a server
// that listens on loopback (the page uses relative links, so a StripPrefix
// mount works too). It serves:
//
//	GET  /                              the page
//	GET  /dashboard/panel               the live part of the page (HTML)
//	GET  /dashboard/static/{file}       script and style
//	GET  /dashboard/qr/{paymentId}      the payment's payQrCodeUri as a PNG QR code
//	POST /dashboard/payments/{id}/pay   {"how": "full" | "part" | "over"}
//	POST /dashboard/payments/{id}/expire
//	POST /dashboard/payouts/{id}/status {"status": "paid"}
//	POST /dashboard/clock/advance       {"duration": "1h"}
//	POST /dashboard/faults              {"route": "POST /v1/payout", "preset": "drop", "times": 1}
//	POST /dashboard/faults/clear
//
// Every request must name a loopback Host (403 otherwise). A POST must
// carry an Origin equal to the dashboard's own origin and a JSON body (403
// and 415 otherwise); the actions call srv's methods directly.
func Handler(srv *cryptopaytest.Server) http.Handler {
	d := &dash{srv: srv}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.servePage)
	mux.HandleFunc("GET /dashboard/panel", d.servePanel)
	mux.HandleFunc("GET /dashboard/static/{file}", serveStatic)
	mux.HandleFunc("GET /dashboard/qr/{id}", d.serveQR)
	mux.HandleFunc("POST /dashboard/payments/{id}/pay", d.pay)
	mux.HandleFunc("POST /dashboard/payments/{id}/expire", d.expire)
	mux.HandleFunc("POST /dashboard/payouts/{id}/status", d.payoutStatus)
	mux.HandleFunc("POST /dashboard/clock/advance", d.advance)
	mux.HandleFunc("POST /dashboard/faults", d.addFault)
	mux.HandleFunc("POST /dashboard/faults/clear", d.clearFaults)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "404 page not found: the API is under /v1/, the control API under /_control/", http.StatusNotFound)
	})
	return guard{mux}
}

// guard applies the loopback, origin and header rules to every request.
type guard struct{ next http.Handler }

func (g guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if !isLoopbackHost(hostOnly(r.Host)) {
		writeError(w, http.StatusForbidden, "the dashboard only answers requests for a loopback host (127.0.0.1, ::1, localhost)")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if status, msg := checkAction(r); status != 0 {
			writeError(w, status, msg)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// checkAction refuses a state-changing request that does not come from the
// dashboard's own page: its Origin must be this very origin (a browser
// sends it on every POST and a page cannot forge it), and its body JSON (a
// cross-site HTML form cannot send that without a preflight).
func checkAction(r *http.Request) (status int, msg string) {
	origin := r.Header.Get("Origin")
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	switch {
	case origin == "":
		return http.StatusForbidden, "dashboard actions need the dashboard's Origin header; scripts should use the control API under /_control/"
	case !strings.EqualFold(origin, scheme+r.Host):
		return http.StatusForbidden, "dashboard actions only run for the dashboard's own page, not for " + origin
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return http.StatusForbidden, "dashboard actions only run for same-origin requests"
	}
	if ct := r.Header.Get("Content-Type"); !strings.EqualFold(strings.TrimSpace(strings.Split(ct, ";")[0]), "application/json") {
		return http.StatusUnsupportedMediaType, "dashboard actions take a JSON body (Content-Type: application/json)"
	}
	return 0, ""
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveStatic serves the embedded script and style.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	var ctype string
	switch {
	case strings.HasSuffix(name, ".js"):
		ctype = "text/javascript; charset=utf-8"
	case strings.HasSuffix(name, ".css"):
		ctype = "text/css; charset=utf-8"
	}
	b, err := files.ReadFile("static/" + name)
	if ctype == "" || err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
