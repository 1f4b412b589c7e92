package cryptopay

import (
	"net/http"
	"net/url"
	"testing"
)

// TestNewRequestMatchesURLParse: the request URL built from the base parsed
// once (newRequest) is the one http.NewRequest(base+path) gives: the same
// scheme, host, path, escaped path and query, so the same bytes on the wire.
func TestNewRequestMatchesURLParse(t *testing.T) {
	bases := []string{"http://127.0.0.1:8080", "https://api.example.com/", "https://api.example.com/pre%20fix/",
		"https://api.example.com/a b/c", "https://[::1]:443/x", "http://localhost:/p"}
	ids := []string{"abc", "a b", "ü€", "a+b&c=d;e:f@g$h!i'j(k)l*m,n", "x\"y<z>{}|^`", "~._-"}
	for _, b := range bases {
		c, err := NewClient(b, "k_123456")
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		paths := []string{"/v1/payout/list?limit=100&offset=5", "/v1/payment/6f1c2a4e-8b9d-4e3f-a1b2-c3d4e5f60718/status", "/v1/payment"}
		for _, id := range ids {
			paths = append(paths, "/v1/payout/"+url.PathEscape(id)+"/status")
		}
		for _, p := range paths {
			want, err := http.NewRequest(http.MethodGet, c.base+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.newURL(p)
			if err != nil {
				t.Fatal(err)
			}
			w := want.URL
			if g.String() != w.String() || g.RequestURI() != w.RequestURI() || g.Path != w.Path ||
				g.EscapedPath() != w.EscapedPath() || g.RawQuery != w.RawQuery || g.Host != w.Host || c.reqHost != want.Host {
				t.Errorf("%q + %q:\n got %q (host %q, request host %q)\nwant %q (host %q, request host %q)",
					b, p, g, g.Host, c.reqHost, w, w.Host, want.Host)
			}
		}
	}
}
