package cryptopaytest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// TestTLSServerSpeaksHTTP2: the TLS server's Client and HTTPClient trust
// its certificate and negotiate HTTP/2, as clients of a real HTTPS API do.
func TestTLSServerSpeaksHTTP2(t *testing.T) {
	t.Parallel()
	s := cryptopaytest.NewTLSServer()
	t.Cleanup(s.Close)
	require.True(t, strings.HasPrefix(s.URL, "https://127.0.0.1:"), s.URL)
	require.NotNil(t, s.Certificate())

	var resp cryptopay.Response
	b, err := s.Client().GetBalances(context.Background(), cryptopay.WithResponseInto(&resp))
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	assert.Equal(t, "HTTP/2.0", resp.Proto, "the SDK's client negotiated h2")

	hc := s.HTTPClient()
	req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/currencies", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", s.APIKey)
	raw, err := hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, raw.Body)
	_ = raw.Body.Close()
	assert.Equal(t, http.StatusOK, raw.StatusCode)
	assert.Equal(t, "HTTP/2.0", raw.Proto)
	require.NotNil(t, raw.TLS)
	assert.Equal(t, "h2", raw.TLS.NegotiatedProtocol)
	hc.CloseIdleConnections()
}

func TestTLSServerCertificate(t *testing.T) {
	t.Parallel()
	plain := newServer(t)
	assert.Nil(t, plain.Certificate(), "no certificate without TLS")

	s := newServer(t, cryptopaytest.WithTLS())
	cert := s.Certificate()
	require.NotNil(t, cert)
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		assert.NoError(t, cert.VerifyHostname(host), host)
	}

	// A client that does not trust it is refused, and the refusal is not
	// retried.
	c, err := cryptopay.NewClient(s.URL, s.APIKey)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	_, err = c.GetBalances(context.Background())
	var verify *tls.CertificateVerificationError
	require.ErrorAs(t, err, &verify)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, verify.Err, &unknown)
	assert.Equal(t, 0, s.Requests(cryptopaytest.RouteBalance))
}

// TestTLSServerHTTP1: a client that does not offer h2 gets HTTP/1.1 over
// TLS.
func TestTLSServerHTTP1(t *testing.T) {
	t.Parallel()
	s := newServer(t, cryptopaytest.WithTLS())
	tr := s.HTTPClient().Transport.(*http.Transport)
	tr.ForceAttemptHTTP2 = false
	t.Cleanup(tr.CloseIdleConnections)
	var resp cryptopay.Response
	_, err := s.Client(cryptopay.WithHTTPClient(&http.Client{Transport: tr})).
		ListCurrencies(context.Background(), cryptopay.WithResponseInto(&resp))
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1", resp.Proto)
}

// TestTLSServerFaults: faults act over HTTP/2 as over HTTP/1.1: a dropped
// or cut answer to a processed payout leaves one payout and an unknown
// outcome; a GET recovers from one and reports the cut when every attempt
// is cut.
func TestTLSServerFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, f := range []cryptopaytest.Fault{{Process: true, Drop: true}, {Process: true, Truncate: true}} {
		s := newServer(t, cryptopaytest.WithTLS())
		c := s.Client()
		s.InjectFault(cryptopaytest.RouteCreatePayout, f)
		_, err := c.CreatePayout(ctx, payoutParams("tls-fault"))
		require.ErrorIs(t, err, cryptopay.ErrOutcomeUnknown, "%+v", f)
		assert.Equal(t, 1, s.Requests(cryptopaytest.RouteCreatePayout))
		assert.Equal(t, 1, s.PayoutsWithOrderID("tls-fault"))

		s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Drop: f.Drop, Truncate: f.Truncate, Process: f.Truncate})
		var resp cryptopay.Response
		_, err = c.GetBalances(ctx, cryptopay.WithResponseInto(&resp))
		require.NoError(t, err, "%+v", f)
		assert.Equal(t, 2, resp.Attempts)
		assert.Equal(t, "HTTP/2.0", resp.Proto)
		assert.GreaterOrEqual(t, s.ConnectionsOpened(), int64(2), "the fault cut the connection")
	}
	s := newServer(t, cryptopaytest.WithTLS())
	s.InjectFault(cryptopaytest.RouteBalance, cryptopaytest.Fault{Process: true, Truncate: true, Times: 4})
	_, err := s.Client().GetBalances(ctx)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// A fake that speaks HTTPS and HTTP/2, so a test runs on the transport the
// merchant ships on.
func ExampleNewTLSServer() {
	srv := cryptopaytest.NewTLSServer()
	defer srv.Close()

	client := srv.Client() // trusts the server's certificate
	var resp cryptopay.Response
	_, err := client.GetBalances(context.Background(), cryptopay.WithResponseInto(&resp))
	fmt.Println(err, strings.HasPrefix(srv.URL, "https://"), resp.Proto)
	// Output: <nil> true HTTP/2.0
}
