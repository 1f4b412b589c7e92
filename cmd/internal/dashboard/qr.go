package dashboard

import (
	"net/http"

	"rsc.io/qr"
)

// qrScale is the PNG's pixels per QR module: a payment URI (a version 4 or
// 5 code) becomes a PNG of about 250 px, sharp enough for a phone to scan
// from the screen.
const qrScale = 6

// serveQR renders the payment's payQrCodeUri as a PNG QR code. The URI is
// fixed when the payment is created, so the image may be cached.
func (d *dash) serveQR(w http.ResponseWriter, r *http.Request) {
	p, err := d.srv.Payment(r.PathValue("id"))
	if err != nil || p.PayQRCodeURI == "" {
		http.NotFound(w, r)
		return
	}
	code, err := qr.Encode(p.PayQRCodeURI, qr.M)
	if err != nil {
		http.Error(w, "payQrCodeUri is too long for a QR code", http.StatusUnprocessableEntity)
		return
	}
	code.Scale = qrScale
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(code.PNG())
}
