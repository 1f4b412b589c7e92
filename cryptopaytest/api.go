package cryptopaytest

import (
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Route names one API operation, written as its method and path pattern.
type Route string

// The seven operations of the spec.
const (
	RouteCreatePayment Route = "POST /v1/payment"
	RouteGetPayment    Route = "GET /v1/payment/{id}/status"
	RouteCreatePayout  Route = "POST /v1/payout"
	RouteGetPayout     Route = "GET /v1/payout/{id}/status"
	RouteListPayouts   Route = "GET /v1/payout/list"
	RouteBalance       Route = "GET /v1/balance"
	RouteCurrencies    Route = "GET /v1/currencies"
)

const (
	rCreatePayment = iota
	rGetPayment
	rCreatePayout
	rGetPayout
	rListPayouts
	rBalance
	rCurrencies
	numRoutes
)

var routeInfo = [numRoutes]struct {
	route  Route
	method string
}{
	rCreatePayment: {RouteCreatePayment, http.MethodPost},
	rGetPayment:    {RouteGetPayment, http.MethodGet},
	rCreatePayout:  {RouteCreatePayout, http.MethodPost},
	rGetPayout:     {RouteGetPayout, http.MethodGet},
	rListPayouts:   {RouteListPayouts, http.MethodGet},
	rBalance:       {RouteBalance, http.MethodGet},
	rCurrencies:    {RouteCurrencies, http.MethodGet},
}

// Routes returns the seven routes of the API.
func Routes() []Route {
	out := make([]Route, numRoutes)
	for i := range routeInfo {
		out[i] = routeInfo[i].route
	}
	return out
}

func (r Route) index() int {
	for i := range routeInfo {
		if routeInfo[i].route == r {
			return i
		}
	}
	return -1
}

// matchRoute maps a path to a route index and the {id} it carries; -1 if
// no route has that path.
func matchRoute(path string) (int, string) {
	switch path {
	case "/v1/payment":
		return rCreatePayment, ""
	case "/v1/payout":
		return rCreatePayout, ""
	case "/v1/payout/list":
		return rListPayouts, ""
	case "/v1/balance":
		return rBalance, ""
	case "/v1/currencies":
		return rCurrencies, ""
	}
	if id, ok := idSegment(path, "/v1/payment/"); ok {
		return rGetPayment, id
	}
	if id, ok := idSegment(path, "/v1/payout/"); ok {
		return rGetPayout, id
	}
	return -1, ""
}

func idSegment(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/status")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// apiHandler serves the API.
type apiHandler struct{ s *Server }

func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	// A web page can reach a loopback port through DNS rebinding: its own
	// host name, resolved to 127.0.0.1. A browser always sends that name
	// as Host, so a request for a name that is not loopback is refused, as
	// the control API and the dashboard do. A request built in-process
	// without a host (http.NewRequest("GET", "/v1/...")) has no Host and
	// is served.
	if r.Host != "" && !isLoopbackHost(hostOnly(r.Host)) {
		writeError(w, http.StatusForbidden, "forbidden", "the fake API only answers requests for a loopback host (127.0.0.1, ::1, localhost)")
		return
	}
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, codeClosed, "the fake server is closed")
		return
	}
	defer s.inflight.Done()
	w.Header()["X-Request-Id"] = []string{s.nextRequestID()}
	idx, id := matchRoute(r.URL.Path)
	if s.cfg.logger.Enabled(r.Context(), slog.LevelInfo) {
		lw := &logWriter{ResponseWriter: w, status: http.StatusOK}
		defer s.logRequest(r, idx, lw, time.Now())
		w = lw
	}
	if idx < 0 {
		writeError(w, http.StatusNotFound, codeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	if m := routeInfo[idx].method; r.Method != m {
		w.Header().Set("Allow", m)
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+m)
		return
	}
	s.requests[idx].Add(1)

	// POST bodies are read before anything else: a faulted request can then
	// be processed later, and the server notices a client that goes away
	// during an injected delay.
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, "request body is larger than the limit")
				return
			}
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "reading the request body failed")
			return
		}
	}
	if f, ok := s.faults.next(idx); ok {
		s.serveFault(w, r, idx, id, body, f)
		return
	}
	s.serveRoute(w, r, idx, id, body)
}

// serveRoute answers a request for real: authentication, then the route.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, idx int, id string, body []byte) {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "missing x-api-key header")
		return
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.APIKey)) != 1 {
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "invalid API key")
		return
	}
	if r.Method == http.MethodPost {
		if rerr := checkJSONContentType(r); rerr != nil {
			writeRequestError(w, rerr)
			return
		}
	}
	switch idx {
	case rCreatePayment:
		s.createPayment(w, body)
	case rGetPayment:
		s.getPayment(w, id)
	case rCreatePayout:
		s.createPayout(w, body)
	case rGetPayout:
		s.getPayout(w, id)
	case rListPayouts:
		s.listPayouts(w, r)
	case rBalance:
		s.getBalances(w)
	case rCurrencies:
		s.getCurrencies(w)
	}
}

func writeRequestError(w http.ResponseWriter, e *requestError) {
	writeError(w, e.status, e.code, e.msg)
}

// logWriter remembers the status for the request log.
type logWriter struct {
	http.ResponseWriter
	status int
}

func (l *logWriter) WriteHeader(code int) {
	l.status = code
	l.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Hijack.
func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

func (s *Server) logRequest(r *http.Request, idx int, lw *logWriter, start time.Time) {
	route := "unknown"
	if idx >= 0 {
		route = string(routeInfo[idx].route)
	}
	s.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "cryptopaytest request",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", route),
		slog.Int("status", lw.status), slog.Duration("duration", time.Since(start)),
		slog.String("requestId", lw.Header().Get("X-Request-Id")))
}
