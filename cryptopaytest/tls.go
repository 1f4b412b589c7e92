package cryptopaytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// WithTLS serves the API over TLS, like httptest.NewTLSServer: a fresh
// self-signed certificate for 127.0.0.1, ::1 and localhost, and HTTP/2 (h2)
// or HTTP/1.1 as the client asks by ALPN. URL is then
// "https://127.0.0.1:port"; Client and HTTPClient trust the certificate,
// and Client negotiates HTTP/2, as a real API over HTTPS does. Faults work
// the same: Drop resets the connection (on HTTP/2 every stream on it
// fails), Truncate sends half the body and then closes the connection.
func WithTLS() ServerOption {
	return func(c *serverConfig) { c.tls = true }
}

// Certificate returns the certificate the server presents, or nil without
// WithTLS.
func (s *Server) Certificate() *x509.Certificate {
	if s.tls == nil {
		return nil
	}
	return s.tls.cert
}

// HTTPClient returns a new *http.Client for the server, on a transport of
// its own: it trusts the server's certificate (and no other) and
// negotiates HTTP/2 over TLS. Use it for raw requests, or pass it to
// cryptopay.WithHTTPClient; with WithTLS, Client already does. Close the
// transport's idle connections when done (Close cuts them anyway).
func (s *Server) HTTPClient() *http.Client {
	tr := &http.Transport{
		ForceAttemptHTTP2:   true,
		MaxConnsPerHost:     cryptopay.DefaultMaxConnsPerHost,
		MaxIdleConns:        cryptopay.DefaultMaxConnsPerHost,
		MaxIdleConnsPerHost: cryptopay.DefaultMaxConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
	}
	if s.tls != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: s.tls.pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}
}

// clientOptions go first in Client's options: with WithTLS, the HTTP
// client that trusts the certificate.
func (s *Server) clientOptions() []cryptopay.Option {
	if s.tls == nil {
		return nil
	}
	return []cryptopay.Option{cryptopay.WithHTTPClient(s.HTTPClient())}
}

// listen returns the listener to serve on and the base URL: ln itself over
// plain HTTP, or, with WithTLS, a TLS listener offering h2 and http/1.1
// (http.Server serves HTTP/2 on it by ALPN).
func (s *Server) listen(ln net.Listener) (net.Listener, string) {
	if !s.cfg.tls {
		return ln, "http://" + ln.Addr().String()
	}
	cert, pool := newCertificate()
	s.tls = &tlsState{cert: cert.Leaf, pool: pool}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
	return tls.NewListener(trackingListener{ln}, cfg), "https://" + ln.Addr().String()
}

// newCertificate makes a self-signed ECDSA certificate for the loopback
// names, valid from an hour ago for a year, and a pool that trusts it.
func newCertificate() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic("cryptopaytest: generating a TLS key: " + err.Error())
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"cryptopaytest"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic("cryptopaytest: creating a TLS certificate: " + err.Error())
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic("cryptopaytest: parsing a TLS certificate: " + err.Error())
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// liveConns holds every open connection of every WithTLS listener, by
// local and remote address, so that a fault can cut the connection of an
// HTTP/2 request, which cannot be hijacked.
var liveConns sync.Map // connKey -> *trackedConn

func connKey(local, remote string) string { return local + "|" + remote }

type trackingListener struct{ net.Listener }

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, key: connKey(c.LocalAddr().String(), c.RemoteAddr().String())}
	liveConns.Store(tc.key, tc)
	return tc, nil
}

// trackedConn is a TCP connection under TLS, known to liveConns until it
// is closed.
type trackedConn struct {
	net.Conn
	key string
}

func (c *trackedConn) Close() error {
	liveConns.CompareAndDelete(c.key, c)
	return c.Conn.Close()
}

// closeConnOf closes the TCP connection under the TLS connection that
// carried r, with a reset when reset is set. It reports false when r did
// not arrive on a WithTLS listener.
func closeConnOf(r *http.Request, reset bool) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil {
		return false
	}
	v, ok := liveConns.Load(connKey(local.String(), r.RemoteAddr))
	if !ok {
		return false
	}
	tc := v.(*trackedConn)
	if tcp, ok := tc.Conn.(*net.TCPConn); ok && reset {
		_ = tcp.SetLinger(0)
	}
	_ = tc.Close()
	return true
}

// cutStream is Truncate where the connection cannot be hijacked (HTTP/2):
// the headers declare the whole body, half of it is sent, and the
// connection is closed, so the client reads an unexpected EOF as it does
// over HTTP/1.1.
func cutStream(w http.ResponseWriter, r *http.Request, status int, ct string, body []byte) {
	h := w.Header()
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("Content-Length", strconv.Itoa(max(len(body), 2)))
	w.WriteHeader(status)
	_, _ = w.Write(body[:len(body)/2])
	_ = http.NewResponseController(w).Flush()
	time.Sleep(20 * time.Millisecond) // let the connection's writer send the frames
	if !closeConnOf(r, false) {
		panic(http.ErrAbortHandler)
	}
}
