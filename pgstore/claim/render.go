package claim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// style is the pages' only style sheet, inline and allowed by its hash.
const style = `body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3em 1em}dt{color:#666}dd{margin:0}
input[type=text]{width:100%;font:inherit;padding:.4em;box-sizing:border-box}button{font:inherit;padding:.4em 1.2em;margin-top:.6em}
.problem{color:#a00}.status{font-weight:bold}code{word-break:break-all}`

// contentSecurityPolicy: the inline style by its hash, forms posting to
// this page, nothing else (no script, image, frame or base).
var contentSecurityPolicy = func() string {
	sum := sha256.Sum256([]byte(style))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

// setHeaders sets the browser-safety headers on every answer: the token
// is in the URL, so no referrer and no cache.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// status is a refund's progress as the customer reads it.
type status struct{ Word, Text string }

// page is what a page shows.
type page struct {
	Title   string
	Refund  *pgstore.Refund // nil on a refusal
	Form    bool            // the address form
	Problem string          // why the address was refused, or the refusal
	Address string          // the address refused, shown back in the form
	Status  status
}

var pages = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title><style>` + style + `</style></head>
<body><main><h1 id="title">{{.Title}}</h1>
{{- with .Refund}}
<dl><dt>Amount</dt><dd id="amount">{{.Amount}} {{.Currency}}</dd><dt>Network</dt><dd id="network">{{.Network}}</dd>
{{- if .WalletAddress}}<dt>To</dt><dd id="address"><code>{{.WalletAddress}}</code></dd>{{end}}</dl>
{{- end}}
{{- if .Problem}}<p class="problem" id="problem">{{.Problem}}</p>{{end}}
{{- if .Form}}
<form method="post" id="claim"><label for="address">Your wallet address on {{.Refund.Network}}</label>
<input type="text" id="address-input" name="address" value="{{.Address}}" required autocomplete="off" spellcheck="false" maxlength="200">
<p>Check it twice: a refund sent to a wrong address is lost. The merchant approves the refund before it is sent.</p>
<button type="submit" id="submit">Claim the refund</button></form>
{{- else if .Refund}}
<p class="status" id="status">{{.Status.Word}}</p><p>{{.Status.Text}}</p><p>Reload this page to follow your refund; keep its link.</p>
{{- end}}
</main></body></html>
`))

// render writes p with code.
func render(w http.ResponseWriter, code int, p page) {
	var b bytes.Buffer
	if err := pages.Execute(&b, p); err != nil {
		code, b = http.StatusInternalServerError, *bytes.NewBufferString("internal error\n")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// refuse writes a refusal page: msg, and nothing of any refund.
func refuse(w http.ResponseWriter, code int, msg string) {
	render(w, code, page{Title: http.StatusText(code), Problem: msg})
}
