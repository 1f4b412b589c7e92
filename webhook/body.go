package webhook

import (
	"cmp"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

// Limits on reading a webhook body, the work a Handler does before the
// token is checked.
const (
	// DefaultBodyReadTimeout is how long a Handler waits for a body
	// (beyond what MinBodyRate earns) unless Config.BodyReadTimeout says
	// otherwise.
	DefaultBodyReadTimeout = 10 * time.Second
	// DefaultMinBodyRate is the slowest a body may arrive, in bytes per
	// second, unless Config.MinBodyRate says otherwise.
	DefaultMinBodyRate = 1024
)

// firstBodyBuf is the buffer a body is first read into when its declared
// length is unknown or larger; a body grows it as its bytes arrive. A
// declared length up to this is allocated at once (one allocation for the
// usual small event).
const firstBodyBuf = 4 << 10

// errBodyTooSlow is a body that did not arrive before its deadline.
var errBodyTooSlow = errors.New("body too slow")

// bodyReader reads one request's body under the handler's limits.
type bodyReader struct {
	maxBody int64
	timeout time.Duration
	rate    int64 // bytes per second
}

// newBodyReader checks cfg's body limits and fills in the defaults.
func newBodyReader(cfg *Config) (bodyReader, error) {
	if cfg.BodyReadTimeout < 0 {
		return bodyReader{}, &cryptopay.ValidationError{Field: "BodyReadTimeout", Reason: "must not be negative"}
	}
	if cfg.MinBodyRate < 0 {
		return bodyReader{}, &cryptopay.ValidationError{Field: "MinBodyRate", Reason: "must not be negative"}
	}
	return bodyReader{
		maxBody: cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		timeout: cmp.Or(cfg.BodyReadTimeout, DefaultBodyReadTimeout),
		rate:    cmp.Or(cfg.MinBodyRate, DefaultMinBodyRate),
	}, nil
}

// read reads r's body up to maxBody bytes (more is an *http.MaxBytesError)
// under a read deadline of start + timeout + received/rate, moved on as
// bytes arrive, so a sender that trickles its body is cut off. The buffer
// grows with what arrives, never to a declared length it has not seen.
//
// The deadline is set on the connection through http.ResponseController;
// where the writer cannot set one (a recorder in tests) it is checked
// between reads. A Server's ReadTimeout still bounds the whole request:
// the deadline never goes past the request's start plus ReadTimeout.
func (b bodyReader) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	s := b.schedule(r)
	rc := http.NewResponseController(w)
	onConn := rc.SetReadDeadline(s.deadline(0)) == nil

	size := int64(firstBodyBuf)
	if n := r.ContentLength; n >= 0 && n <= firstBodyBuf {
		size = n
	}
	buf := make([]byte, 0, size)
	src := http.MaxBytesReader(w, r.Body, b.maxBody)
	probe := make([]byte, 1) // a read past a full buffer of exactly the declared length
	for {
		var n int
		var err error
		buf, n, err = readChunk(src, buf, probe)
		if errors.Is(err, io.EOF) {
			if onConn {
				// Read in time: the connection's deadline is the
				// server's again, so a background read cannot time out
				// under ours while the callback runs. (A body that was
				// too slow keeps its passed deadline: the server then
				// cannot wait on the rest of it and closes the
				// connection.)
				_ = rc.SetReadDeadline(s.hardStop)
			}
			return buf, nil
		}
		if err != nil {
			if isTimeout(err) {
				return nil, errBodyTooSlow
			}
			return nil, err
		}
		d := s.deadline(int64(len(buf)))
		if onConn {
			if n > 0 {
				_ = rc.SetReadDeadline(d)
			}
		} else if time.Now().After(d) {
			return nil, errBodyTooSlow
		}
	}
}

// readSchedule is when a body's read must be done by: BodyReadTimeout
// after it started plus the time the bytes received so far earned at
// MinBodyRate, never after the server's own ReadTimeout (hardStop).
type readSchedule struct {
	start, hardStop time.Time // hardStop is zero if the server has no ReadTimeout
	timeout         time.Duration
	rate            int64 // bytes per second
}

// schedule starts the read schedule of r's body now.
func (b bodyReader) schedule(r *http.Request) readSchedule {
	s := readSchedule{start: time.Now(), timeout: b.timeout, rate: b.rate}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		s.hardStop = s.start.Add(srv.ReadTimeout)
	}
	return s
}

// deadline is when the read must be done by, received bytes in.
func (s readSchedule) deadline(received int64) time.Time {
	earned := time.Duration(received/s.rate)*time.Second + time.Duration(received%s.rate)*time.Second/time.Duration(s.rate)
	d := s.start.Add(s.timeout + earned)
	if !s.hardStop.IsZero() && d.After(s.hardStop) {
		d = s.hardStop
	}
	return d
}

// readChunk reads src's next bytes into buf's free capacity or, when buf is
// full (a body of exactly the declared length so far), into probe (one
// byte), so that buf grows only for bytes that arrive. It returns buf with
// them, how many arrived and the read's error.
func readChunk(src io.Reader, buf, probe []byte) ([]byte, int, error) {
	if len(buf) < cap(buf) {
		n, err := src.Read(buf[len(buf):cap(buf)])
		return buf[:len(buf)+n], n, err
	}
	n, err := src.Read(probe)
	if n > 0 {
		buf = append(buf, probe[0]) // grows by the append's own rule
	}
	return buf, n, err
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
