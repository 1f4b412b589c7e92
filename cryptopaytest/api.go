package cryptopaytest

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

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

// ConnState counts the connections a listener accepts into
// ConnectionsOpened. s sets it on its own listener's server; set it as the
// http.Server.ConnState of a server that serves Handler elsewhere.
func (s *Server) ConnState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.conns.Add(1)
	}
}

// ConnectionsOpened returns how many TCP connections the server's listener
// has accepted: compare it with the number of callers to see whether a
// client reuses connections.
func (s *Server) ConnectionsOpened() int64 { return s.conns.Load() }

// Requests returns how many requests of route have arrived, whether they
// were answered normally, refused (401, 400, ...) or faulted. An unknown
// route returns 0.
func (s *Server) Requests(route Route) int {
	i := route.index()
	if i < 0 {
		return 0
	}
	return int(s.requests[i].Load())
}

func (s *Server) nextRequestID() string {
	return s.reqPrefix + strconv.FormatUint(s.reqSeq.Add(1), 10)
}
