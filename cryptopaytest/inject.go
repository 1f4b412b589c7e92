package cryptopaytest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// InjectFault queues f for route: it applies to the next f.Times requests
// of that route (0 means 1), after any faults queued before it. Every
// request is still counted by Requests. It panics on a route that is not one
// of the Route constants.
func (s *Server) InjectFault(route Route, f Fault) {
	i := route.index()
	if i < 0 {
		panic(fmt.Sprintf("cryptopaytest: InjectFault: unknown route %q", route))
	}
	s.faults.add(i, f)
}

// PendingFaults returns how many requests of route queued faults will
// still hit.
func (s *Server) PendingFaults(route Route) int {
	i := route.index()
	if i < 0 {
		return 0
	}
	return s.faults.pending(i)
}

// ClearFaults removes every queued fault.
func (s *Server) ClearFaults() { s.faults.clear() }

// serveFault answers a request that a fault hits.
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, idx int, id string, body []byte, f Fault) {
	ctx := r.Context()
	if !f.Process {
		if !s.sleep(ctx, f.Delay) {
			panic(http.ErrAbortHandler) // the client left: send nothing, not an implicit 200
		}
		switch {
		case f.Drop:
			drop(w, r)
		case f.responds():
			status := f.Status
			if status == 0 {
				status = http.StatusInternalServerError
			}
			b := []byte(f.Body)
			if f.Body == "" && !f.EmptyBody {
				b = errorBody(codeFault, "fault injected by cryptopaytest; the request was not processed")
			}
			ct := f.ContentType
			if ct == "" {
				ct = "application/json"
			}
			sendFaultResponse(w, r, status, ct, f.RetryAfter, b, f.Truncate)
		default:
			s.serveRoute(w, r, idx, id, body)
		}
		return
	}

	rec := &recorder{header: make(http.Header), status: http.StatusOK}
	s.serveRoute(rec, r, idx, id, body)
	if !s.sleep(ctx, f.Delay) {
		panic(http.ErrAbortHandler) // the client left: send nothing, not an implicit 200
	}
	if f.Drop {
		drop(w, r)
		return
	}
	status, ct, b := rec.status, rec.header.Get("Content-Type"), rec.body.Bytes()
	if f.Status != 0 {
		status = f.Status
		if f.Body == "" {
			b = errorBody(codeFault, "fault injected by cryptopaytest after the request was processed")
			ct = "application/json"
		}
	}
	if f.Body != "" || f.EmptyBody {
		b = []byte(f.Body)
	}
	if f.ContentType != "" {
		ct = f.ContentType
	}
	sendFaultResponse(w, r, status, ct, f.RetryAfter, b, f.Truncate)
}

func sendFaultResponse(w http.ResponseWriter, r *http.Request, status int, ct, retryAfter string, body []byte, truncate bool) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	if !truncate {
		writeRaw(w, status, ct, body)
		return
	}
	conn, bufw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		cutStream(w, r, status, ct, body) // HTTP/2 (tls.go)
		return
	}
	defer conn.Close()
	declared := max(len(body), 2)
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	if ct != "" {
		fmt.Fprintf(&head, "Content-Type: %s\r\n", ct)
	}
	head.WriteString("Content-Length: " + strconv.Itoa(declared) + "\r\n")
	if id := w.Header().Get("X-Request-Id"); id != "" {
		head.WriteString("X-Request-Id: " + id + "\r\n")
	}
	if retryAfter != "" {
		head.WriteString("Retry-After: " + retryAfter + "\r\n")
	}
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2])
	_, _ = bufw.Write(head.Bytes())
	_ = bufw.Flush()
}

// drop closes the connection with no response; a TCP reset when possible.
func drop(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		if !closeConnOf(r, true) { // HTTP/2 (tls.go)
			panic(http.ErrAbortHandler)
		}
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// recorder captures the real response of a request processed under a fault.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}
